"""Supervision of long-running tasks: a crash is logged, counted and restarted — never silent.

A background task that dies with an unobserved exception would stop a controller while the
process looks healthy. ``Supervisor.run(name, factory)`` restarts ``factory()`` after a crash
with exponential back-off and counts it in ``scaleset_supervised_task_restarts_total{task}``; a run
that lasted ``healthy_after`` seconds before crashing starts the back-off over (a task that fails
once a day restarts at once, not after the maximum delay earned by last week's crashes).
More than ``max_restarts`` crashes of one task within ``window`` seconds is a crash loop:
``failing()`` names it and the manager's ``/healthz`` turns red, so the kubelet restarts the pod.
Exceptions listed in ``propagate`` (leadership loss, shutdown) are not crashes: they pass through.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from scaleset.backoff import Backoff
from scaleset.clock import Clock, SystemClock
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.logs import get_logger

log = get_logger(__name__)


DEFAULT_MAX_RESTARTS = 5
"""More crashes than this of one task within ``DEFAULT_RESTART_WINDOW`` is a crash loop."""
DEFAULT_RESTART_WINDOW = 600.0
"""Seconds over which restarts are counted."""
DEFAULT_RESTART_BACKOFF = (1.0, 60.0)
"""Seconds before the first restart, and at most (doubling in between)."""


class Supervisor:
    """Restarts crashed tasks and tells whether any of them is crash-looping."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        window: float = DEFAULT_RESTART_WINDOW,
        backoff_initial: float = DEFAULT_RESTART_BACKOFF[0],
        backoff_max: float = DEFAULT_RESTART_BACKOFF[1],
        healthy_after: float = 60.0,
        propagate: tuple[type[BaseException], ...] = (),
    ) -> None:
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._max_restarts = max_restarts
        self._window = window
        self._backoff = (backoff_initial, backoff_max)
        self._healthy_after = healthy_after
        self._propagate = propagate
        self._crashes: dict[str, deque[float]] = {}

    async def run(self, name: str, factory: Callable[[], Awaitable[None]]) -> None:
        """Run ``factory()`` until it returns; restart it whenever it raises."""
        backoff = Backoff(*self._backoff)
        while True:
            started = self._clock.monotonic()
            try:
                await factory()
                return
            except asyncio.CancelledError:
                raise
            except self._propagate:
                raise
            except Exception:
                now = self._clock.monotonic()
                if now - started >= self._healthy_after:
                    backoff.reset()
                crashes = self._crashes.setdefault(name, deque())
                crashes.append(now)
                self._metrics.task_restarts.labels(name).inc()
                delay = backoff.next()
                log.exception("task crashed, restarting", task=name, restart_in=round(delay, 2))
                await self._clock.sleep(delay)

    def failing(self) -> list[str]:
        """Tasks that crashed more than ``max_restarts`` times within the window."""
        now = self._clock.monotonic()
        failing: list[str] = []
        for name, crashes in self._crashes.items():
            while crashes and now - crashes[0] > self._window:
                crashes.popleft()
            if len(crashes) > self._max_restarts:
                failing.append(name)
        return failing
