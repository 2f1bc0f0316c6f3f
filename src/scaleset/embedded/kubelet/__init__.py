"""The simulated kubelet: pods scheduled, run and reported in the real shapes (tests and demo).

Works against the embedded API server and a real kube-apiserver alike (only the API is used)::

    from scaleset.embedded.kubelet import SimulatedKubelet, ContainerRuntime, exit_after

    async with SimulatedKubelet(client, nodes=["sim-node-1"], namespaces=[ns],
                                label_selector="actions-ephemeral-runner=True",
                                clock=manual_clock) as kubelet:
        ...                                   # pods matching the selector get bound and run
        await kubelet.evict(ns, "runner-abc")  # or oom_kill / exit / vanish / hang / freeze
        kubelet.truth(ns, "runner-abc")        # what the node knows (ground truth)

- ``SimulatedKubelet`` (``_kubelet``): watching, binding, the test API, ground truth.
- ``ContainerRuntime`` and programs (``programs``): image pattern -> async program;
  ``until_stopped``, ``exit_after``; the simulated runner via ``runner_program`` and
  ``default_runtime`` (``ghcr.io/actions/actions-runner:*`` runs it).
- ``PodScript`` and the ``scaleset.dev/sim-*`` annotations (``directives``).
- The pure status shapes (``status``) and env/volume resolution (``config``).
"""

from scaleset.embedded.kubelet._kubelet import SimulatedKubelet, UnknownPod
from scaleset.embedded.kubelet._worker import (
    ContainerTruth,
    KubeletSettings,
    PodTruth,
    RejectedWrite,
)
from scaleset.embedded.kubelet.directives import DirectiveError, ExitDirective, PodScript
from scaleset.embedded.kubelet.programs import (
    ContainerRun,
    ContainerRuntime,
    Program,
    exit_after,
    until_stopped,
)
from scaleset.embedded.kubelet.runner_program import (
    RUNNER_IMAGES,
    default_runtime,
    runner_program,
)

__all__ = [
    "RUNNER_IMAGES",
    "ContainerRun",
    "ContainerRuntime",
    "ContainerTruth",
    "DirectiveError",
    "ExitDirective",
    "KubeletSettings",
    "PodScript",
    "PodTruth",
    "Program",
    "RejectedWrite",
    "SimulatedKubelet",
    "UnknownPod",
    "default_runtime",
    "exit_after",
    "runner_program",
    "until_stopped",
]
