"""scaleset: autoscales ephemeral GitHub Actions runners on Kubernetes.

A drop-in replacement for actions-runner-controller's runner scale sets (same CRDs, Helm values
and GitHub protocol) that keeps the runner lifecycle rules of ``docs/lifecycle.md`` (L0–L10).
"""

__version__ = "0.1.0"
