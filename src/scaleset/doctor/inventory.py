"""What the doctor read, as raw JSON objects (the way ARC or scaleset wrote them): the pure
checks decide on this and nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

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


@dataclass(frozen=True)
class Inventory:
    now: datetime
    runners: tuple[JsonObject, ...] = ()
    runner_pods: tuple[JsonObject, ...] = ()
    runner_sets: tuple[JsonObject, ...] = ()
    listeners: tuple[JsonObject, ...] = ()
    listener_pods: tuple[JsonObject, ...] = ()
    crds: Mapping[str, JsonObject | None] = field(default_factory=dict)
    """CRD name → the installed CRD, or ``None`` when it is not installed."""
    registered_ids: Mapping[str, frozenset[int]] | None = None
    """githubConfigUrl → the runner ids GitHub lists; ``None`` when GitHub was not asked."""
