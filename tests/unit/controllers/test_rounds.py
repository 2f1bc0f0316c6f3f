"""``apply_in_order``: the one loop the EphemeralRunner and AutoscalingListener reconcilers apply
a plan's actions with — in order up to the first ``Wait``, stopping when the object is gone or
the applier brings feedback the next plan must see, each note counted once per reconcile — and
``repeats``, which ends a reconcile whose plan asks again for the writes it has just made."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

import pytest
from prometheus_client import CollectorRegistry

from scaleset.clock import ManualClock
from scaleset.controllers.decisions import Note, Report, Wait, decision_counter
from scaleset.controllers.rounds import (
    MAX_CONFLICTS,
    Applied,
    ConflictBudget,
    apply_in_order,
    effects_of,
    repeats,
)
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict, ConflictRetriesExhausted
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.logs import get_logger
from scaleset.runtime.events import EventRecorder

log = get_logger(__name__)


@dataclass(frozen=True)
class _State:
    obj: KubeObject
    feedback: tuple[str, ...] = ()
    written: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Write:
    name: str
    note: Note
    refused: bool = False
    deletes: bool = False


@dataclass
class _World:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    applied: list[str] = field(default_factory=list)

    async def apply(self, action: _Write, observed: _State) -> _State | None:
        self.applied.append(action.name)
        if action.deletes:
            return None
        feedback = (*observed.feedback, action.name) if action.refused else observed.feedback
        return replace(observed, feedback=feedback, written=(*observed.written, action.name))

    def count(self, reason: str) -> float:
        value = self.registry.get_sample_value("scaleset_test_rounds_total", {"reason": reason})
        return value or 0.0

    async def run(self, actions: list[object], emitted: set[Note] | None = None) -> Applied[_State]:
        clock = ManualClock()
        return await apply_in_order(
            actions,
            _State(KubeObject(EPHEMERAL_RUNNER, {"metadata": {"name": "r", "namespace": "n"}})),
            self.apply,
            emitted=set() if emitted is None else emitted,
            decisions=decision_counter("scaleset_test_rounds", "help", self.registry),
            events=EventRecorder(cast(KubeClient, None), clock=clock),
            logger=log,
        )


def _write(name: str, **flags: bool) -> _Write:
    return _Write(name, Note(f"{name.capitalize()}Written"), **flags)


async def test_actions_are_applied_in_order_up_to_the_first_wait() -> None:
    world = _World()
    observed, wrote = await world.run([_write("a"), _write("b"), Wait(5), _write("c")])
    assert world.applied == ["a", "b"]
    assert wrote
    assert observed is not None
    assert observed.written == ("a", "b")
    assert world.count("AWritten") == world.count("BWritten") == 1
    assert world.count("CWritten") == 0


async def test_a_plan_of_reports_writes_nothing_and_is_announced() -> None:
    world = _World()
    observed, wrote = await world.run([Report(Note("Idle")), Wait()])
    assert not wrote
    assert observed is not None
    assert world.applied == []
    assert world.count("Idle") == 1


async def test_feedback_stops_the_plan_so_the_next_one_sees_it() -> None:
    world = _World()
    observed, wrote = await world.run([_write("a", refused=True), _write("b")])
    assert world.applied == ["a"]
    assert wrote
    assert observed is not None
    assert observed.feedback == ("a",)


async def test_an_object_gone_ends_the_plan() -> None:
    world = _World()
    observed, wrote = await world.run([_write("a", deletes=True), _write("b")])
    assert world.applied == ["a"]
    assert observed is None
    assert wrote
    assert world.count("AWritten") == 1  # announced on the object as it was


async def test_a_note_planned_again_in_one_reconcile_is_counted_once() -> None:
    world = _World()
    emitted: set[Note] = set()
    await world.run([_write("a"), Report(Note("Idle"))], emitted)
    await world.run([_write("a"), Report(Note("Idle"))], emitted)
    assert world.applied == ["a", "a"]  # applied again: only the announcement is once
    assert world.count("AWritten") == world.count("Idle") == 1


def test_a_round_that_plans_the_writes_just_made_again_is_no_progress() -> None:
    written = effects_of([_write("a"), Report(Note("Idle")), Wait(1)])
    assert written == [_write("a")]
    assert repeats(effects_of([_write("a"), Wait(2)]), written, log)
    assert not repeats([_write("b")], written, log)
    assert not repeats([], [], log)  # nothing to write is settled, not stuck
    assert not repeats(written, None, log)  # the first round


def test_a_reconcile_decides_again_after_a_conflict_until_its_budget_is_spent() -> None:
    budget = ConflictBudget("ephemeralrunner")
    conflict = Conflict(409, "Conflict", "the object has been modified", None)
    for _ in range(MAX_CONFLICTS):
        budget.spend(conflict)
    with pytest.raises(ConflictRetriesExhausted) as raised:
        budget.spend(conflict)
    assert raised.value.operation == "ephemeralrunner"
    assert raised.value.last is conflict
