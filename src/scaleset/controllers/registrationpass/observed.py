"""What one registration pass sees, frozen: the scale set, its runners (read before GitHub was
asked), the names of its runners read after, GitHub's registrations with our name prefix, and
the per-id confirmations. ``plan`` decides on these and nothing else.

The order of the reads is the safety argument (L6):

1. our runners are listed first: a runner with a runner id in this list was registered before
   the pass began, so its absence from GitHub's list cannot be a registration still on its way;
2. GitHub's REST runners list (every page, or an error: the client never returns a partial list);
3. our runners are listed again: an EphemeralRunner is created before its registration, so a
   registration in GitHub's list whose name is in neither read has no EphemeralRunner;
4. each candidate is confirmed by id with the Actions service: a missing registration must
   answer RunnerNotFound, and a registration without an ER must name our scale set id (the
   REST list carries no scale set id, and a second cluster may use the same scale set name and
   so the same name prefix).

Any error in 2–4 ends the pass before ``plan``: nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scaleset.api import RunnerState


@dataclass(frozen=True)
class RunnerView:
    """One EphemeralRunner of the set, from the read made before GitHub was asked."""

    name: str
    uid: str
    resource_version: str
    created: float | None
    """Creation time, unix seconds (``None`` when the server gave none)."""
    state: RunnerState
    runner_id: int = 0
    has_job: bool = False
    """A job is recorded (``jobId``/``jobRequestId``) and no completion: the job may be live."""
    pod_running: bool = False
    job_id: str = ""
    """The recorded job's ``jobId`` ("" when only ``jobRequestId`` is set)."""
    workflow_run_id: int = 0
    """The recorded job's ``workflowRunId`` (0: none)."""

    @property
    def live_job(self) -> bool:
        return self.has_job or self.state is RunnerState.BUSY


@dataclass(frozen=True)
class Registration:
    """A registration from GitHub's REST runners list whose name carries our prefix."""

    id: int
    name: str
    online: bool
    busy: bool


@dataclass(frozen=True)
class Observed:
    """Everything one pass decides on."""

    namespace: str
    set_name: str
    scale_set_id: int
    prefix: str
    now: float
    """The clock's unix time when the pass began."""
    runners: tuple[RunnerView, ...]
    names_after: frozenset[str]
    """Names of the set's EphemeralRunners read after GitHub's list (step 3)."""
    registrations: tuple[Registration, ...]
    missing: frozenset[int] = frozenset()
    """Runner ids that answered RunnerNotFound (step 4)."""
    scale_set_of: Mapping[int, int] = field(default_factory=dict)
    """Registration id → scale set id, for the registrations without an ER (step 4)."""
    offline_since: Mapping[str, float] = field(default_factory=dict)
    """Runner uid → unix time a pass first saw its registration offline (the runner's
    ``scaleset.dev/offline-since`` annotation, so it survives a restart)."""

    def registration(self, runner_id: int) -> Registration | None:
        return next((r for r in self.registrations if r.id == runner_id), None)
