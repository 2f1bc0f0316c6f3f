"""Which warm window is in force: the AutoscalingRunnerSet's status fields and Event, pure.

The listener applies ``spec.warmWindows`` on its own clock (``scaleset.listener.warm``); the
controller says the same on the scale set, from the same pure function on its own clock:
``status.warmWindow`` (the window in force, described; absent outside every window: the real
kube-apiserver refuses an empty string in a merge patch of a CRD's status) and
``status.minRunnersInForce``, with a ``WarmWindowChanged`` Event when the window in force
changes. The reconcile is requeued just past the next edge, so the status turns with the
window even when nothing else happens. A scale set without windows gets neither field (an ARC
object's status stays as ARC writes it); one whose windows were removed loses both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scaleset.api.autoscalingrunnerset import AutoscalingRunnerSet
from scaleset.api.warm_windows import minimum_at, next_edge, parse
from scaleset.controllers.decisions import Note

WARM_WINDOW_CHANGED = "WarmWindowChanged"
EDGE_MARGIN = 0.001
"""Seconds the requeue comes after an edge (so the clock read then is past it)."""


@dataclass(frozen=True)
class WindowInForce:
    """The status fields to write (``None`` removes one), the Event, when to look again."""

    fields: dict[str, Any] = field(default_factory=dict)
    notes: tuple[Note, ...] = ()
    wake_in: float | None = None


def window_in_force(
    scale_set: AutoscalingRunnerSet, min_runners: int, max_runners: int, now: datetime
) -> WindowInForce:
    """What the status says about warm windows at ``now``; ``min_runners``/``max_runners`` are
    the effective ones (a valid spec: its windows were checked before)."""
    status = scale_set.status
    windows = parse(scale_set.spec.warm_windows or [], "spec.warmWindows")[0]
    if not windows:
        if status.warm_window is None and status.min_runners_in_force is None:
            return WindowInForce()
        return WindowInForce({"warmWindow": None, "minRunnersInForce": None})
    minimum, window = minimum_at(windows, min_runners, now)
    minimum = min(minimum, max_runners)
    described = window.describe() if window is not None else None
    notes: tuple[Note, ...] = ()
    if status.warm_window != described:
        message = (
            f"{described} is in force: {minimum} runners kept without jobs"
            if window is not None
            else f"no warm window is in force: spec.minRunners ({minimum}) applies"
        )
        notes = (Note(WARM_WINDOW_CHANGED, message),)
    edge = next_edge(windows, now)
    wake_in = None if edge is None else (edge - now).total_seconds() + EDGE_MARGIN
    return WindowInForce({"warmWindow": described, "minRunnersInForce": minimum}, notes, wake_in)
