"""What the doctor read, as raw JSON objects (the way ARC or scaleset wrote them): the pure
checks decide on this and nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scaleset.doctor.github_hosts import GitHubHosts

JsonObject = Mapping[str, Any]


@dataclass(frozen=True)
class Thresholds:
    """How old is too old (seconds)."""

    pod_newer_than_runner: float = 300.0
    """A runner pod created this much later than its EphemeralRunner was recreated (#4588)."""
    running_without_job: float = 600.0
    deleting: float = 600.0
    idle_age: float = 86400.0
    listener_restarts: int = 3
    pod_missing: float = 60.0
    """A Running or Pending runner without its pod for this long (ARC #4588)."""
    settling: float = 120.0
    """How long a new scale set, listener or controller pod may take to get its listener,
    listener pod or lease."""
    lease_grace: float = 30.0
    """Past a Lease's duration, how much longer without a renewal means nobody leads (room for
    clock skew between the doctor and the cluster)."""


@dataclass(frozen=True)
class Inventory:
    now: datetime
    runners: tuple[JsonObject, ...] = ()
    runner_pods: tuple[JsonObject, ...] = ()
    runner_sets: tuple[JsonObject, ...] = ()
    scale_sets: tuple[JsonObject, ...] = ()
    """AutoscalingRunnerSets."""
    listeners: tuple[JsonObject, ...] = ()
    """AutoscalingListeners of the scale sets looked at (they live in the controller's
    namespace, so they are listed everywhere and kept by the namespace they serve)."""
    listener_pods: tuple[JsonObject, ...] = ()
    controller_pods: tuple[JsonObject, ...] = ()
    """Pods labelled ``app.kubernetes.io/part-of=gha-rs-controller`` (ARC's and scaleset's
    controller), in every namespace."""
    leases: Mapping[tuple[str, str], JsonObject | None] = field(default_factory=dict)
    """(namespace, name) → the controllers' leader-election Lease, ``None`` when missing."""
    crds: Mapping[str, JsonObject | None] = field(default_factory=dict)
    """CRD name → the installed CRD, or ``None`` when it is not installed."""
    registered_ids: Mapping[str, frozenset[int]] | None = None
    """githubConfigUrl → the runner ids GitHub lists; ``None`` when GitHub was not asked."""
    github_hosts: GitHubHosts = field(default_factory=GitHubHosts)
    """Where a GitHub credential may go (``github_hosts``)."""
