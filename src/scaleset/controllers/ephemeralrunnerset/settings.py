"""The EphemeralRunnerSet controller's tunables: the plan's (``PlanSettings``: the failure breaker,
how often busy runners and JIT requests are looked at again, creates per pass, status pacing),
apply's (``ApplySettings``: how many creates and removals are in flight at once), and the
reconciler's own (``Settings``, which holds the other two: when an unseen create is checked,
how long a runner's change waits for its siblings'). Each default here is the one number;
``setup.ENVIRONMENT`` names the variables that override them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PlanSettings:
    """Tunables of the decisions (defaults in brackets are the documented behaviour)."""

    breaker_threshold: int = 5
    """The same failure reason this many times in a row pauses creation."""
    breaker_backoff: tuple[float, ...] = (60.0, 120.0, 300.0, 600.0, 900.0)
    """Pause length by trip (the last repeats)."""
    busy_recheck_seconds: float = 30.0
    """While waiting for busy runners (deleting set), look again this often."""
    jit_wait_seconds: float = 5.0
    """A runner to remove whose JIT request is in flight is looked at again this soon."""
    max_creates: int = 500
    """Creates per pass (ReplicaSet's burstReplicas); more follow in the next pass at once."""
    status_interval: float = 1.0
    """A status write that only moves counts comes at least this long after this process's
    previous write of the set's status (conditions and memory are written at once)."""


@dataclass(frozen=True)
class ApplySettings:
    """How hard ``apply`` pushes."""

    max_concurrent_creates: int = 64
    """Creates in flight at once (slow start grows to this); the client's QPS bounds it too."""
    max_concurrent_removals: int = 16
    """L3 removals (GitHub + API calls) in flight at once."""
    jit_settle_seconds: float = 120.0


@dataclass(frozen=True)
class Settings:
    """Tunables of the controller: the plan's, apply's, and when an unseen create is checked."""

    plan: PlanSettings = field(default_factory=PlanSettings)
    apply: ApplySettings = field(default_factory=ApplySettings)
    verify_unseen_after: float = 10.0
    """A created runner the cache has not shown for this long is checked with a GET."""
    runner_event_delay: float = 0.1
    """A change of a set's runner queues the set this long after it, so the changes meanwhile
    come to one pass (a pass walks every runner of the set: at scale-up, one pass per change
    made the passes quadratic in the runners); a change of the set itself is not delayed."""
