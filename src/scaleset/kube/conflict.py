"""``retry_on_conflict``: read again, decide again, write again — a bounded number of times.

The function passed in must do the whole read-decide-write itself (a fresh GET, the decision, a
``patch_with_lock`` or guarded JSON patch), so each attempt acts on what the server holds now
(lifecycle.md L2). Only ``Conflict`` is retried (never ``AlreadyExists``); after ``attempts``
tries ``ConflictRetriesExhausted`` is raised and counted in
``scaleset_conflict_retries_exhausted_total{operation}``, so the caller can fall back (the
listener writes the job fields without a precondition and retries the phase later) — never crash.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from scaleset.backoff import Backoff
from scaleset.clock import Clock, SystemClock
from scaleset.kube.errors import Conflict, ConflictRetriesExhausted
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.logs import get_logger

T = TypeVar("T")

log = get_logger(__name__)

DEFAULT_ATTEMPTS = 5


async def retry_on_conflict(
    fn: Callable[[], Awaitable[T]],
    *,
    operation: str,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = 0.01,
    factor: float = 2.0,
    jitter: float = 0.5,
    clock: Clock | None = None,
    metrics: RuntimeMetrics | None = None,
    rng: random.Random | None = None,
) -> T:
    """Run ``fn`` until it does not raise ``Conflict``, at most ``attempts`` times.

    Between attempts it sleeps ``base_delay * factor**n`` plus up to ``jitter`` of that, so
    racing writers spread out. ``operation`` names the write in the metric and the log.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    clock = clock or SystemClock()
    metrics = metrics or default_metrics()
    delays = Backoff(base_delay, math.inf, factor=factor, jitter=jitter, rng=rng)
    last: Conflict | None = None
    for attempt in range(1, attempts + 1):
        try:
            return await fn()
        except Conflict as conflict:
            last = conflict
            if attempt == attempts:
                break
            metrics.conflict_retries.labels(operation).inc()
            await clock.sleep(delays.next())
    assert last is not None
    metrics.conflict_exhausted.labels(operation).inc()
    log.warning("conflict retries exhausted", operation=operation, attempts=attempts)
    raise ConflictRetriesExhausted(operation, attempts, last)
