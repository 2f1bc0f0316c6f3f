"""When the EphemeralRunnerSet's status is written: when what ``kubectl get`` shows changes (the
printer columns), when a condition changes, or when the controller's memory gains something a
restart must not lose — and never for a listener patch that changes nothing the set does.

- **Columns are true**: after any pass, the status the server holds (the one written, or the
  stored one when nothing is written) shows exactly the counts and phase of the runners — at
  once when this process has not written the status within ``status_interval``, and otherwise
  at the end of that interval (the pass defers the write, and the pass then writes it).
- **Paced**: a write that would only move columns or a condition's message comes at least
  ``status_interval`` after this process's previous write; a condition's status or reason and
  memory a restart must not lose are never deferred.
- **No write without a visible change**: a pass writes only if a printer column, a condition or
  durable memory (a terminal runner recorded, a finished runner entered, the breaker) differs.
- A listener patch that leaves ``replicas`` as it was is not acknowledged by a write: the
  listener sends one after every message batch, most of them with the same count.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.controllers.ephemeralrunnerset.builders import NOW, busy, idle, starting, terminal
from tests.unit.controllers.ephemeralrunnerset.test_plan_properties import (
    NO_BREAKER,
    stored,
    worlds,
)

from scaleset.api import EphemeralRunnerSetStatus, RunnerState, to_json
from scaleset.api.crds import PRINTER_COLUMNS
from scaleset.controllers.ephemeralrunnerset.actions import Action, DeferStatus, WriteStatus
from scaleset.controllers.ephemeralrunnerset.observed import Observed, RunnerSetView, RunnerView
from scaleset.controllers.ephemeralrunnerset.plan import plan

INTERVAL = NO_BREAKER.status_interval

SHOWN = [
    column["jsonPath"].removeprefix(".status.")
    for column in PRINTER_COLUMNS["EphemeralRunnerSet"]
    if column["jsonPath"].startswith(".status.")
]


def shown(status: EphemeralRunnerSetStatus) -> dict[str, Any]:
    """What ``kubectl get ephemeralrunnersets`` prints from the status (``-o wide`` too)."""
    raw = to_json(status)
    return {path: raw.get(path) or 0 for path in SHOWN if path != "phase"} | {
        "phase": raw.get("phase") or ""
    }


def truth(observed: Observed, phase: str) -> dict[str, Any]:
    """The columns as the runners make them."""
    runners = observed.runners
    deleting = set(observed.in_flight_deletes)
    states = [RunnerState.DELETING if r.name in deleting and r.live else r.state for r in runners]
    by_phase = [
        r.phase for r, s in zip(runners, states, strict=True) if s is not RunnerState.DELETING
    ]
    pending = sum(1 for p in by_phase if p in ("", "Pending"))
    running = by_phase.count("Running")
    failed = by_phase.count("Failed")
    counts = {
        "startingEphemeralRunners": states.count(RunnerState.STARTING),
        "idleEphemeralRunners": states.count(RunnerState.IDLE),
        "busyEphemeralRunners": states.count(RunnerState.BUSY),
        "terminalEphemeralRunners": states.count(RunnerState.TERMINAL),
        "deletingEphemeralRunners": states.count(RunnerState.DELETING),
        "pendingEphemeralRunners": pending,
        "runningEphemeralRunners": running,
        "currentReplicas": pending + running + failed,
    }
    return {path: counts.get(path, 0) for path in SHOWN if path != "phase"} | {"phase": phase}


def written(actions: list[Action]) -> EphemeralRunnerSetStatus | None:
    return next((a.status for a in actions if isinstance(a, WriteStatus)), None)


def deferred(actions: list[Action]) -> DeferStatus | None:
    return next((a for a in actions if isinstance(a, DeferStatus)), None)


def settled(observed: Observed) -> Observed:
    """``observed`` after the server stored its pass's status write (if any)."""
    status = written(plan(observed, NOW, NO_BREAKER))
    if status is None:
        return observed
    rs = observed.runner_set
    return replace(observed, runner_set=replace(rs, status=stored(rs.status, status)))


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_the_columns_always_show_the_runners_after_a_pass(observed: Observed) -> None:
    status = written(plan(observed, NOW, NO_BREAKER))
    held = observed.runner_set.status if status is None else status
    assert shown(held) == truth(observed, held.phase)


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_a_status_write_always_changes_what_kubectl_shows_or_what_must_survive(
    observed: Observed,
) -> None:
    """From a settled world, a new listener patch id with the same ``replicas`` writes
    nothing; any write a pass makes changes a column, a condition or durable memory."""
    world = settled(observed)
    again = replace(
        world, runner_set=replace(world.runner_set, patch_id=world.runner_set.patch_id + 1)
    )
    before = world.runner_set.status
    status = written(plan(again, NOW, NO_BREAKER))
    if status is None:
        return
    assert (
        shown(status) != shown(before)
        or _conditions(status) != _conditions(before)
        or _durable(status) != _durable(before)
    ), "a status write that changes nothing kubectl shows and nothing a restart needs"


def _conditions(status: EphemeralRunnerSetStatus) -> list[tuple[str, str, str]]:
    """Each condition's type, status and reason (a message that only names the patch id is not
    a change the set's user needs to see)."""
    return [(c.type, c.status, c.reason) for c in status.conditions]


def _durable(status: EphemeralRunnerSetStatus) -> tuple[object, ...]:
    return (
        sorted(status.recorded_terminal_runners),
        dict(status.terminal_reasons),
        status.failure_streak,
        sorted((f.name, f.patch_id) for f in status.finished_runners),
        status.outdated_runner_spec,
    )


def runner_set(
    replicas: int, patch_id: int, status: EphemeralRunnerSetStatus | None = None
) -> RunnerSetView:
    return RunnerSetView(
        namespace="ns",
        name="set",
        uid="uid-set",
        resource_version="9",
        deleting=False,
        replicas=replicas,
        patch_id=patch_id,
        max_runners=10,
        spec_hash="h",
        status=status or EphemeralRunnerSetStatus(),
    )


def world(runners: tuple[RunnerView, ...], replicas: int, patch_id: int) -> Observed:
    return Observed(
        runner_set=runner_set(replicas, patch_id),
        runners=runners,
        phantoms=0,
        in_flight_deletes=frozenset(),
        seen_finished=frozenset(),
    )


def test_a_listener_patch_with_the_same_count_is_not_acknowledged_by_a_write() -> None:
    start = settled(world((idle("a"), busy("b")), replicas=2, patch_id=7))
    for patch_id in (8, 9, 10):  # one patch after each message batch, the count unchanged
        nxt = replace(start, runner_set=replace(start.runner_set, patch_id=patch_id))
        assert written(plan(nxt, NOW, NO_BREAKER)) is None


def test_a_listener_patch_that_changes_the_count_is_acknowledged() -> None:
    start = settled(world((idle("a"), busy("b")), replicas=2, patch_id=7))
    nxt = replace(start, runner_set=replace(start.runner_set, patch_id=8, replicas=3))
    status = written(plan(nxt, NOW, NO_BREAKER))
    assert status is not None
    assert status.last_patch_id == 8
    accepted = next(c for c in status.conditions if c.type == "ReplicasAccepted")
    assert "replicas 3" in accepted.message


def test_a_runner_changing_state_is_written_at_once() -> None:
    start = settled(world((starting("a"),), replicas=1, patch_id=7))
    nxt = replace(start, runners=(idle("a"),))
    status = written(plan(nxt, NOW, NO_BREAKER))
    assert status is not None
    assert (status.starting_ephemeral_runners, status.idle_ephemeral_runners) == (0, 1)


def test_L0_a_count_change_within_the_interval_of_the_last_write_waits_for_its_end() -> None:
    start = settled(world((starting("a"), starting("b")), replicas=2, patch_id=7))
    moved = replace(start, runners=(idle("a"), starting("b")))
    recent = replace(moved, status_written_at=NOW - timedelta(seconds=0.25))
    actions = plan(recent, NOW, NO_BREAKER)
    assert written(actions) is None
    wait = deferred(actions)
    assert wait is not None
    assert wait.after == pytest.approx(INTERVAL - 0.25)
    assert shown(wait.status) == truth(moved, "Running")  # what the gauges show meanwhile
    # the pass the deferral asks for (or any pass at the end of the interval) writes it
    at_end = plan(recent, NOW + timedelta(seconds=wait.after), NO_BREAKER)
    status = written(at_end)
    assert status is not None
    assert shown(status) == truth(moved, "Running")
    # and with no write of this process remembered (a restart), it is written at once
    assert written(plan(moved, NOW, NO_BREAKER)) is not None


def test_memory_a_restart_needs_is_written_at_once_however_recent_the_last_write() -> None:
    start = settled(world((idle("a"), idle("b")), replicas=2, patch_id=7))
    failed = replace(start, runners=(terminal("a"), idle("b")), status_written_at=NOW)
    status = written(plan(failed, NOW, NO_BREAKER))
    assert status is not None
    assert "a" in status.recorded_terminal_runners  # recorded before the runner is reaped


def test_a_new_count_inside_the_interval_is_acknowledged_with_the_paced_write() -> None:
    """``ReplicasAccepted`` stays True with the same reason; only its message (the count)
    moves, so the acknowledgement waits like a column (``lastPatchID`` lags meanwhile, as it
    does for same-count patches)."""
    start = settled(world((idle("a"), busy("b")), replicas=2, patch_id=7))
    nxt = replace(
        start,
        runner_set=replace(start.runner_set, patch_id=8, replicas=3),
        status_written_at=NOW - timedelta(seconds=0.5),
    )
    wait = deferred(plan(nxt, NOW, NO_BREAKER))
    assert wait is not None
    assert wait.after == pytest.approx(INTERVAL - 0.5)
    status = written(plan(nxt, NOW + timedelta(seconds=wait.after), NO_BREAKER))
    assert status is not None
    assert status.last_patch_id == 8
    accepted = next(c for c in status.conditions if c.type == "ReplicasAccepted")
    assert "replicas 3" in accepted.message


def test_input_refused_inside_the_interval_is_said_at_once() -> None:
    start = settled(world((idle("a"),), replicas=1, patch_id=7))
    nxt = replace(
        start,
        runner_set=replace(start.runner_set, patch_id=8, replicas=-1),
        status_written_at=NOW,
    )
    status = written(plan(nxt, NOW, NO_BREAKER))
    assert status is not None
    accepted = next(c for c in status.conditions if c.type == "ReplicasAccepted")
    assert accepted.status == "False"


@settings(max_examples=300, deadline=None)
@given(worlds(), worlds(), st.floats(0.0, 2.0))
def test_L0_a_pass_soon_after_a_write_defers_only_a_change_of_columns(
    first: Observed, second: Observed, ago: float
) -> None:
    """From a settled world whose runners then change (``second``'s), a pass ``ago`` seconds
    after this process's last write either writes what an unpaced pass writes, or — only when
    nothing but columns and condition messages moved and ``ago`` is under the interval —
    defers exactly until the interval ends, holding the same status."""
    base = settled(first)
    moved = replace(base, runners=second.runners, in_flight_deletes=frozenset())
    unpaced = written(plan(moved, NOW, NO_BREAKER))
    recent = replace(moved, status_written_at=NOW - timedelta(seconds=ago))
    actions = plan(recent, NOW, NO_BREAKER)
    status, wait = written(actions), deferred(actions)
    if unpaced is None:
        assert status is None
        assert wait is None
        return
    before = base.runner_set.status
    must_survive = _gains_memory(unpaced, before) or _conditions(unpaced) != _conditions(before)
    if wait is None:
        assert status == unpaced
        assert must_survive or ago >= INTERVAL
        return
    assert status is None
    assert wait.status == unpaced
    assert ago < INTERVAL
    assert wait.after == pytest.approx(INTERVAL - ago, abs=1e-5)
    assert not must_survive


def _gains_memory(new: EphemeralRunnerSetStatus, old: EphemeralRunnerSetStatus) -> bool:
    """Memory a restart must not lose differs (entries of runners gone may be dropped with the
    next write: that only tidies)."""
    finished = {(f.name, f.patch_id) for f in new.finished_runners}
    return (
        bool(set(new.recorded_terminal_runners) - set(old.recorded_terminal_runners))
        or bool(finished - {(f.name, f.patch_id) for f in old.finished_runners})
        or (new.terminal_reasons, new.failure_streak, new.outdated_runner_spec)
        != (old.terminal_reasons, old.failure_streak, old.outdated_runner_spec)
    )
