"""Scheduled warm capacity in the listener: the minimum in force now, and when it changes.

The listener's config may carry ``warm_windows`` (the AutoscalingRunnerSet's
``spec.warmWindows``). Before every desired-count decision the listener asks ``WarmMinimum`` for
the scaler of the minimum in force at its clock's ``now()`` (``scaleset.api.warm_windows``
``minimum_at``, clipped to ``max_runners``); the patch sequence carries over
(``scaler.with_minimum``). While a long poll is open the loop sleeps until ``seconds_to_edge``
and patches then, so a window opening or closing changes the desired count at its edge even
when no message comes. Without windows the minimum is ``min_runners`` and there is no edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from scaleset.api.warm_windows import WarmWindow, minimum_at, next_edge
from scaleset.listener.scaler import Scaler, with_minimum

EDGE_MARGIN = 0.001
"""Seconds the wake-up comes after an edge: the clock read then is past the edge even when the
sleep's float seconds round the instant down by a microsecond."""


class WarmMinimum:
    """The minimum runner count in force, from ``windows`` and the static ``min_runners``."""

    def __init__(self, windows: Sequence[WarmWindow], min_runners: int, max_runners: int) -> None:
        self.windows = tuple(windows)
        self.min_runners = min_runners
        self.max_runners = max_runners

    def at(self, now: datetime) -> tuple[int, WarmWindow | None]:
        """The minimum in force at ``now`` (at most ``max_runners``) and the window setting it
        (``None``: outside every window)."""
        minimum, window = minimum_at(self.windows, self.min_runners, now)
        return min(minimum, self.max_runners), window

    def scaler_at(self, scaler: Scaler, now: datetime) -> Scaler:
        """``scaler`` moved to the minimum in force at ``now`` (itself when it is unchanged)."""
        return with_minimum(scaler, self.at(now)[0])

    def changed(self, scaler: Scaler, now: datetime) -> bool:
        """Whether the minimum in force at ``now`` is not ``scaler``'s."""
        return self.at(now)[0] != scaler.min_runners

    def seconds_to_edge(self, now: datetime) -> float | None:
        """Seconds from ``now`` until just after the next edge (``None``: none ahead)."""
        if not self.windows:
            return None
        edge = next_edge(self.windows, now)
        if edge is None:
            return None
        return max(0.0, (edge - now).total_seconds()) + EDGE_MARGIN
