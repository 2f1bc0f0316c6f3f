"""A keyed work queue with controller-runtime's guarantees, plus fairness across namespaces.

Guarantees (client-go's workqueue semantics):

- **Dedupe**: a key added while it waits is queued once.
- **One worker per key**: a key being processed is not handed out again; if it is added meanwhile
  it is marked dirty and queued again when ``done(key)`` is called — the change is never lost.
- **Rate-limited re-adds**: ``add_rate_limited`` (an error, ``Result(requeue=True)``) waits the
  larger of the key's exponential back-off (``base * 2**failures``, capped; ``forget`` resets it
  after a success) and the controller's token bucket (``rate``/``burst``), which may go into
  debt: re-adds beyond the burst are spread at ``rate`` — client-go's default controller rate
  limiter (``MaxOf(ItemExponentialFailureRateLimiter, BucketRateLimiter)``). The bucket limits
  re-adds only: a key added because its object changed, or a requeue after a delay, is handed out
  as soon as a worker is free (a bucket on every hand-out held a burst of 1,000 new runners to
  the bucket's rate, and let a 5,000-runner resync back up for minutes).
- **Delays**: ``add_after(key, seconds)`` (``requeue_after``) on the injected clock.

And ours:

- **Fairness**: ready keys wait in one FIFO per group (the key's namespace by default) and
  ``get()`` serves the groups round-robin, so a scale set that enqueues a thousand runners cannot
  starve another namespace's single change;
- **Priorities** (``set_priority``): a controller may give a key a priority when it becomes
  ready — the EphemeralRunner controller's runners that end a hung runner (L4) above those that
  free a slot (being deleted), above creations, which can wait. A key of priority above 0 is an
  urgent key: handed out before every key of a lower priority, earliest due first among its
  equals (a delayed key is due at its ``add_after`` time, so grace deadlines come out in
  deadline order), and an urgent key re-added after an error waits for its back-off only,
  never for the token bucket.
  A waiting key whose priority rose (re-added after its object changed) moves up. Priority is
  asked again each time a key becomes ready: it is a property of the object now, not of the
  request. ``limits`` keep workers free for the higher priorities: at most ``limits[p]`` keys of
  priority ``p`` or lower are processed at a time, so the workers beyond it serve only higher
  ones even while the others are stuck in slow reconciles (a GitHub call retried for a minute).

Metrics use client-go's names with label ``name``: ``workqueue_depth``, ``workqueue_adds_total``,
``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds``,
``workqueue_retries_total``, ``workqueue_unfinished_work_seconds``,
``workqueue_longest_running_processor_seconds``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from scaleset.backoff import capped_exponential
from scaleset.clock import Clock, SystemClock
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.ratelimit import TokenBucket

K = TypeVar("K", bound=Hashable)


def namespace_group(key: object) -> str:
    """Default fairness group: the key's ``namespace`` attribute (``""`` if it has none)."""
    namespace = getattr(key, "namespace", "")
    return namespace if isinstance(namespace, str) else ""


DEFAULT_BURST = 100
"""Re-adds (after an error or a requeue) the token bucket lets through at once."""
DEFAULT_BACKOFF_BASE = 0.005
"""Seconds of the first per-key back-off, doubling per failure (controller-runtime's)."""
DEFAULT_BACKOFF_MAX = 1000.0
"""Seconds the per-key back-off grows to at most (controller-runtime's)."""


class WorkQueue(Generic[K]):
    """Dedupe, one-at-a-time per key, back-off and a rate for re-adds, delays, per-group
    fairness and priorities."""

    def __init__(
        self,
        name: str,
        *,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        rate: float = math.inf,
        burst: int = DEFAULT_BURST,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
        group_of: Callable[[K], str] = namespace_group,
    ) -> None:
        self.name = name
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._bucket = TokenBucket(rate, burst, self._clock)
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._group_of = group_of
        self._ready: OrderedDict[str, deque[tuple[K, int]]] = OrderedDict()
        """Group -> normal ready keys in arrival order, each with its entry number."""
        self._urgent: list[tuple[int, float, int, K]] = []
        """Urgent ready keys: a heap by (minus priority, due time, entry number)."""
        self._entry: dict[K, int] = {}
        """Ready key -> its live entry number (an entry with another number is stale: the key
        moved up, or was handed out)."""
        self._ready_priority: dict[K, int] = {}
        """Urgent ready key -> its priority."""
        self._limits: dict[int, int] = {}
        self._processing_priority: dict[K, int] = {}
        self._due: dict[K, float] = {}
        """Dirty key -> when it fell due: when it was added, or a delayed key's requested
        time (orders urgent keys)."""
        self._priority_of: Callable[[K], int] | None = None
        self._dirty: set[K] = set()
        self._added_at: dict[K, float] = {}
        self._processing: dict[K, float] = {}
        self._delayed: list[tuple[float, int, K]] = []
        self._delayed_at: dict[K, float] = {}
        self._seq = itertools.count()
        self._failures: dict[K, int] = {}
        self._waiters: set[asyncio.Future[None]] = set()
        self._shutting_down = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._last_activity = self._clock.monotonic()
        self._depth = self._metrics.queue_depth.labels(name)
        self._adds = self._metrics.queue_adds.labels(name)
        self._latency = self._metrics.queue_latency.labels(name)
        self._work = self._metrics.queue_work_duration.labels(name)
        self._retries = self._metrics.queue_retries.labels(name)
        self._metrics.queue_unfinished.labels(name).set_function(self.unfinished_work_seconds)
        self._metrics.queue_longest_running.labels(name).set_function(self.longest_running_seconds)
        self._depth.set(0)

    def set_priority(
        self, priority_of: Callable[[K], int], *, limits: Mapping[int, int] | None = None
    ) -> None:
        """Give keys a priority (0 and up; asked each time a key becomes ready) and, per
        priority, how many keys of that priority or lower may be processed at a time; see the
        module docstring. Set by the controller's setup, before its workers run."""
        if any(limit < 1 for limit in (limits or {}).values()):
            raise ValueError("a limit must be at least 1")
        self._priority_of = priority_of
        self._limits = dict(limits or {})

    # ------------------------------------------------------------ producers

    def add(self, key: K) -> None:
        """Queue ``key`` (deduplicated; deferred until done() if it is being processed)."""
        self._add(key, self._clock.monotonic())

    def _add(self, key: K, due: float) -> None:
        """``add``; ``due`` orders the key among urgent ones (a delayed key's requested time)."""
        if self._shutting_down:
            return
        if key in self._dirty:
            earlier = due < self._due.get(key, due)
            self._due[key] = min(due, self._due.get(key, due))
            if key in self._entry:
                self._reorder(key, earlier=earlier)
            return
        now = self._clock.monotonic()
        self._dirty.add(key)
        self._added_at[key] = now
        self._due[key] = due
        self._adds.inc()
        self._depth.set(len(self._dirty))
        if key in self._processing:
            return
        self._push_ready(key)
        self._wake()

    def add_after(self, key: K, seconds: float) -> None:
        """Queue ``key`` once ``seconds`` have passed on the clock (the earliest request wins)."""
        if self._shutting_down:
            return
        if seconds <= 0:
            self.add(key)
            return
        ready_at = self._clock.monotonic() + seconds
        current = self._delayed_at.get(key)
        if current is not None and current <= ready_at:
            return
        self._delayed_at[key] = ready_at
        heapq.heappush(self._delayed, (ready_at, next(self._seq), key))
        self._wake()

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after the larger of its exponential back-off and the token bucket's
        reservation (an urgent key: its back-off only); returns the delay chosen."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = capped_exponential(self._backoff_base, self._backoff_max, failures)
        if self._priority(key) == 0:
            delay = max(delay, self._bucket.reserve())
        self._retries.inc()
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s back-off (after a successful reconcile)."""
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)

    # ------------------------------------------------------------ consumers

    async def get(self) -> K | None:
        """The next key to process (round-robin across groups), or ``None`` once shut down."""
        while True:
            if self._shutting_down:
                return None
            now = self._clock.monotonic()
            self._promote_due(now)
            top = self._top_priority()
            if top > 0 and self._allowed(top):
                return self._hand_out(now)
            if top == 0 and self._entry and self._allowed(0):
                return self._hand_out(now)
            await self._wait(self._delayed[0][0] if self._delayed else None)

    def done(self, key: K) -> None:
        """Mark ``key`` processed; if it was added meanwhile, queue it again."""
        started = self._processing.pop(key, None)
        now = self._clock.monotonic()
        self._last_activity = now
        if started is not None:
            self._work.observe(max(0.0, now - started))
        if self._processing_priority.pop(key, None) is not None and self._limits:
            self._wake()  # a key held back by a limit may be handed out now
        if key in self._dirty and not self._shutting_down:
            self._push_ready(key)
            self._wake()
        if not self._processing:
            self._idle.set()

    def shutdown(self) -> None:
        """Stop handing out keys: waiting ``get()`` calls return ``None``; in-flight keys finish."""
        self._shutting_down = True
        self._delayed.clear()
        self._delayed_at.clear()
        self._wake()

    async def drain(self) -> None:
        """Wait until no key is being processed."""
        await self._idle.wait()

    # ------------------------------------------------------------ inspection

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        """Depth: keys waiting to be processed (queued, or re-added while processing)."""
        return len(self._dirty)

    def processing(self) -> frozenset[K]:
        return frozenset(self._processing)

    def delayed(self) -> int:
        return len(self._delayed_at)

    def urgent(self) -> int:
        """Urgent keys (priority above 0) ready to be handed out."""
        return len(self._ready_priority)

    def unfinished_work_seconds(self) -> float:
        now = self._clock.monotonic()
        return sum(now - started for started in self._processing.values())

    def longest_running_seconds(self) -> float:
        if not self._processing:
            return 0.0
        now = self._clock.monotonic()
        return max(now - started for started in self._processing.values())

    def seconds_without_progress(self) -> float:
        """How long work has been outstanding without any key being handed out or finished.

        0 when there is nothing ready and nothing in flight (an idle queue is healthy).
        """
        if not self._processing and not self._entry:
            return 0.0
        return max(0.0, self._clock.monotonic() - self._last_activity)

    # ------------------------------------------------------------ internals

    def _push_ready(self, key: K) -> None:
        """``key`` is ready: into the urgent heap (by when it fell due) or its group's FIFO."""
        if not self._entry and not self._processing:
            self._last_activity = self._clock.monotonic()  # work arrives at an idle queue
        entry = next(self._seq)
        self._entry[key] = entry
        priority = self._priority(key)
        if priority > 0:
            self._ready_priority[key] = priority
            heapq.heappush(self._urgent, (-priority, self._due.get(key, 0.0), entry, key))
            return
        group = self._group_of(key)
        queue = self._ready.get(group)
        if queue is None:
            queue = self._ready[group] = deque()
        queue.append((key, entry))

    def _priority(self, key: K) -> int:
        return max(0, self._priority_of(key)) if self._priority_of is not None else 0

    def _reorder(self, key: K, *, earlier: bool) -> None:
        """A waiting key whose priority rose, or an urgent one now due earlier, gets a new entry
        (its old one goes stale)."""
        current = self._ready_priority.get(key, 0)
        priority = max(current, self._priority(key))
        if priority == current and not (earlier and priority > 0):
            return
        entry = next(self._seq)
        self._entry[key] = entry
        self._ready_priority[key] = priority
        heapq.heappush(self._urgent, (-priority, self._due.get(key, 0.0), entry, key))
        self._wake()

    def _top_priority(self) -> int:
        """The priority of the first urgent key in line (0: none waits)."""
        while self._urgent and self._entry.get(self._urgent[0][3]) != self._urgent[0][2]:
            heapq.heappop(self._urgent)  # stale
        return -self._urgent[0][0] if self._urgent else 0

    def _allowed(self, priority: int) -> bool:
        """Whether a key of ``priority`` may be processed now: for each limit of that priority
        or above, fewer keys of that priority or lower are being processed."""
        for level, limit in self._limits.items():
            if level < priority:
                continue
            busy = sum(1 for p in self._processing_priority.values() if p <= level)
            if busy >= limit:
                return False
        return True

    def _next_normal(self) -> K:
        while True:
            group, queue = next(iter(self._ready.items()))
            key, entry = queue.popleft()
            if queue:
                self._ready.move_to_end(group)
            else:
                del self._ready[group]
            if self._entry.get(key) == entry:
                return key

    def _hand_out(self, now: float) -> K:
        if self._top_priority() > 0:
            _, _, _, key = heapq.heappop(self._urgent)
            priority = self._ready_priority.pop(key)
        else:
            key, priority = self._next_normal(), 0
        self._processing_priority[key] = priority
        del self._entry[key]
        self._due.pop(key, None)
        self._dirty.discard(key)
        self._depth.set(len(self._dirty))
        added = self._added_at.pop(key, now)
        self._latency.observe(max(0.0, now - added))
        self._processing[key] = now
        self._idle.clear()
        self._last_activity = now
        return key

    def _promote_due(self, now: float) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            ready_at, _, key = heapq.heappop(self._delayed)
            if self._delayed_at.get(key) != ready_at:
                continue  # superseded by an earlier request
            del self._delayed_at[key]
            self._add(key, ready_at)  # ordered by when it was due, not when it was promoted

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _wait(self, until: float | None) -> None:
        """Wait for a wake-up (a key added or done) or, given ``until``, for the clock to reach
        it (the next delayed key's due time)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        sleeper: asyncio.Task[None] | None = None
        try:
            if until is None:
                await waiter
            else:
                sleeper = asyncio.ensure_future(self._sleep_until(until))
                await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiters.discard(waiter)
            if not waiter.done():
                waiter.cancel()
            if sleeper is not None and not sleeper.done():
                sleeper.cancel()

    async def _sleep_until(self, until: float) -> None:
        """Sleep until the clock reads ``until``. What is left is measured when the sleep
        starts, not when it was asked for: the clock may move in between (a task starts only
        at the loop's next turn), and a wait measured earlier would overshoot the due time by
        as much."""
        await self._clock.sleep(max(0.0, until - self._clock.monotonic()))
