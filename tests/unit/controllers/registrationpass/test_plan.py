"""The registration pass's decision table (pure): each rule, its guards, the cap."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleset.api import RunnerState
from scaleset.controllers.decisions import notes_of
from scaleset.controllers.registrationpass.actions import (
    DeleteMissing,
    DeletionCapReached,
    ForgetOffline,
    InferCompletion,
    NoteOffline,
    RemoveOrphan,
    ReplaceOffline,
    Retire,
    RunnerTarget,
)
from scaleset.controllers.registrationpass.observed import Observed, Registration, RunnerView
from scaleset.controllers.registrationpass.plan import plan
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.controllers.registrationpass.setup import ENVIRONMENT

PREFIX = "arc-runner-"
NOW = 100_000.0


def runner(
    name: str,
    runner_id: int = 1,
    *,
    state: RunnerState = RunnerState.IDLE,
    has_job: bool = False,
    pod_running: bool = True,
    created: float = NOW - 60,
    job_id: str = "",
    workflow_run_id: int = 0,
) -> RunnerView:
    return RunnerView(
        f"{PREFIX}{name}",
        f"uid-{name}",
        "1",
        created,
        state,
        runner_id,
        has_job,
        pod_running,
        job_id,
        workflow_run_id,
    )


def observed(*runners: RunnerView, **fields: object) -> Observed:
    defaults: dict[str, object] = {
        "namespace": "ns",
        "set_name": "arc",
        "scale_set_id": 5,
        "prefix": PREFIX,
        "now": NOW,
        "runners": runners,
        "names_after": frozenset(r.name for r in runners),
        "registrations": (),
    }
    return Observed(**{**defaults, **fields})  # type: ignore[arg-type]


def test_L6_missing_registration_without_job_is_deleted() -> None:
    [action] = plan(observed(runner("a", 7), missing=frozenset({7})), Settings())
    assert isinstance(action, DeleteMissing)
    assert action.runner.name == f"{PREFIX}a"


@pytest.mark.parametrize(
    "view",
    [
        # busy without job fields: a completion is recorded already (L4 ends it) or only the
        # phase says Running; nothing to infer a completion from
        runner("busy", 7, state=RunnerState.BUSY),
        runner("del", 7, state=RunnerState.DELETING, has_job=True, job_id="j"),
        runner("end", 7, state=RunnerState.TERMINAL, has_job=True, job_id="j"),
        RunnerView("other-name", "u", "1", NOW, RunnerState.IDLE, 7),
        RunnerView("other-job", "u", "1", NOW, RunnerState.BUSY, 7, True, True, "j", 9),
    ],
)
def test_L6_missing_registration_is_kept_busy_without_job_fields_deleting_terminal_or_foreign(
    view: RunnerView,
) -> None:
    assert plan(observed(view, missing=frozenset({7})), Settings()) == []


@pytest.mark.parametrize("state", [RunnerState.BUSY, RunnerState.IDLE])
def test_L6_missing_registration_with_a_job_gets_an_inferred_completion_not_a_deletion(
    state: RunnerState,
) -> None:
    """Problem 4 of the soak: the JobCompleted of a hung runner's job was dropped by GitHub with
    an expired session; its registration is gone. The pass never deletes a runner with a job:
    it records the completion from the runner's own job fields, and L4 ends the runner."""
    view = runner("job", 7, state=state, has_job=True, job_id="j7", workflow_run_id=90)
    assert plan(observed(view, missing=frozenset({7})), Settings()) == [
        InferCompletion(RunnerTarget(view.name, view.uid, "1", 7), "j7", 90, NOW)
    ]


def test_L6_a_runner_with_a_job_whose_registration_is_listed_gets_no_completion() -> None:
    view = runner("job", 7, state=RunnerState.BUSY, has_job=True, job_id="j7")
    listed = (Registration(7, view.name, True, True),)
    assert plan(observed(view, registrations=listed), Settings()) == []


def test_L6_orphan_needs_our_prefix_our_scale_set_and_no_runner() -> None:
    registrations = (
        Registration(1, f"{PREFIX}orphan", False, False),
        Registration(2, f"{PREFIX}theirs", False, False),
        Registration(3, "someone-else", False, False),
        Registration(4, f"{PREFIX}late", False, False),
        Registration(5, f"{PREFIX}busy", True, True),
    )
    actions = plan(
        observed(
            registrations=registrations,
            names_after=frozenset({f"{PREFIX}late"}),
            scale_set_of={1: 5, 2: 6, 3: 5, 4: 5, 5: 5},
        ),
        Settings(),
    )
    assert actions == [RemoveOrphan(1, f"{PREFIX}orphan", 5)]


def test_L6_unconfirmed_orphan_is_kept() -> None:
    registration = Registration(1, f"{PREFIX}orphan", False, False)
    assert plan(observed(registrations=(registration,)), Settings()) == []


def test_offline_is_noted_then_replaced_after_the_bound_then_forgotten_when_online() -> None:
    view = runner("a", 7)
    offline = (Registration(7, view.name, False, False),)
    assert plan(observed(view, registrations=offline), Settings()) == [NoteOffline(view.uid, NOW)]
    early = observed(view, registrations=offline, offline_since={view.uid: NOW - 599})
    assert plan(early, Settings(offline_bound=600)) == []
    late = observed(view, registrations=offline, offline_since={view.uid: NOW - 600})
    [action] = plan(late, Settings(offline_bound=600))
    assert isinstance(action, ReplaceOffline)
    online = (Registration(7, view.name, True, False),)
    back = observed(view, registrations=online, offline_since={view.uid: NOW - 600})
    assert plan(back, Settings()) == [ForgetOffline(view.uid)]


def test_offline_needs_a_running_pod_and_no_job() -> None:
    for view in (runner("a", 7, pod_running=False), runner("b", 7, has_job=True)):
        offline = (Registration(7, view.name, False, False),)
        since = {view.uid: NOW - 10**6}
        actions = plan(observed(view, registrations=offline, offline_since=since), Settings())
        assert not any(isinstance(a, ReplaceOffline) for a in actions)


def test_age_retires_only_idle_runners_and_is_off_by_default() -> None:
    old = NOW - 7200
    idle = runner("idle", 1, created=old)
    busy = runner("busy", 2, state=RunnerState.BUSY, has_job=True, created=old)
    listed_busy = runner("listed", 3, created=old)
    starting = runner("starting", 4, state=RunnerState.STARTING, created=old)
    registrations = (
        Registration(1, idle.name, True, False),
        Registration(2, busy.name, True, True),
        Registration(3, listed_busy.name, True, True),
        Registration(4, starting.name, True, False),
    )
    world = observed(idle, busy, listed_busy, starting, registrations=registrations)
    assert plan(world, Settings()) == []
    [action] = plan(world, Settings(max_runner_age=3600))
    assert isinstance(action, Retire)
    assert action.runner.name == idle.name


def test_L6_inferred_completions_count_against_the_cap() -> None:
    gone = runner("a", 10)
    jobs = [runner(f"j{i}", 20 + i, has_job=True, job_id=f"j{i}") for i in range(2)]
    world = observed(gone, *jobs, missing=frozenset({10, 20, 21}))
    actions = plan(world, Settings(max_deletions=2))
    assert [type(a) for a in actions] == [DeleteMissing, InferCompletion, DeletionCapReached]
    assert actions[-1] == DeletionCapReached((jobs[1].name,), 2)


def test_L6_the_cap_holds_and_names_what_waits() -> None:
    views = [runner(f"m{i}", 10 + i) for i in range(4)]
    world = observed(*views, missing=frozenset(range(10, 14)))
    actions = plan(world, Settings(max_deletions=3))
    assert [type(a) for a in actions] == [DeleteMissing] * 3 + [DeletionCapReached]
    assert plan(world, Settings(max_deletions=0))[0] == DeletionCapReached(
        tuple(v.name for v in views), 0
    )


@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(RunnerState)),
            st.booleans(),
            st.booleans(),
            st.booleans(),
            st.booleans(),
        ),
        max_size=8,
    ),
    st.integers(min_value=0, max_value=5),
)
def test_L6_never_deletes_a_runner_with_a_job_and_never_more_than_the_cap(
    rows: list[tuple[RunnerState, bool, bool, bool, bool]], cap: int
) -> None:
    views = []
    registrations = []
    missing = set()
    for index, (state, has_job, gone, online, pod) in enumerate(rows):
        view = runner(
            f"r{index}",
            index + 1,
            state=state,
            has_job=has_job,
            pod_running=pod,
            created=NOW - 10**6,
        )
        views.append(view)
        if gone:
            missing.add(index + 1)
        else:
            registrations.append(Registration(index + 1, view.name, online, has_job))
    world = observed(
        *views,
        registrations=tuple(registrations),
        missing=frozenset(missing),
        offline_since={v.uid: 0.0 for v in views},
    )
    actions = plan(world, Settings(max_deletions=cap, max_runner_age=1.0))
    deletions = [a for a in actions if isinstance(a, DeleteMissing | ReplaceOffline | Retire)]
    inferred = [a for a in actions if isinstance(a, InferCompletion)]
    assert len(deletions) + len(inferred) <= cap
    by_name = {v.name: v for v in views}
    for deletion in deletions:
        view = by_name[deletion.runner.name]
        assert not view.has_job
        assert view.state not in (RunnerState.BUSY, RunnerState.DELETING, RunnerState.TERMINAL)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(RunnerState)),
            st.booleans(),
            st.booleans(),
            st.booleans(),
            st.sampled_from(["", "job-1", "job-2"]),
            st.integers(min_value=0, max_value=3),
        ),
        max_size=8,
    ),
    st.integers(min_value=0, max_value=5),
)
def test_L6_a_runner_with_a_job_and_no_registration_ends_by_an_inferred_completion_only(
    rows: list[tuple[RunnerState, bool, bool, bool, str, int]], cap: int
) -> None:
    """Whatever the mix: a runner with a live job is never deleted; one of ours with job fields
    whose registration answered RunnerNotFound, neither deleted nor terminal, gets a completion
    copied from its own job fields — or is named as left for the next pass by the cap."""
    views = []
    missing = set()
    for index, (state, has_job, gone, ours, job_id, run) in enumerate(rows):
        view = RunnerView(
            f"{PREFIX if ours else 'other-'}r{index}",
            f"uid-{index}",
            "1",
            NOW - 10**6,
            state,
            index + 1,
            has_job,
            True,
            job_id,
            run,
        )
        views.append(view)
        if gone:
            missing.add(index + 1)
    world = observed(*views, missing=frozenset(missing))
    actions = plan(world, Settings(max_deletions=cap))
    deleted = {a.runner.name for a in actions if isinstance(a, DeleteMissing)}
    inferred = {a.runner.name: a for a in actions if isinstance(a, InferCompletion)}
    deferred = {name for a in actions if isinstance(a, DeletionCapReached) for name in a.deferred}
    for view in views:
        due = (
            view.name.startswith(PREFIX)
            and view.runner_id in missing
            and view.has_job
            and view.state not in (RunnerState.DELETING, RunnerState.TERMINAL)
        )
        if view.live_job:
            assert view.name not in deleted
        if not due:
            assert view.name not in inferred
            continue
        assert (view.name in inferred) != (view.name in deferred)
        if view.name in inferred:
            action = inferred[view.name]
            assert action.runner == RunnerTarget(view.name, view.uid, "1", view.runner_id)
            assert (action.job_id, action.workflow_run_id) == (view.job_id, view.workflow_run_id)
            assert action.finish_time == NOW


def test_settings_from_the_environment() -> None:
    assert ENVIRONMENT.read({}) == Settings()
    settings = ENVIRONMENT.read(
        {
            "SCALESET_REGISTRATION_PASS_INTERVAL": "60",
            "SCALESET_REGISTRATION_PASS_MAX_DELETIONS": "3",
            "SCALESET_RUNNER_OFFLINE_BOUND": "120",
            "SCALESET_MAX_RUNNER_AGE": "86400",
        }
    )
    assert settings == Settings(60, 3, 120, 86400)
    with pytest.raises(ValueError, match="SCALESET_REGISTRATION_PASS_INTERVAL"):
        ENVIRONMENT.read({"SCALESET_REGISTRATION_PASS_INTERVAL": "soon"})
    for variable, text in (
        ("SCALESET_REGISTRATION_PASS_INTERVAL", "0"),
        ("SCALESET_RUNNER_OFFLINE_BOUND", "-5"),
        ("SCALESET_REGISTRATION_PASS_MAX_DELETIONS", "-1"),
        ("SCALESET_MAX_RUNNER_AGE", "nan"),
    ):
        with pytest.raises(ValueError, match=variable):
            ENVIRONMENT.read({variable: text})
    assert ENVIRONMENT.read({"SCALESET_MAX_RUNNER_AGE": "0"}).max_runner_age is None
    with pytest.raises(ValueError, match="whole"):
        ENVIRONMENT.read({"SCALESET_REGISTRATION_PASS_MAX_DELETIONS": "2.5"})


def test_each_action_carried_out_is_told_by_a_note_and_the_memory_is_not() -> None:
    target = RunnerTarget(f"{PREFIX}a", "uid-a", "1", 7)
    notes = {
        type(action).__name__: action.note
        for action in (
            DeleteMissing(target),
            InferCompletion(target, "job-1", 9, NOW),
            ReplaceOffline(target, 601.0),
            Retire(target, 4000.0, 3600.0),
            RemoveOrphan(8, f"{PREFIX}b", 42, recorded_id=7),
            DeletionCapReached((f"{PREFIX}c",), 2),
        )
    }
    assert {name: (n.reason, n.warning) for name, n in notes.items() if n is not None} == {
        "DeleteMissing": ("RegistrationMissing", True),
        "InferCompletion": ("JobCompletionInferred", True),
        "ReplaceOffline": ("RunnerOffline", True),
        "Retire": ("RunnerRetired", False),
        "RemoveOrphan": ("OrphanRegistration", False),
        "DeletionCapReached": ("DeletionCapReached", True),
    }
    assert "maximum runner age 3600s" in str(notes["Retire"])
    assert "of scale set 42" in str(notes["RemoveOrphan"])
    assert "records runner id 7" in str(notes["RemoveOrphan"])
    assert "deletion cap 2 reached" in str(notes["DeletionCapReached"])
    assert f"{PREFIX}c" in str(notes["DeletionCapReached"])
    assert notes_of(NoteOffline("uid-a", NOW)) == ()
    assert notes_of(ForgetOffline("uid-a")) == ()
