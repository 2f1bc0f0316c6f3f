"""What the reconcilers' observe → plan → apply rounds share: a GET whose NotFound answers None
(the object is gone, or was never made), and applying one plan's actions in order
(``apply_in_order``), each announced once per reconcile, and the check that ends a reconcile
whose plan asks for the writes it has just made (``repeats``), and the Conflicts one reconcile
may meet before it gives up (``ConflictBudget``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from prometheus_client import Counter

from scaleset.controllers.decisions import Note, Report, Wait, announce_once, notes_of
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict, ConflictRetriesExhausted, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import Kind
from scaleset.runtime.events import EventRecorder


async def get_or_none(kube: KubeClient, kind: Kind, key: ObjectKey | None) -> KubeObject | None:
    """The object as the API server has it now (a fresh GET); None when it does not exist, or
    when there is no ``key`` to read."""
    if key is None:
        return None
    try:
        return await kube.get(kind, key)
    except NotFound:
        return None


class RoundState(Protocol):
    """What ``apply_in_order`` reads of a reconciler's observed state: the object its Events
    are about, and the feedback its applier has gathered (refusals the plan must see)."""

    @property
    def obj(self) -> KubeObject: ...

    @property
    def feedback(self) -> Sequence[object]: ...


S = TypeVar("S", bound=RoundState)


class Applied(NamedTuple, Generic[S]):
    """What applying a plan's actions left: the state afterwards (None: the object is gone),
    and whether anything was written."""

    observed: S | None
    wrote: bool


async def apply_in_order(
    actions: Sequence[object],
    observed: S,
    apply: Callable[[Any, S], Awaitable[S | None]],
    *,
    emitted: set[Note],
    decisions: Counter,
    events: EventRecorder,
    logger: Any,
) -> Applied[S]:
    """Apply ``actions`` in order up to the first ``Wait``: a ``Report`` is announced, any
    other action is applied (``apply`` returns the state afterwards, None when the object is
    gone) and then announced on the object as it is afterwards. Stops early when the object is
    gone or the applier brought new feedback: the next plan must see it before anything else is
    written. Each note is announced once per reconcile (``emitted``)."""
    wrote = False
    for action in actions:
        if isinstance(action, Wait):
            break
        updated: S | None = observed
        if not isinstance(action, Report):
            updated = await apply(action, observed)
            wrote = True
        involved = observed.obj if updated is None else updated.obj
        announce_once(
            notes_of(action), involved, emitted, decisions=decisions, events=events, logger=logger
        )
        if updated is None:
            return Applied(None, wrote)
        feedback_changed = tuple(updated.feedback) != tuple(observed.feedback)
        observed = updated
        if feedback_changed:
            break
    return Applied(observed, wrote)


def effects_of(actions: Sequence[object]) -> list[object]:
    """The actions of a plan that write (neither a ``Report`` nor a ``Wait``)."""
    return [action for action in actions if not isinstance(action, Report | Wait)]


def repeats(effects: Sequence[object], previous: Sequence[object] | None, logger: Any) -> bool:
    """Whether a round plans the very writes the round before applied: they did not take (the
    server kept something else), so applying them again cannot help; said once in the log."""
    if not effects or list(effects) != list(previous or ()):
        return False
    names = ", ".join(type(action).__name__ for action in effects)
    logger.warning("no progress: the same actions twice", actions=names)
    return True


MAX_CONFLICTS = 5
"""Conflicts one reconcile decides again on a fresh read before it gives up (the work queue
then backs off)."""


@dataclass
class ConflictBudget:
    """The Conflicts a reconcile of ``controller`` has met: each one is decided again on a
    fresh read, up to ``MAX_CONFLICTS``; the next raises ``ConflictRetriesExhausted``."""

    controller: str
    met: int = 0

    def spend(self, conflict: Conflict) -> None:
        self.met += 1
        if self.met > MAX_CONFLICTS:
            raise ConflictRetriesExhausted(self.controller, MAX_CONFLICTS, conflict) from conflict
