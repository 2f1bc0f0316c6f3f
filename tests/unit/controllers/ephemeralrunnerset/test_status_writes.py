"""When the EphemeralRunnerSet's status is written: when what ``kubectl get`` shows changes (the
printer columns), when a condition changes, or when the controller's memory gains something a
restart must not lose — and never for a listener patch that changes nothing the set does.

- **Columns are true**: after any pass, the status the server holds (the one written, or the
  stored one when nothing is written) shows exactly the counts and phase of the runners.
- **No write without a visible change**: a pass writes only if a printer column, a condition or
  durable memory (a terminal runner recorded, a finished runner entered, the breaker) differs.
- A listener patch that leaves ``replicas`` as it was is not acknowledged by a write: the
  listener sends one after every message batch, most of them with the same count.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from tests.unit.controllers.ephemeralrunnerset.builders import NOW, busy, idle, starting
from tests.unit.controllers.ephemeralrunnerset.test_plan_properties import (
    NO_BREAKER,
    stored,
    worlds,
)

from scaleset.api import EphemeralRunnerSetStatus, RunnerState, to_json
from scaleset.api.crds import PRINTER_COLUMNS
from scaleset.controllers.ephemeralrunnerset.actions import Action, WriteStatus
from scaleset.controllers.ephemeralrunnerset.observed import Observed, RunnerSetView, RunnerView
from scaleset.controllers.ephemeralrunnerset.plan import plan

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
