"""A controller: a reconcile function fed by informer events through a work queue, N workers.

``reconcile(key)`` is level-triggered: it reads the world (caches, fresh GETs), decides, acts,
and returns a ``Result`` (or ``None`` for "done"). It never depends on which event woke it. The
controller routes events to keys:

- the primary kind: every change enqueues the object's own key;
- ``owns(kind)``: a change to an owned object enqueues its controller owner of the primary kind;
- ``watches(kind, map_fn)``: any mapping from an event to keys (cross-namespace owners, labels).

Outcomes (controller-runtime's semantics): ``Result()`` forgets the key's back-off;
``Result(requeue_after=s)`` with ``s > 0`` re-queues after ``s`` seconds (``0`` means no delayed
requeue, as in Go); ``Result(requeue=True)`` and an exception re-queue with per-key exponential
back-off (the exception is logged with the reconcile's context, never re-raised — one bad object
must not stop the others). A ``Conflict`` (someone else wrote first: the optimistic lock doing
its job) re-queues the same way but is logged at debug level without a traceback and counted as
result ``conflict``, not as an error. Cancellation (loss of leadership, shutdown) propagates.

Each reconcile has a deadline (``reconcile_deadline`` seconds; the manager's default is 300 s,
inside its 600 s stall detector): a reconcile still running then is cancelled, counted (result
``deadline`` and an error), logged as a warning without a traceback and re-queued with back-off,
and its worker takes the next key. So one object whose calls hang (a tenant whose GitHub never
answers) holds one worker for a bounded time, never the controller. The deadline is real time
(the event loop's), as the GitHub client's per-attempt deadlines are: it bounds hung I/O. On the
injected clock it would add a wake-up per reconcile, and a test driving a ``ManualClock`` from
wake-up to wake-up would move virtual time while requests are on the wire; nor should virtual
time a reconcile legitimately waits on (a retry back-off) cut it off.

Each reconcile runs with log context ``controller``, ``kind``, ``namespace``, ``name``,
``reconcile_id``, and sends its requests in the client's lane of the controller and the key's
namespace: while requests wait for the client's QPS, each controller and each namespace (each
tenant) gets its turn (``scaleset.kube.throttle``).
"""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from scaleset.clock import Clock, SystemClock, run_with_deadline
from scaleset.kube.errors import Conflict, KubeTransportError, ServerError, TooManyRequests
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import Kind
from scaleset.kube.throttle import in_lane
from scaleset.logs import bound_context, get_logger
from scaleset.runtime.informer import Informer
from scaleset.runtime.informer_set import InformerSet
from scaleset.runtime.store import InformerEvent
from scaleset.runtime.workqueue import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_MAX,
    DEFAULT_BURST,
    WorkQueue,
    namespace_group,
)

log = get_logger(__name__)


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next: nothing, a delayed requeue, or a backed-off requeue.

    ``requeue_after`` of ``None`` or ``0`` asks for no delayed requeue (controller-runtime)."""

    requeue_after: float | None = None
    requeue: bool = False


Reconcile = Callable[[ObjectKey], Awaitable[Result | None]]


class _DeadlinePassed(Exception):
    """Internal: the reconcile was cancelled at its deadline."""


MapFn = Callable[[InformerEvent], Iterable[ObjectKey]]


@dataclass(frozen=True)
class QueueSettings:
    """Work-queue tunables of one controller (defaults: controller-runtime's back-off).
    ``rate``/``burst`` limit re-adds after an error or a ``requeue`` only (``WorkQueue``)."""

    rate: float = math.inf
    burst: int = DEFAULT_BURST
    backoff_base: float = DEFAULT_BACKOFF_BASE
    backoff_max: float = DEFAULT_BACKOFF_MAX


class Controller:
    """Reconciles keys of ``for_kind`` with ``workers`` concurrent workers (one per key)."""

    def __init__(
        self,
        name: str,
        *,
        for_kind: Kind,
        reconcile: Reconcile,
        informers: InformerSet,
        workers: int = 1,
        label_selector: str | None = None,
        namespaces: Sequence[str] | None = None,
        queue: QueueSettings | None = None,
        group_of: Callable[[ObjectKey], str] = namespace_group,
        resync_period: float | None = None,
        reconcile_deadline: float | None = None,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        remote_weather: tuple[type[Exception], ...] = (),
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be at least 1")
        if resync_period is not None and resync_period < 0:
            raise ValueError(f"controller {name}: resync_period must not be negative")
        self.resync_period = resync_period or None  # 0 (or None): no periodic resync
        self.reconcile_deadline = reconcile_deadline
        self.remote_weather = remote_weather
        """Errors of a remote service that did not answer (its retries spent): logged in one line
        without a traceback and retried with back-off, like the API server's own 5xx."""
        self._weather: tuple[type[Exception], ...] = (
            ServerError,
            TooManyRequests,
            KubeTransportError,
            *remote_weather,
        )
        self._stopped = asyncio.Event()
        self.name = name
        self.kind = for_kind
        self.workers = workers
        self._reconcile = reconcile
        self._informers = informers
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        settings = queue or QueueSettings()
        self.queue: WorkQueue[ObjectKey] = WorkQueue(
            name,
            clock=self._clock,
            metrics=self._metrics,
            rate=settings.rate,
            burst=settings.burst,
            backoff_base=settings.backoff_base,
            backoff_max=settings.backoff_max,
            group_of=group_of,
        )
        self._running = False
        self._sources: list[Informer] = []
        self.informer = informers.informer(
            for_kind, label_selector=label_selector, namespaces=namespaces
        )
        self._sources.append(self.informer)
        self.informer.add_handler(self._on_primary)
        self._metrics.max_concurrent_reconciles.labels(name).set(workers)
        self._active = self._metrics.active_workers.labels(name)
        self._active.set(0)

    def __repr__(self) -> str:
        return f"Controller({self.name}, {self.kind.kind}, workers={self.workers})"

    # ------------------------------------------------------------- wiring

    def watches(
        self,
        kind: Kind,
        map_fn: MapFn,
        *,
        label_selector: str | None = None,
        namespaces: Sequence[str] | None = None,
        delay: float = 0.0,
    ) -> Informer:
        """Enqueue ``map_fn(event)`` for every change of ``kind``; returns the informer used.
        With ``delay``, a key is queued ``delay`` seconds after the first change that maps to
        it, and the changes until then come to one reconcile (a key already waiting keeps its
        earlier time)."""
        informer = self.reads(kind, label_selector=label_selector, namespaces=namespaces)

        def handler(event: InformerEvent) -> None:
            for key in map_fn(event):
                self.enqueue_after(key, delay)

        informer.add_handler(handler)
        return informer

    def reads(
        self,
        kind: Kind,
        *,
        label_selector: str | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> Informer:
        """A cache of ``kind`` this controller reads without reacting to its changes: shared
        with any controller watching the same objects; the workers start once it is synced."""
        informer = self._informers.informer(
            kind, label_selector=label_selector, namespaces=namespaces
        )
        self._sources.append(informer)
        return informer

    def owns(
        self,
        kind: Kind,
        *,
        label_selector: str | None = None,
        namespaces: Sequence[str] | None = None,
        delay: float = 0.0,
    ) -> Informer:
        """Enqueue the controller owner (of the primary kind) of every changed ``kind`` object
        (``delay``: as in ``watches``)."""
        return self.watches(
            kind,
            self._owner_keys,
            label_selector=label_selector,
            namespaces=namespaces,
            delay=delay,
        )

    def _owner_keys(self, event: InformerEvent) -> Iterable[ObjectKey]:
        owner = event.obj.controller_owner
        if owner is None or owner.kind != self.kind.kind:
            return ()
        if owner.api_version != self.kind.api_version:
            return ()
        return (ObjectKey(event.obj.namespace, owner.name),)

    def _on_primary(self, event: InformerEvent) -> None:
        self.enqueue(event.obj.key)

    def enqueue(self, key: ObjectKey) -> None:
        """Queue ``key`` now (ignored while the controller is not running, e.g. not leading)."""
        if self._running:
            self.queue.add(key)

    def enqueue_after(self, key: ObjectKey, seconds: float) -> None:
        """Queue ``key`` once ``seconds`` have passed (at once when ``seconds`` ≤ 0)."""
        if self._running:
            self.queue.add_after(key, seconds)

    # ------------------------------------------------------------- running

    @property
    def running(self) -> bool:
        return self._running

    @property
    def sources(self) -> tuple[Informer, ...]:
        return tuple(self._sources)

    async def run(self) -> None:
        """Wait for this controller's informers, queue every primary object, run the workers.

        Returns when the queue is shut down and the workers have finished their keys.
        """
        for informer in self._sources:
            await informer.wait_synced()
        self._running = True
        try:
            for obj in self.informer.list():
                self.queue.add(obj.key)
            log.info("controller started", controller=self.name, workers=self.workers)
            async with asyncio.TaskGroup() as group:
                for index in range(self.workers):
                    group.create_task(self._worker(), name=f"{self.name}-worker-{index}")
                if self.resync_period is not None:
                    group.create_task(self._resync(self.resync_period), name=f"{self.name}-resync")
        finally:
            self._running = False

    def shutdown(self) -> None:
        """Stop handing out keys; in-flight reconciles finish (see ``WorkQueue.drain``)."""
        self._running = False
        self._stopped.set()
        self.queue.shutdown()

    async def _resync(self, period: float) -> None:
        """Every ``period`` (jittered +10%), queue every primary object again (``--sync-period``):
        a safety net for level-triggered reconciles, never the way time-based work is scheduled
        (that is ``Result(requeue_after=...)``)."""
        while not self._stopped.is_set():
            try:
                await run_with_deadline(
                    self._clock,
                    period * (1.0 + 0.1 * random.random()),  # noqa: S311 - jitter
                    self._stopped.wait(),
                )
            except TimeoutError:
                for obj in self.informer.list():
                    self.enqueue(obj.key)

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            if key is None:
                return
            try:
                await self._process(key)
            finally:
                self.queue.done(key)

    async def _reconcile_within_deadline(self, key: ObjectKey) -> Result | None:
        """``reconcile(key)``, cancelled once ``reconcile_deadline`` real seconds have passed
        (``_DeadlinePassed``). The reconcile runs in a task of its own (it inherits the log
        context), so the deadline never leaves a stray cancellation in the worker, and a
        ``TimeoutError`` the reconcile raises itself stays an ordinary error."""
        if self.reconcile_deadline is None:
            return await self._reconcile(key)
        work = asyncio.ensure_future(self._reconcile(key))
        try:
            await asyncio.wait({work}, timeout=self.reconcile_deadline)
        except asyncio.CancelledError:
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
            raise
        if work.done():
            return work.result()
        work.cancel()
        await asyncio.gather(work, return_exceptions=True)
        raise _DeadlinePassed

    async def _process(self, key: ObjectKey) -> None:
        reconcile_id = str(uuid.uuid4())
        started = self._clock.monotonic()
        self._active.inc()
        outcome = "success"
        try:
            with (
                in_lane(f"{self.name}/{key.namespace}"),
                bound_context(
                    controller=self.name,
                    kind=self.kind.kind,
                    namespace=key.namespace,
                    name=key.name,
                    reconcile_id=reconcile_id,
                ),
            ):
                try:
                    result = await self._reconcile_within_deadline(key)
                except asyncio.CancelledError:
                    outcome = "cancelled"
                    raise
                except Conflict as conflict:
                    # someone else wrote first: the optimistic lock at work, not a failure
                    outcome = "conflict"
                    delay = self.queue.add_rate_limited(key)
                    log.debug(
                        "reconcile met a conflict",
                        conflict=str(conflict),
                        retry_in=round(delay, 3),
                    )
                    return
                except _DeadlinePassed:
                    outcome = "deadline"
                    self._metrics.reconcile_errors.labels(self.name).inc()
                    delay = self.queue.add_rate_limited(key)
                    log.warning(
                        "reconcile ran past its deadline; cancelled",
                        deadline_seconds=self.reconcile_deadline,
                        retry_in=round(delay, 3),
                    )
                    return
                except self._weather as unwell:
                    # the weather, not a bug: the API server's (a 5xx, a 429, no answer) or a
                    # remote service's (GitHub's retries spent): one line, no traceback
                    outcome = "error"
                    self._metrics.reconcile_errors.labels(self.name).inc()
                    delay = self.queue.add_rate_limited(key)
                    whose = (
                        "a remote service"
                        if isinstance(unwell, self.remote_weather)
                        else "the API server"
                    )
                    log.warning(
                        f"reconcile interrupted: {whose} did not answer; retrying",
                        error=f"{type(unwell).__name__}: {unwell}",
                        retry_in=round(delay, 3),
                    )
                    return
                except Exception:
                    outcome = "error"
                    self._metrics.reconcile_errors.labels(self.name).inc()
                    delay = self.queue.add_rate_limited(key)
                    log.exception("reconcile failed", retry_in=round(delay, 3))
                    return
            if result is not None and result.requeue_after is not None and result.requeue_after > 0:
                outcome = "requeue_after"
                self.queue.forget(key)
                self.queue.add_after(key, result.requeue_after)
            elif result is not None and result.requeue:
                outcome = "requeue"
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
        finally:
            self._active.dec()
            if outcome != "cancelled":
                self._metrics.reconcile_total.labels(self.name, outcome).inc()
                self._metrics.reconcile_time.labels(self.name).observe(
                    max(0.0, self._clock.monotonic() - started)
                )
