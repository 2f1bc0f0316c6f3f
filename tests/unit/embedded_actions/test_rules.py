"""The fake service's pure rules: job routing (labels, scope specificity, capacity) and
statistics from jobs and runners."""

from __future__ import annotations

import pytest

from scaleset.embedded.actions.model import (
    Job,
    JobEventKind,
    JobState,
    Label,
    Runner,
    ScaleSet,
    Scope,
    ScopeKind,
)
from scaleset.embedded.actions.rules import compute_statistics, job_event, route_job

ORG = Scope(ScopeKind.ORGANIZATION, "acme")
REPO = Scope(ScopeKind.REPOSITORY, "acme", "app")
ENTERPRISE = Scope(ScopeKind.ENTERPRISE, "ent")


def job(*labels: str, owner: str = "acme", enterprise: str | None = "ent", **kw: object) -> Job:
    fields: dict[str, object] = {
        "id": 1,
        "job_id": "g",
        "labels": labels,
        "owner": owner,
        "repository": "app",
        "enterprise": enterprise,
        "workflow_ref": "w",
        "display_name": "d",
        "event_name": "push",
        "workflow_run_id": 1,
        "duration_seconds": 0.0,
        "planned_result": "success",
        "queue_time": 0.0,
    }
    fields.update(kw)
    return Job(**fields)  # type: ignore[arg-type]


def scale_set(set_id: int, *labels: str, capacity: int | None = None) -> ScaleSet:
    return ScaleSet(
        set_id,
        1,
        f"s{set_id}",
        1,
        [Label(x, "System") for x in labels],
        {},
        0.0,
        max_capacity=capacity,
    )


def test_most_specific_scope_wins_then_lowest_id() -> None:
    sets = [
        (scale_set(1, "arc"), ENTERPRISE),
        (scale_set(2, "arc"), ORG),
        (scale_set(3, "arc"), REPO),
        (scale_set(4, "arc"), REPO),
    ]
    assert route_job(job("arc"), sets, {}).scale_set.id == 3  # type: ignore[union-attr]
    assert route_job(job("arc"), sets[:2], {}).scale_set.id == 2  # type: ignore[union-attr]
    assert route_job(job("arc"), sets[:1], {}).scale_set.id == 1  # type: ignore[union-attr]
    assert route_job(job("arc", enterprise=None), sets[:1], {}).scale_set is None


def test_all_job_labels_must_be_scale_set_labels() -> None:
    sets = [(scale_set(1, "linux", "X64"), ORG)]
    assert route_job(job("LINUX", "x64"), sets, {}).scale_set is not None
    assert route_job(job("linux", "gpu"), sets, {}).scale_set is None
    assert route_job(job("linux", owner="other"), sets, {}).scale_set is None


@pytest.mark.parametrize(("in_flight", "routed"), [(1, True), (2, False)])
def test_capacity_holds_jobs_back(in_flight: int, routed: bool) -> None:
    routing = route_job(job("arc"), [(scale_set(1, "arc", capacity=2), ORG)], {1: in_flight})
    assert (routing.scale_set is not None) is routed
    assert routing.held_by_capacity is not routed


def test_statistics_from_jobs_and_runners() -> None:
    jobs = [job("a", state=s, acquired=s is JobState.ASSIGNED) for s in JobState]
    runners = [
        Runner(1, 1, 1, "r1", "", 0.0, "d", job_request_id=5),
        Runner(2, 1, 1, "r2", "", 0.0, "d"),
        Runner(3, 1, 1, "r3", "", 0.0, "d", removed_at=1.0),
    ]
    stats = compute_statistics(jobs, runners)
    assert stats.total_available_jobs == 1
    assert stats.total_assigned_jobs == 3  # assigned, dispatched, running
    assert stats.total_running_jobs == 1
    assert stats.total_acquired_jobs == 1
    assert (stats.total_registered_runners, stats.total_busy_runners, stats.total_idle_runners) == (
        2,
        1,
        1,
    )


def test_job_events_carry_runner_fields_only_when_they_should() -> None:
    running = job("arc", scale_set_id=1, runner_id=9, runner_name="r9", result="success")
    assigned = job_event(running, JobEventKind.ASSIGNED)
    assert (assigned.runner_id, assigned.runner_name, assigned.result) == (0, "", "")
    completed = job_event(running, JobEventKind.COMPLETED)
    assert (completed.runner_id, completed.runner_name, completed.result) == (9, "r9", "success")
    with pytest.raises(ValueError, match="scale set"):
        job_event(job("arc"), JobEventKind.ASSIGNED)
