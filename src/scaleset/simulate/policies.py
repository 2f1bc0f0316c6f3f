"""Scaling policies compared by ``scaleset simulate``; each drives the real listener ``Scaler``.

Every policy answers the listener's one question, "which EphemeralRunnerSet patch now, for
``assigned`` jobs?", through ``scaleset.listener.scaler.Scaler`` (ARC's ``min(min + assigned,
max)`` and its patch-id rules, including the force-state patch that lets the set scale down).
They differ only in the minimum they give it:

- ``arc``: ARC's rule, a static ``minRunners``;
- ``windows``: scheduled warm windows (``scaleset.api.warm_windows``), the minimum in force at
  the instant, and a decision at every window edge even with no message;
- ``headroom``: the static minimum (or the windows' minimum) plus enough warm runners for the
  jobs expected to arrive while a runner starts, at the arrival rate of the last N minutes (what
  the listener sees in its JobAssigned messages), looked at again every minute.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from scaleset.api.warm_windows import WarmWindow, minimum_at, next_edge
from scaleset.listener.scaler import DesiredCount, Scaler, with_minimum


class Policy(Protocol):
    """What the simulated listener asks of a policy."""

    name: str

    def job_event(self) -> None:
        """A JobStarted or JobCompleted message was handled (the scaler's dirty flag)."""

    def job_assigned(self, at: datetime) -> None:
        """A JobAssigned message arrived (a job was queued for this scale set)."""

    def desired(self, assigned: int, now: datetime) -> DesiredCount:
        """The patch to send for ``assigned`` jobs at ``now``."""

    def wake_at(self, now: datetime) -> datetime | None:
        """When to decide again with no message (``None``: only on messages and empty polls)."""


class _ScalerPolicy:
    """A policy that moves the real ``Scaler``'s minimum, keeping its patch sequence."""

    def __init__(self, name: str, minimum: int, maximum: int) -> None:
        self.name = name
        self.maximum = maximum
        self.scaler = Scaler(min(minimum, maximum), maximum)

    def job_event(self) -> None:
        self.scaler.job_event()

    def job_assigned(self, at: datetime) -> None:
        return None

    def minimum(self, now: datetime) -> int:
        return self.scaler.min_runners

    def desired(self, assigned: int, now: datetime) -> DesiredCount:
        self.scaler = with_minimum(self.scaler, self.minimum(now))
        return self.scaler.desired(assigned)

    def wake_at(self, now: datetime) -> datetime | None:
        return None


class ArcRule(_ScalerPolicy):
    """ARC's rule: ``min(minRunners + assigned, maxRunners)`` with a static ``minRunners``."""

    def __init__(self, min_runners: int, max_runners: int) -> None:
        super().__init__(f"arc min={min_runners}", min_runners, max_runners)


class Windows(_ScalerPolicy):
    """Scheduled warm windows: the window's minimum during it, ``min_runners`` outside."""

    def __init__(
        self,
        windows: tuple[WarmWindow, ...],
        min_runners: int,
        max_runners: int,
        name: str | None = None,
    ) -> None:
        label = name or "windows " + ", ".join(
            f"{w.start // 60:02d}:{w.start % 60:02d}-{w.end // 60:02d}:{w.end % 60:02d}"
            f" min={w.min_runners}"
            for w in windows
        )
        super().__init__(label, min_runners, max_runners)
        self.windows = windows
        self.static_min = min_runners

    def minimum(self, now: datetime) -> int:
        return minimum_at(self.windows, self.static_min, now)[0]

    def wake_at(self, now: datetime) -> datetime | None:
        return next_edge(self.windows, now)


@dataclass(frozen=True)
class HeadroomSettings:
    lookback: float = 600.0
    """Seconds of arrivals the rate is taken over."""
    cover: float = 90.0
    """Seconds of arrivals to keep warm runners for (about a runner's start time)."""
    factor: float = 1.0
    every: float = 60.0
    """How often the minimum is looked at again without a message."""


class Headroom(_ScalerPolicy):
    """Warm runners that follow the recent arrival rate: ``base + ceil(factor * rate * cover)``
    where ``rate`` is JobAssigned messages per second over the last ``lookback`` and ``base``
    is ``min_runners`` or, with ``windows``, the minimum of the window in force."""

    def __init__(
        self,
        min_runners: int,
        max_runners: int,
        settings: HeadroomSettings | None = None,
        windows: tuple[WarmWindow, ...] = (),
    ) -> None:
        self.settings = settings or HeadroomSettings()
        s = self.settings
        base = "windows" if windows else f"min={min_runners}"
        super().__init__(
            f"headroom {base} +{s.factor:g}x{s.cover:g}s of the last {s.lookback / 60:g}min",
            min_runners,
            max_runners,
        )
        self.static_min = min_runners
        self.windows = windows
        self.arrivals: deque[datetime] = deque()

    def job_assigned(self, at: datetime) -> None:
        self.arrivals.append(at)

    def minimum(self, now: datetime) -> int:
        s = self.settings
        horizon = now - timedelta(seconds=s.lookback)
        while self.arrivals and self.arrivals[0] < horizon:
            self.arrivals.popleft()
        rate = len(self.arrivals) / s.lookback
        base = minimum_at(self.windows, self.static_min, now)[0]
        return base + math.ceil(s.factor * rate * s.cover - 1e-9)

    def wake_at(self, now: datetime) -> datetime | None:
        again = now + timedelta(seconds=self.settings.every)
        edge = next_edge(self.windows, now)
        return again if edge is None else min(again, edge)
