"""Embedded stand-ins for GitHub, Kubernetes and nodes; used by tests and the demo only."""
