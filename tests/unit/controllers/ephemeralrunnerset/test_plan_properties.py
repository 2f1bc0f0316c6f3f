"""Properties of ``plan`` for any runner set, replicas and patch id (hypothesis).

Runners are generated as raw EphemeralRunner JSON and classified by the real L0 classifier, so
every combination the API server could hold appears: pending runners with a job, runners being
deleted, runner id 0, JIT requests in flight, terminal runners with a job, and a stale cache
(runners created but not yet visible, runners removed but still shown alive).

- **Safety (L3)**: nothing with a job, a job completion or a JIT request in flight is ever
  removed or offered for scale-down; only terminal runners are reaped, after the status write.
- **Bounds**: never more creates than ``replicas`` minus capacity, never a scale-down of more
  than capacity minus ``replicas``, none at all on a positive patch id, on bad input or while
  the set is deleted.
- **Convergence**: replaying the plan against a model world (creates appear, removals vanish,
  JIT requests complete), the set settles within a few passes at ``max(replicas, the runners it
  may not remove)`` with nothing left to do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from tests.unit.controllers.ephemeralrunnerset.builders import NOW

from scaleset.api import (
    EphemeralRunnerSetStatus,
    RunnerState,
    format_kube_time,
    keys,
    to_json,
)
from scaleset.api.ephemeralrunnerset import FailureStreak, FinishedRunner
from scaleset.controllers.ephemeralrunnerset.actions import (
    Action,
    CreateRunner,
    DeleteRunner,
    RemoveRunner,
    ScaleDown,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunnerset.observed import (
    Observed,
    RunnerSetView,
    RunnerView,
    runner_view,
)
from scaleset.controllers.ephemeralrunnerset.plan import plan
from scaleset.controllers.ephemeralrunnerset.settings import PlanSettings
from scaleset.embedded.apiserver._patch import merge_patch
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER

SPEC = {"githubConfigUrl": "https://github.com/acme", "spec": {"containers": [{"name": "runner"}]}}
OLD_SPEC = {"githubConfigUrl": "https://github.com/acme", "spec": {"containers": []}}
SETTLE = 120.0
NO_BREAKER = PlanSettings(breaker_threshold=10_000)
"""Convergence holds while creation is allowed; the breaker is tested on its own."""


@st.composite
def raw_runners(draw: st.DrawFn, index: int) -> dict[str, Any]:
    phase = draw(st.sampled_from(["", "Pending", "Running", "Succeeded", "Failed", "Outdated"]))
    status: dict[str, Any] = {"phase": phase}
    if draw(st.booleans()):
        status["runnerId"] = draw(st.integers(1, 10_000))
    if draw(st.booleans()):
        status["ready"] = True
    if draw(st.integers(0, 3)) == 0:
        status["jobId"] = f"job-{index}"
        status["jobRequestId"] = index + 1
    if draw(st.integers(0, 5)) == 0:
        status["jobCompletion"] = {"result": "succeeded", "runnerName": f"r{index}"}
    if draw(st.integers(0, 4)) == 0:
        status["runnerStartedAt"] = format_kube_time(NOW - timedelta(seconds=30))
    metadata: dict[str, Any] = {
        "name": f"r{index}",
        "namespace": "ns",
        "uid": f"uid-{index}",
        "resourceVersion": "5",
        "creationTimestamp": format_kube_time(
            NOW - timedelta(seconds=draw(st.sampled_from([1, 30, 119, 121, 600, 3600])))
        ),
        "annotations": {keys.PATCH_ID_ANNOTATION: str(draw(st.integers(0, 9)))},
    }
    if draw(st.integers(0, 5)) == 0:
        metadata["deletionTimestamp"] = format_kube_time(NOW)
    spec = SPEC if draw(st.integers(0, 4)) else OLD_SPEC
    return {"metadata": metadata, "spec": spec, "status": status}


@st.composite
def worlds(draw: st.DrawFn) -> Observed:
    count = draw(st.integers(0, 12))
    views = tuple(
        runner_view(
            KubeObject(EPHEMERAL_RUNNER, draw(raw_runners(index))),
            expected_spec=SPEC,
            now=NOW,
            jit_settle_seconds=SETTLE,
        )
        for index in range(count)
    )
    live = [v.name for v in views if v.live]
    in_flight = (
        frozenset(draw(st.lists(st.sampled_from(live), max_size=3))) if live else frozenset()
    )
    last = draw(st.one_of(st.none(), st.integers(0, 20)))
    return Observed(
        runner_set=RunnerSetView(
            namespace="ns",
            name="set",
            uid="uid-set",
            resource_version="9",
            deleting=draw(st.integers(0, 6)) == 0,
            replicas=draw(st.integers(-2, 14)),
            patch_id=draw(st.sampled_from([0, 0, 1, 5, 20])),
            max_runners=draw(st.one_of(st.none(), st.integers(0, 14))),
            spec_hash="h",
            status=EphemeralRunnerSetStatus(last_patch_id=last),
        ),
        runners=views,
        phantoms=draw(st.integers(0, 3)),
        in_flight_deletes=in_flight,
        seen_finished=frozenset(draw(st.lists(st.sampled_from(["gone1", "gone2"]), max_size=2))),
    )


def categories(observed: Observed) -> set[str]:
    found: set[str] = set()
    for r in observed.runners:
        if r.phase in ("", "Pending") and r.has_job and r.state is not RunnerState.DELETING:
            found.add("pending-with-job")
        if r.state is RunnerState.DELETING:
            found.add("deleting")
        if r.runner_id == 0:
            found.add("runner id 0")
        if r.jit_in_flight:
            found.add("JIT in flight")
        if r.phase in ("Failed", "Succeeded", "Outdated") and r.has_job:
            found.add("terminal-with-job")
    if observed.phantoms or observed.in_flight_deletes:
        found.add("stale cache")
    return found


CASES = {
    "pending-with-job",
    "deleting",
    "runner id 0",
    "JIT in flight",
    "terminal-with-job",
    "stale cache",
}


def capacity(observed: Observed) -> int:
    live = [r for r in observed.runners if r.live and r.name not in observed.in_flight_deletes]
    return len(live) + observed.phantoms


def offered(actions: list[Action]) -> list[RunnerView]:
    runners = [a.runner for a in actions if isinstance(a, RemoveRunner)]
    for action in actions:
        if isinstance(action, ScaleDown):
            runners.extend(action.candidates)
    return runners


@settings(max_examples=400, deadline=None)
@given(worlds())
def test_L3_plan_never_picks_a_busy_runner_and_never_exceeds_the_change(
    observed: Observed,
) -> None:
    for case in categories(observed):
        event(case)
    rs = observed.runner_set
    actions = plan(observed, NOW)
    for runner in offered(actions):
        assert not runner.has_job, f"{runner.name} has a job"
        assert not runner.job_completed, f"{runner.name} has a job completion"
        assert not runner.jit_in_flight, f"{runner.name} has a JIT request in flight"
        assert runner.state in (RunnerState.IDLE, RunnerState.STARTING), runner.state
        assert runner.name not in observed.in_flight_deletes
    for action in actions:
        if isinstance(action, ScaleDown):
            starting = [c for c in action.candidates if c.state is RunnerState.STARTING]
            assert all(c.registration_known for c in starting)
            assert rs.patch_id == 0, "scale-down only on a force-state patch"
    reaped = [a.runner for a in actions if isinstance(a, DeleteRunner)]
    assert all(r.state is RunnerState.TERMINAL for r in reaped)
    if reaped:
        kinds = [type(a) for a in actions]
        assert WriteStatus in kinds
        assert kinds.index(WriteStatus) < kinds.index(DeleteRunner)
    creates = sum(1 for a in actions if isinstance(a, CreateRunner))
    down = sum(a.count for a in actions if isinstance(a, ScaleDown))
    assert creates <= max(0, rs.replicas - capacity(observed))
    assert down <= max(0, capacity(observed) - rs.replicas)
    invalid = rs.replicas < 0 or (rs.max_runners is not None and rs.replicas > rs.max_runners)
    if rs.deleting or invalid:
        assert creates == 0
        assert down == 0


def test_the_generators_produce_every_hard_case() -> None:
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(worlds())
    def collect(observed: Observed) -> None:
        cases = categories(observed)
        for case in cases:
            event(case)
        seen.update(cases)

    collect()
    assert seen >= CASES, f"never generated: {CASES - seen}"


# --------------------------------------------------------------------------- convergence


def step(observed: Observed, actions: list[Action], patch_id: int, serial: int) -> Observed:
    """The world after ``actions`` ran (all succeed) and a moment passed."""
    removed = {a.runner.name for a in actions if isinstance(a, (RemoveRunner, DeleteRunner))}
    for action in actions:
        if isinstance(action, ScaleDown):
            removed.update(c.name for c in action.candidates[: action.count])
    survivors = []
    for r in observed.runners:
        if r.name in removed or r.name in observed.in_flight_deletes:
            continue
        if r.state is RunnerState.DELETING:
            continue  # finalizers done: gone
        if r.jit_in_flight:
            r = replace(r, jit_in_flight=False, runner_id=77)
        survivors.append(r)
    created = sum(1 for a in actions if isinstance(a, CreateRunner)) + observed.phantoms
    for index in range(created):
        survivors.append(
            replace(
                survivors[0] if survivors else _fresh("seed"),
                name=f"new-{serial}-{index}",
                uid=f"uid-new-{serial}-{index}",
                state=RunnerState.STARTING,
                phase="",
                runner_id=100 + index,
                has_job=False,
                job_completed=False,
                current_spec=True,
                jit_in_flight=False,
                created=NOW,
            )
        )
    status = next((a.status for a in actions if isinstance(a, WriteStatus)), None)
    rs = replace(
        observed.runner_set, patch_id=patch_id, status=status or observed.runner_set.status
    )
    return Observed(runner_set=rs, runners=tuple(survivors))


def at_force_state(start: Observed, replicas: int, status: EphemeralRunnerSetStatus) -> Observed:
    """``start`` as a live set asked for ``replicas`` at patch id 0, with ``status``."""
    rs = replace(
        start.runner_set,
        deleting=False,
        replicas=replicas,
        max_runners=None,
        patch_id=0,
        status=status,
    )
    return replace(start, runner_set=rs)


def assert_converged(world: Observed, replicas: int) -> None:
    """The set holds ``max(replicas, the runners it may not remove)`` live runners and a pass
    at patch id 0 has nothing left to create or remove."""
    final = plan(world, NOW, NO_BREAKER)
    live = [r for r in world.runners if r.live]
    kept = [
        r
        for r in live
        if r.has_job
        or r.job_completed
        or (r.state is RunnerState.STARTING and not r.registration_known)
    ]
    assert len(live) == max(replicas, len(kept)), [(r.name, r.state) for r in live]
    assert not [a for a in final if isinstance(a, (CreateRunner, ScaleDown, RemoveRunner))]


def _fresh(name: str) -> RunnerView:
    return RunnerView(
        name=name, uid=name, resource_version="1", created=NOW, state=RunnerState.STARTING
    )


@settings(max_examples=300, deadline=None)
@given(worlds(), st.integers(0, 12))
def test_L3_plan_converges(start: Observed, replicas: int) -> None:
    world = at_force_state(start, replicas, EphemeralRunnerSetStatus())
    for round_ in range(8):
        patch_id = 0 if round_ % 2 else 100 + round_  # the listener keeps patching
        world = replace(world, runner_set=replace(world.runner_set, patch_id=patch_id))
        actions = plan(world, NOW, NO_BREAKER)
        world = step(world, actions, patch_id, round_)
    world = replace(world, runner_set=replace(world.runner_set, patch_id=0))
    assert_converged(world, replicas)


FINISHED_ENTRIES = st.lists(
    st.builds(
        FinishedRunner,
        name=st.sampled_from(["r0", "r1", "r2", "gone1", "gone2", "gone3"]),
        patch_id=st.sampled_from([0, 0, 5]),
    ),
    max_size=4,
    unique_by=lambda entry: entry.name,
)


@settings(max_examples=300, deadline=None)
@given(worlds(), st.integers(0, 12), FINISHED_ENTRIES)
def test_L3_at_a_force_state_patch_the_plan_converges_to_replicas(
    start: Observed, replicas: int, entries: list[FinishedRunner]
) -> None:
    """While the listener sends patch id 0 (idle at minRunners, every empty poll), the set
    reaches ``replicas`` live runners whatever finished before: no slot stays held under
    patch 0 (finished entries of earlier patches, runners seen finishing, restarts)."""
    world = at_force_state(start, replicas, EphemeralRunnerSetStatus(finished_runners=entries))
    for round_ in range(8):
        world = step(world, plan(world, NOW, NO_BREAKER), 0, round_)
    assert_converged(world, replicas)


@settings(max_examples=300, deadline=None)
@given(worlds(), st.integers(1, 12), st.integers(0, 4))
def test_L3_after_a_runner_spec_change_the_breaker_never_blocks_the_first_create(
    start: Observed, replicas: int, trips: int
) -> None:
    """Creation paused by failures of an older runner spec: whatever else the set holds, a
    pass that needs runners creates one (unless runners of the current spec failed enough
    times in a row again)."""
    threshold = PlanSettings().breaker_threshold
    streak = FailureStreak(
        reason="Failed",
        count=threshold + trips,
        since=NOW - timedelta(seconds=60),
        trips=trips + 1,
        paused_until=NOW + timedelta(seconds=900),
        runner_spec="an older spec",
    )
    world = at_force_state(start, replicas, EphemeralRunnerSetStatus(failure_streak=streak))
    failed_again = Counter(
        r.failure_reason
        for r in world.runners
        if r.state is RunnerState.TERMINAL and r.current_spec and r.phase != "Succeeded"
    )
    if failed_again and max(failed_again.values()) >= threshold:
        return
    if replicas <= capacity(world):
        return
    actions = plan(world, NOW)
    assert any(isinstance(a, CreateRunner) for a in actions)


# ------------------------------------------------------------------------ status fixpoint


def stored(before: EphemeralRunnerSetStatus, written: EphemeralRunnerSetStatus) -> Any:
    """The status the API server holds after the plan's merge patch, read back as a model."""
    merged = merge_patch(to_json(before), to_json(written))
    return EphemeralRunnerSetStatus.model_validate(merged)


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_a_pass_after_its_own_status_write_writes_nothing(observed: Observed) -> None:
    """The status write is a fixpoint: once the server stores what a pass wrote (as a merge
    patch, where ``null`` means absent), the same world plans no second write. Before
    ``same_json`` the plan sent ``failureStreak: null`` and ``outdatedRunnerSpec: null`` on
    every pass, a write that changed nothing (15 of 33 status writes of a one-job demo, 6 more
    409s on a stale cache)."""
    first = plan(observed, NOW, NO_BREAKER)
    written = next((a.status for a in first if isinstance(a, WriteStatus)), None)
    if written is None:
        return
    after = replace(
        observed,
        runner_set=replace(observed.runner_set, status=stored(observed.runner_set.status, written)),
    )
    second = plan(after, NOW, NO_BREAKER)
    assert not [a for a in second if isinstance(a, WriteStatus)], [
        to_json(a.status) for a in second if isinstance(a, WriteStatus)
    ]
