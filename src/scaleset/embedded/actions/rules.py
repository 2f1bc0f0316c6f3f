"""Pure rules of the fake Actions service: statistics, job routing, job-event snapshots.

No state and no clock: ``ActionsService`` hands these functions the records they judge. Keeping
them here makes the rules the ledger cites readable in one place and testable alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scaleset.embedded.actions.model import (
    ACTIVE_JOB_STATES,
    Job,
    JobEvent,
    JobEventKind,
    JobState,
    Runner,
    ScaleSet,
    Scope,
    ScopeKind,
)


@dataclass(frozen=True)
class Statistics:
    """``RunnerScaleSetStatistic`` (spec §2.4)."""

    total_available_jobs: int = 0
    total_acquired_jobs: int = 0
    total_assigned_jobs: int = 0
    total_running_jobs: int = 0
    total_registered_runners: int = 0
    total_busy_runners: int = 0
    total_idle_runners: int = 0


def compute_statistics(jobs: Iterable[Job], runners: Iterable[Runner]) -> Statistics:
    """Statistics of one scale set from its jobs and its live registrations (spec §2.4, §6.1:
    assigned counts waiting, dispatched and running jobs, so assigned >= running; every live
    registration is busy or idle)."""
    job_list = list(jobs)
    registered = [r for r in runners if r.registered]
    busy = sum(1 for r in registered if r.busy)
    return Statistics(
        total_available_jobs=sum(1 for j in job_list if j.state is JobState.AVAILABLE),
        total_acquired_jobs=sum(1 for j in job_list if j.acquired and j.state in ACTIVE_JOB_STATES),
        total_assigned_jobs=sum(1 for j in job_list if j.state in ACTIVE_JOB_STATES),
        total_running_jobs=sum(1 for j in job_list if j.state is JobState.RUNNING),
        total_registered_runners=len(registered),
        total_busy_runners=busy,
        total_idle_runners=len(registered) - busy,
    )


def _norm(value: str) -> str:
    return value.casefold()


def scope_rank(scope: Scope, job: Job) -> int | None:
    """How specifically a scale set's scope holds a job's repository: 0 repository,
    1 organization, 2 enterprise; ``None`` when it does not hold it."""
    if scope.kind is ScopeKind.REPOSITORY:
        same_owner = _norm(scope.owner) == _norm(job.owner)
        return 0 if same_owner and _norm(scope.repository) == _norm(job.repository) else None
    if scope.kind is ScopeKind.ORGANIZATION:
        return 1 if _norm(scope.owner) == _norm(job.owner) else None
    if job.enterprise is not None and _norm(scope.owner) == _norm(job.enterprise):
        return 2
    return None


def labels_match(job: Job, scale_set: ScaleSet) -> bool:
    """Every ``runs-on`` label of the job is a label of the scale set (case-insensitive)."""
    return {_norm(label) for label in job.labels} <= {_norm(lbl.name) for lbl in scale_set.labels}


@dataclass(frozen=True)
class Routing:
    scale_set: ScaleSet | None
    held_by_capacity: bool
    """A matching scale set existed but had no room under its max capacity."""


def route_job(
    job: Job,
    scale_sets: Iterable[tuple[ScaleSet, Scope]],
    in_flight: Mapping[int, int],
) -> Routing:
    """The scale set a queued job goes to (ledger A-JOB-MATCHING, A-CAPACITY-RULE): labels
    match, the scope holds the repository, and ``in_flight`` (jobs offered, assigned or running
    per scale set id) is below its max capacity. Most specific scope first, then lowest id."""
    best: tuple[int, int, ScaleSet] | None = None
    held = False
    for scale_set, scope in scale_sets:
        rank = scope_rank(scope, job)
        if rank is None or not labels_match(job, scale_set):
            continue
        capacity = scale_set.max_capacity
        if capacity is not None and in_flight.get(scale_set.id, 0) >= capacity:
            held = True
            continue
        if best is None or (rank, scale_set.id) < best[:2]:
            best = (rank, scale_set.id, scale_set)
    return Routing(None if best is None else best[2], held and best is None)


def job_event(job: Job, kind: JobEventKind) -> JobEvent:
    """A job message as of now; runner fields only on JobStarted/JobCompleted, the result
    only on JobCompleted (spec §4.5)."""
    if job.scale_set_id is None:
        raise ValueError("a job event needs the job's scale set")
    with_runner = kind in (JobEventKind.STARTED, JobEventKind.COMPLETED)
    return JobEvent(
        kind=kind,
        runner_request_id=job.id,
        job_id=job.job_id,
        owner=job.owner,
        repository=job.repository,
        workflow_ref=job.workflow_ref,
        display_name=job.display_name,
        workflow_run_id=job.workflow_run_id,
        event_name=job.event_name,
        labels=job.labels,
        scale_set_id=job.scale_set_id,
        queue_time=job.queue_time,
        scale_set_assign_time=job.scale_set_assign_time,
        runner_assign_time=job.runner_assign_time,
        finish_time=job.finish_time,
        runner_id=(job.runner_id or 0) if with_runner else 0,
        runner_name=job.runner_name if with_runner else "",
        result=(job.result or "") if kind is JobEventKind.COMPLETED else "",
    )


def version_below(version: str, minimum: str) -> bool:
    """``2.335.1`` < ``2.336.0``, compared number by number; a version that does not parse is
    below any minimum (a runner that cannot say its version is not trusted to be current)."""
    try:
        have = tuple(int(part) for part in version.strip().lstrip("v").split("."))
        need = tuple(int(part) for part in minimum.strip().lstrip("v").split("."))
    except ValueError:
        return True
    return have < need
