"""The vocabulary every reconciler decides in, and the counter it keeps (lifecycle.md L9).

- ``Note``: why an action happens — a stable reason (the Event reason and the counter label) and,
  when there is something to say, a message (then also an Event; ``warning`` for type Warning).
- ``AddFinalizers``/``RemoveFinalizers``: the finalizer list a plan decided, written over the list
  that was read (``add_finalizers``/``remove_finalizers`` decide it from ours, or that
  nothing is to be written).
- ``Report``: nothing to change, something to say. ``Wait``: look again after ``seconds`` (or when
  something changes), or after the work queue's per-key back-off. ``WriteStatus``: one status
  merge patch guarded by the resourceVersion that was read (L2), with the notes it records.
- ``decision_counter``: each reconciler counts its decisions by reason on a
  ``<name>_total{reason}`` counter. Building a second manager in the same process (a controller
  restart in the demo, a test that restarts its controller) must not register the counter twice,
  so counters are made here, once per (registry, name), and shared.
- ``announce``: count a note, post its Event; ``announce_once``: the same, once per reconcile;
  ``notes_of``: the notes an action of any controller carries.
- ``DecisionMetrics``: what a reconciler holds of that counter. Each controller names its own
  in a subclass (``name``, ``documentation``); ``default()`` is the process-wide one per class.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from scaleset.kube.objects import KubeObject
from scaleset.process_metrics import process_wide
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder


@dataclass(frozen=True)
class Note:
    """Why an action happens. ``message`` non-empty: also an Event (``warning``: type Warning)."""

    reason: str
    message: str = ""
    warning: bool = False


@dataclass(frozen=True)
class Report:
    """Nothing to change, something to say (an Event and a count)."""

    note: Note


@dataclass(frozen=True)
class WriteStatus:
    """One status merge patch carrying the resourceVersion that was read (L2). A controller
    whose plan holds one puts it first, so a failure is on record before what failed is
    deleted."""

    changes: Mapping[str, Any] = field(hash=False)
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True)
class Wait:
    """Look again after ``seconds`` (None: when something changes); ``backoff``: after the work
    queue's per-key back-off instead."""

    seconds: float | None = None
    backoff: bool = False


@dataclass(frozen=True)
class AddFinalizers:
    """Write ``current`` plus ``missing`` as the object's finalizers, only over the list
    ``current`` that was read (one guarded JSON patch: ``kube.patches.set_finalizers``)."""

    current: tuple[str, ...]
    missing: tuple[str, ...]
    note: Note = Note("FinalizerAdded")

    @property
    def wanted(self) -> tuple[str, ...]:
        return (*self.current, *self.missing)


@dataclass(frozen=True)
class RemoveFinalizers:
    """Write ``remaining`` as the object's finalizers, only over the list ``current`` that was
    read (one guarded JSON patch: ``kube.patches.set_finalizers``)."""

    current: tuple[str, ...]
    remaining: tuple[str, ...]
    note: Note = Note("FinalizerRemoved")


def add_finalizers(
    current: Iterable[str], ours: Iterable[str], note: Note = Note("FinalizerAdded")
) -> AddFinalizers | None:
    """The action that puts on ``current`` those of ``ours`` it lacks (``None``: it lacks
    none)."""
    read = tuple(current)
    missing = tuple(f for f in ours if f not in read)
    return AddFinalizers(read, missing, note) if missing else None


def remove_finalizers(
    current: Iterable[str], ours: Iterable[str], note: Note = Note("FinalizerRemoved")
) -> RemoveFinalizers | None:
    """The action that takes every one of ``ours`` off ``current`` (``None``: none is on)."""
    read = tuple(current)
    drop = set(ours)
    remaining = tuple(f for f in read if f not in drop)
    return RemoveFinalizers(read, remaining, note) if remaining != read else None


_counters: weakref.WeakKeyDictionary[CollectorRegistry, dict[str, Counter]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def decision_counter(
    name: str, documentation: str, registry: CollectorRegistry | None = REGISTRY
) -> Counter:
    """The ``name`` counter labelled by ``reason`` on ``registry`` (made on first use).

    ``registry=None`` gives an unregistered counter (tests that want a private one).
    """
    if registry is None:
        return Counter(name, documentation, ["reason"], registry=None)
    with _lock:
        known = _counters.setdefault(registry, {})
        counter = known.get(name)
        if counter is None:
            counter = known[name] = Counter(name, documentation, ["reason"], registry=registry)
        return counter


class DecisionMetrics:
    """A controller's ``<name>_total{reason}`` counter: one count per applied note. Subclasses
    set ``name`` and ``documentation`` (the row of docs/metrics.md)."""

    name: ClassVar[str]
    documentation: ClassVar[str]

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self.decisions = decision_counter(self.name, self.documentation, registry)

    @classmethod
    def default(cls) -> Self:
        """The process-wide instance of this class on prometheus_client's global registry."""
        return process_wide(cls)


def announce(
    note: Note, obj: KubeObject, *, decisions: Counter, events: EventRecorder, logger: Any
) -> None:
    """Count a decision by its reason; with a message, also post it as an Event and log it (a
    warning's at level warning)."""
    decisions.labels(note.reason).inc()
    if note.message:
        events.emit(obj, "Warning" if note.warning else "Normal", note.reason, note.message)
        say = logger.warning if note.warning else logger.info
        say("decision", reason=note.reason, detail=note.message)


def announce_once(
    notes: Iterable[Note],
    obj: KubeObject,
    emitted: set[Note],
    *,
    decisions: Counter,
    events: EventRecorder,
    logger: Any,
) -> None:
    """``announce`` each note not yet in ``emitted`` (the notes one reconcile has announced:
    a note its rounds plan again is counted and posted once), and add it there."""
    for note in notes:
        if note in emitted:
            continue
        emitted.add(note)
        announce(note, obj, decisions=decisions, events=events, logger=logger)


def notes_of(action: object) -> tuple[Note, ...]:
    """The notes an action carries: a status write's ``notes``, any other action's ``note``,
    none for a ``Wait``."""
    notes = getattr(action, "notes", None)
    if notes is not None:
        return tuple(notes)
    note = getattr(action, "note", None)
    return (note,) if isinstance(note, Note) else ()


def acts(actions: Iterable[object]) -> bool:
    """Whether a plan does more than wait: writes, calls GitHub, or says something (a plan made
    on a cache that may be behind is made again on a fresh read before it acts)."""
    return any(not isinstance(action, Wait) for action in actions)


def result_of(actions: Iterable[object]) -> Result:
    """The requeue a plan asked for: its ``Wait`` (back-off, or after seconds), else none."""
    wait = next((a for a in actions if isinstance(a, Wait)), Wait())
    if wait.backoff:
        return Result(requeue=True)
    if wait.seconds is not None:
        return Result(requeue_after=max(wait.seconds, 0.001))
    return Result()
