"""Builders for plan tests: runner views in each L0 state and the set around them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scaleset.api import EphemeralRunnerSetStatus, RunnerPhase, RunnerState, keys
from scaleset.controllers.ephemeralrunnerset.actions import (
    Action,
    CreateRunner,
    DeleteRunner,
    EmitEvent,
    RemoveRunner,
    ScaleDown,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunnerset.observed import Observed, RunnerSetView, RunnerView

NOW = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)


def runner(
    name: str,
    state: RunnerState,
    *,
    age: float = 300.0,
    runner_id: int = 1,
    phase: str | None = None,
    reason: str = "",
    has_job: bool = False,
    job_completed: bool = False,
    current_spec: bool = True,
    jit_in_flight: bool = False,
    patch_id: int | None = 1,
    completion_patch_id: int | None = None,
) -> RunnerView:
    if phase is None:
        phase = {
            RunnerState.STARTING: "",
            RunnerState.IDLE: RunnerPhase.PENDING,
            RunnerState.BUSY: RunnerPhase.RUNNING,
            RunnerState.TERMINAL: RunnerPhase.FAILED,
            RunnerState.DELETING: RunnerPhase.PENDING,
        }[state]
    return RunnerView(
        name=name,
        uid=f"uid-{name}",
        resource_version="1",
        created=NOW - timedelta(seconds=age),
        state=state,
        phase=phase,
        reason=reason,
        runner_id=runner_id,
        has_job=has_job,
        job_completed=job_completed,
        patch_id=patch_id,
        current_spec=current_spec,
        jit_in_flight=jit_in_flight,
        completion_patch_id=completion_patch_id,
    )


def idle(name: str, **kw: Any) -> RunnerView:
    return runner(name, RunnerState.IDLE, **kw)


def starting(name: str, **kw: Any) -> RunnerView:
    return runner(name, RunnerState.STARTING, **kw)


def busy(name: str, **kw: Any) -> RunnerView:
    kw.setdefault("has_job", True)
    return runner(name, RunnerState.BUSY, **kw)


def terminal(name: str, **kw: Any) -> RunnerView:
    return runner(name, RunnerState.TERMINAL, **kw)


def deleting(name: str, **kw: Any) -> RunnerView:
    return runner(name, RunnerState.DELETING, **kw)


def observed(
    *runners: RunnerView,
    replicas: int = 0,
    patch_id: int = 1,
    status: EphemeralRunnerSetStatus | None = None,
    deleting: bool = False,
    finalizer: bool = True,
    max_runners: int | None = None,
    phantoms: int = 0,
    in_flight_deletes: frozenset[str] = frozenset(),
    seen_finished: frozenset[str] = frozenset(),
    spec_hash: str = "spec-1",
) -> Observed:
    return Observed(
        runner_set=RunnerSetView(
            namespace="ns",
            name="set",
            uid="uid-set",
            resource_version="10",
            generation=1,
            deleting=deleting,
            finalizers=(keys.EPHEMERAL_RUNNER_SET_FINALIZER,) if finalizer else (),
            replicas=replicas,
            patch_id=patch_id,
            spec_hash=spec_hash,
            max_runners=max_runners,
            status=status or EphemeralRunnerSetStatus(),
        ),
        runners=tuple(runners),
        phantoms=phantoms,
        in_flight_deletes=in_flight_deletes,
        seen_finished=seen_finished,
    )


# ------------------------------------------------------------------------ reading the plan


def creates(actions: list[Action]) -> int:
    return sum(1 for a in actions if isinstance(a, CreateRunner))


def removed(actions: list[Action]) -> list[str]:
    """Names removed unconditionally (RemoveRunner) plus the scale-down's first ``count``."""
    names = [a.runner.name for a in actions if isinstance(a, RemoveRunner)]
    for action in actions:
        if isinstance(action, ScaleDown):
            names.extend(c.name for c in action.candidates[: action.count])
    return names


def scale_down(actions: list[Action]) -> ScaleDown | None:
    return next((a for a in actions if isinstance(a, ScaleDown)), None)


def reaped(actions: list[Action]) -> list[str]:
    return [a.runner.name for a in actions if isinstance(a, DeleteRunner)]


def written(actions: list[Action]) -> EphemeralRunnerSetStatus | None:
    action = next((a for a in actions if isinstance(a, WriteStatus)), None)
    return action.status if action is not None else None


def events(actions: list[Action]) -> list[str]:
    return [a.note.reason for a in actions if isinstance(a, EmitEvent)]


def condition(status: EphemeralRunnerSetStatus | None, type_: str) -> tuple[str, str] | None:
    if status is None:
        return None
    found = next((c for c in status.conditions if c.type == type_), None)
    return (found.status, found.reason) if found is not None else None
