"""L0: one classifier for runner state; rule precedence deleting > terminal > busy > idle >
starting, and the L1 takeover rule (ARC's Running-without-job counts as idle)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.api.arc_facts import FIXTURES, load_fixture

from scaleset.api import (
    EphemeralRunner,
    EphemeralRunnerStatus,
    JobCompletion,
    ObjectMeta,
    RunnerPhase,
    RunnerState,
    classify,
    count_states,
    load,
)

T0 = datetime(2026, 5, 30, 12, 0, tzinfo=UTC)
PHASES = ["", "Pending", "Running", "Succeeded", "Failed", "Outdated", "Unknown"]


@st.composite
def runners(draw: st.DrawFn) -> EphemeralRunner:
    status = EphemeralRunnerStatus(
        phase=draw(st.sampled_from(PHASES)),
        ready=draw(st.booleans()),
        job_id=draw(st.sampled_from(["", "job-1"])),
        job_request_id=draw(st.sampled_from([0, 17])),
        job_completion=draw(st.none() | st.just(JobCompletion(result="succeeded"))),
        runner_started_at=draw(st.none() | st.just(T0)),
        runner_id=draw(st.sampled_from([0, 42])),
    )
    deletion = draw(st.none() | st.just(T0))
    return EphemeralRunner(
        metadata=ObjectMeta(name="r", deletion_timestamp=deletion), status=status
    )


def has_job(er: EphemeralRunner) -> bool:
    s = er.status
    return bool(s.job_id) or s.job_request_id != 0 or s.job_completion is not None


def runs(er: EphemeralRunner) -> bool:
    s = er.status
    return s.ready or s.runner_started_at is not None or s.phase == "Running"


@settings(max_examples=60)
@given(runners())
def test_L0_deleting_wins_over_everything(er: EphemeralRunner) -> None:
    if er.metadata.deletion_timestamp is not None:
        assert classify(er) is RunnerState.DELETING
    else:
        assert classify(er) is not RunnerState.DELETING


@settings(max_examples=60)
@given(runners())
def test_L0_terminal_phases_are_terminal_unless_deleting(er: EphemeralRunner) -> None:
    if er.metadata.deletion_timestamp is None and er.status.phase in {
        "Failed",
        "Succeeded",
        "Outdated",
    }:
        assert classify(er) is RunnerState.TERMINAL


@settings(max_examples=60)
@given(runners())
def test_L0_the_full_decision_table(er: EphemeralRunner) -> None:
    if er.metadata.deletion_timestamp is not None:
        expected = RunnerState.DELETING
    elif er.status.phase in ("Failed", "Succeeded", "Outdated"):
        expected = RunnerState.TERMINAL
    elif has_job(er):
        expected = RunnerState.BUSY
    elif runs(er):
        expected = RunnerState.IDLE
    else:
        expected = RunnerState.STARTING
    assert classify(er) is expected


@settings(max_examples=60)
@given(runners())
def test_L0_a_job_makes_a_live_runner_busy(er: EphemeralRunner) -> None:
    if classify(er) in (RunnerState.STARTING, RunnerState.IDLE):
        er.status.job_id = "job-9"
        assert classify(er) is RunnerState.BUSY


@settings(max_examples=60)
@given(runners())
def test_L0_starting_means_no_evidence_of_a_running_runner(er: EphemeralRunner) -> None:
    if classify(er) is RunnerState.STARTING:
        assert not er.status.ready
        assert er.status.runner_started_at is None
        assert er.status.phase != "Running"
        assert not has_job(er)


def test_L1_takeover_running_without_job_is_idle() -> None:
    er = EphemeralRunner(status=EphemeralRunnerStatus(phase=RunnerPhase.RUNNING))
    assert classify(er) is RunnerState.IDLE


def test_idle_under_our_lifecycle_is_pending_and_ready() -> None:
    ready = EphemeralRunner(status=EphemeralRunnerStatus(phase="Pending", ready=True))
    started = EphemeralRunner(status=EphemeralRunnerStatus(phase="Pending", runner_started_at=T0))
    fresh = EphemeralRunner(status=EphemeralRunnerStatus(phase="Pending"))
    assert [classify(ready), classify(started), classify(fresh)] == [
        RunnerState.IDLE,
        RunnerState.IDLE,
        RunnerState.STARTING,
    ]


def test_a_recorded_completion_keeps_the_runner_busy_without_job_fields() -> None:
    status = EphemeralRunnerStatus(ready=True, job_completion=JobCompletion(runner_id=4))
    assert not status.has_job, "lifecycle.md's 'has a job' is the job fields only"
    assert classify(EphemeralRunner(status=status)) is RunnerState.BUSY


def test_fixtures() -> None:
    busy = load(load_fixture(FIXTURES / "ephemeralrunner-arc-busy.yaml"))
    done = load(load_fixture(FIXTURES / "ephemeralrunner-scaleset-completed.yaml"))
    assert isinstance(busy, EphemeralRunner)
    assert isinstance(done, EphemeralRunner)
    assert classify(busy) is RunnerState.BUSY
    assert classify(done) is RunnerState.BUSY


@settings(max_examples=60)
@given(st.lists(runners(), max_size=12))
def test_L0_counts_add_up_and_match_classify(items: list[EphemeralRunner]) -> None:
    counts = count_states(items)
    assert counts.total == len(items)
    for state in RunnerState:
        assert counts.get(state) == sum(1 for er in items if classify(er) is state)
    fields = counts.as_status_fields()
    assert fields.idle_ephemeral_runners == counts.idle
    assert fields.busy_ephemeral_runners == counts.busy
    assert fields.deleting_ephemeral_runners == counts.deleting
