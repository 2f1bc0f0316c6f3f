"""What ``plan`` can decide for an EphemeralRunnerSet: one small frozen dataclass per kind of
write. Each carries a ``Note`` (the controllers' shared vocabulary): its ``reason`` is the Event
reason and the label of ``scaleset_ephemeral_runner_set_decisions_total``; ``EmitEvent`` posts
its note's message (type Warning for a warning note). ``apply`` maps each action to its API
call(s).

Order matters and is kept by ``plan``: ``AddFinalizers`` alone; otherwise ``WriteStatus`` (or
``DeferStatus``) first (a terminal runner's reason is recorded before it is reaped; a conflict
stops the rest), then Events, removals and deletions, then creates, then ``RemoveFinalizers``
last.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scaleset.api import EphemeralRunnerSetStatus
from scaleset.controllers.decisions import AddFinalizers as AddFinalizers
from scaleset.controllers.decisions import Note as Note
from scaleset.controllers.decisions import RemoveFinalizers as RemoveFinalizers
from scaleset.controllers.ephemeralrunnerset.observed import RunnerView

FINALIZER_ADDED = Note("AddFinalizer")
"""The note of the set's ``AddFinalizers``."""
RUNNERS_GONE = Note("RunnersGone")
"""The note of the set's ``RemoveFinalizers``: it is being deleted and nothing of it remains."""


@dataclass(frozen=True)
class WriteStatus:
    """The whole status, written once, guarded by the resourceVersion that was read."""

    status: EphemeralRunnerSetStatus
    newly_terminal: tuple[str, ...] = ()
    """Reasons of the terminal runners this write records (counted once it succeeds)."""
    note: Note = Note("StatusChanged")


@dataclass(frozen=True)
class DeferStatus:
    """Only counts moved, and this process wrote the set's status less than the plan's
    ``status_interval`` ago: write nothing now, look again in ``after`` seconds. ``status`` is
    what a write would hold (the gauges show it at once)."""

    status: EphemeralRunnerSetStatus
    after: float
    note: Note = Note("StatusPaced")


@dataclass(frozen=True)
class EmitEvent:
    """A Kubernetes Event on the set (``runner``: on that runner instead)."""

    note: Note
    runner: str | None = None


@dataclass(frozen=True)
class CreateRunner:
    """Create one EphemeralRunner for ``patch_id`` (``generateName``; the count is what
    matters, so identical actions are expected)."""

    patch_id: int
    note: Note = Note("ScaleUp")


@dataclass(frozen=True)
class DeleteRunner:
    """Delete a terminal runner (its reason already recorded). Precondition: its uid."""

    runner: RunnerView
    note: Note = Note("ReapTerminal")


@dataclass(frozen=True)
class RemoveRunner:
    """Remove a live runner the L3 way: fresh GET, the same checks again, registration removed
    from GitHub (JobStillRunning: keep it), delete with the read resourceVersion. A runner with
    no runner id has its registration looked up by name."""

    runner: RunnerView
    note: Note


@dataclass(frozen=True)
class ScaleDown:
    """Remove ``count`` runners, trying ``candidates`` in order (L3 ranking); a candidate GitHub
    or a fresh read says is busy is kept and the next one is tried."""

    count: int
    candidates: tuple[RunnerView, ...]
    note: Note = Note("ScaleDown")


@dataclass(frozen=True)
class EnsureProxySecret:
    """Create the runner proxy Secret, or rewrite it when its data is out of date."""

    name: str
    data: Mapping[str, str] = field(repr=False)
    exists: bool = False
    note: Note = Note("ProxySecret")


@dataclass(frozen=True)
class DeleteProxySecret:
    """The set is going away: delete its runner proxy Secret (if any)."""

    name: str
    note: Note = Note("RunnersGone")


@dataclass(frozen=True)
class Requeue:
    """Look again after ``after`` seconds (waiting for busy runners, a breaker pause, a JIT
    request in flight)."""

    after: float
    note: Note


Action = (
    AddFinalizers
    | RemoveFinalizers
    | WriteStatus
    | DeferStatus
    | EmitEvent
    | CreateRunner
    | DeleteRunner
    | RemoveRunner
    | ScaleDown
    | EnsureProxySecret
    | DeleteProxySecret
    | Requeue
)
