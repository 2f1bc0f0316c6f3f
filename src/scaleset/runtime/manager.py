"""The manager: runs informers, leader election, controllers and the probe/metrics servers.

Life of a manager process:

1. Probe and metrics servers start (``/healthz``, ``/readyz``, ``/metrics``).
2. Informers start on every replica (a standby keeps warm caches; ``/readyz`` = all synced).
3. The manager campaigns for the Lease. Once leading, each controller waits for its informers,
   queues every primary object and runs its workers; leader-only tasks start too. Every task is
   supervised (a crash restarts it; a crash loop turns ``/healthz`` red).
4. **Loss of leadership** cancels all in-flight work at once and ``run()`` raises
   ``LeadershipLost`` (the process exits and is restarted — controller-runtime's behaviour; no
   state survives into a later term by construction).
5. **``stop()``** (SIGTERM): queues stop handing out keys, in-flight reconciles get
   ``graceful_shutdown`` seconds to finish, pending Events are flushed, the lease is released
   (so a successor starts at once), informers and servers stop, and ``run()`` returns.

Its informers freeze the cycle collector while they relist, then unfreeze and collect once the
last relist ends (``freeze_gc``, see ``runtime.collector``). ``/healthz`` is red when a supervised
task crash-loops, or when a running controller has had work outstanding with no progress (no key
handed out or finished) for ``stall_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from prometheus_client import REGISTRY, CollectorRegistry

from scaleset.clock import Clock, SystemClock, run_with_deadline
from scaleset.kube.client import DEFAULT_PAGE_SIZE, KubeClient
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.resources import Kind
from scaleset.logs import get_logger
from scaleset.runtime.controller import Controller, QueueSettings, Reconcile
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.informer import ALL_NAMESPACES, DEFAULT_WATCH_TIMEOUT
from scaleset.runtime.informer_set import InformerSet
from scaleset.runtime.leader import LeaderElectionConfig, LeaderElector, LeadershipLost
from scaleset.runtime.probes import ProbeServer, parse_bind_address
from scaleset.runtime.supervise import (
    DEFAULT_MAX_RESTARTS,
    DEFAULT_RESTART_BACKOFF,
    DEFAULT_RESTART_WINDOW,
    Supervisor,
)

log = get_logger(__name__)

TaskFactory = Callable[[], Awaitable[None]]


DEFAULT_RECONCILE_DEADLINE = 300.0
"""Real seconds a reconcile may run before it is cancelled and re-queued (half the stall
detector's 600 s, so a hung reconcile is cut off long before liveness would restart the
process)."""


class _ShutdownComplete(Exception):
    """Internal: the graceful stop sequence finished; unwinds the task groups."""


@dataclass(frozen=True)
class ManagerSettings:
    """How the manager runs (addresses use Go syntax: ``:8080``; ``0``/empty disables)."""

    election: LeaderElectionConfig
    namespaces: Sequence[str] = ALL_NAMESPACES
    metrics_address: str = ":8080"
    probe_address: str = "0"
    graceful_shutdown: float = 30.0
    stall_seconds: float = 600.0
    reconcile_deadline: float | None = DEFAULT_RECONCILE_DEADLINE
    watch_timeout: int = DEFAULT_WATCH_TIMEOUT
    page_size: int = DEFAULT_PAGE_SIZE
    event_component: str = "scaleset-controller"
    restart_backoff: tuple[float, float] = DEFAULT_RESTART_BACKOFF
    max_restarts: int = DEFAULT_MAX_RESTARTS
    restart_window: float = DEFAULT_RESTART_WINDOW
    freeze_gc: bool = True
    resync_period: float | None = None
    remote_weather: tuple[type[Exception], ...] = ()
    """Errors of a remote service (GitHub) that did not answer: a reconcile they end is logged
    in one line, without a traceback, and retried with back-off."""
    extra_checks: dict[str, Callable[[], tuple[bool, str]]] = field(default_factory=dict)


class Manager:
    """Owns the shared informers, the controllers, leader election and the HTTP endpoints."""

    def __init__(
        self,
        client: KubeClient,
        settings: ManagerSettings,
        *,
        election_client: KubeClient | None = None,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        """``client`` serves the informers, controllers and events; ``election_client`` the
        lease. Production gives the lease a client of its own (own rate limiter and connection
        pools, as controller-runtime does), so renewals never queue behind reconcile traffic;
        without one, the elector shares ``client``."""
        self.client = client
        self.settings = settings
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._registry = registry or (metrics.registry if metrics is not None else REGISTRY)
        self.informers = InformerSet(
            client,
            namespaces=settings.namespaces,
            watch_timeout=settings.watch_timeout,
            page_size=settings.page_size,
            clock=self._clock,
            metrics=self._metrics,
            freeze_gc=settings.freeze_gc,
        )
        self.events = EventRecorder(
            client,
            component=settings.event_component,
            instance=settings.election.identity,
            clock=self._clock,
            metrics=self._metrics,
        )
        self.elector = LeaderElector(
            election_client or client, settings.election, clock=self._clock, metrics=self._metrics
        )
        self.supervisor = Supervisor(
            clock=self._clock,
            metrics=self._metrics,
            max_restarts=settings.max_restarts,
            window=settings.restart_window,
            backoff_initial=settings.restart_backoff[0],
            backoff_max=settings.restart_backoff[1],
            propagate=(LeadershipLost, _ShutdownComplete),
        )
        self.controllers: list[Controller] = []
        self._leader_tasks: list[tuple[str, TaskFactory]] = []
        self._tasks: list[tuple[str, TaskFactory]] = []
        self._stop = asyncio.Event()
        self.leading = asyncio.Event()
        self.servers: list[ProbeServer] = []

    # ------------------------------------------------------------- building

    def controller(
        self,
        name: str,
        *,
        for_kind: Kind,
        reconcile: Reconcile,
        workers: int = 1,
        label_selector: str | None = None,
        namespaces: Sequence[str] | None = None,
        queue: QueueSettings | None = None,
        resync_period: float | None = None,
        reconcile_deadline: float | None = None,
    ) -> Controller:
        """Register a controller (run while this process leads); ``resync_period`` defaults to
        the manager's (``--sync-period``) when ``None``; ``0`` disables the periodic resync."""
        if any(existing.name == name for existing in self.controllers):
            raise ValueError(f"controller {name!r} registered twice")
        controller = Controller(
            name,
            for_kind=for_kind,
            reconcile=reconcile,
            informers=self.informers,
            workers=workers,
            label_selector=label_selector,
            namespaces=namespaces,
            queue=queue,
            resync_period=self.settings.resync_period if resync_period is None else resync_period,
            reconcile_deadline=(
                self.settings.reconcile_deadline
                if reconcile_deadline is None
                else reconcile_deadline
            ),
            clock=self._clock,
            metrics=self._metrics,
            remote_weather=self.settings.remote_weather,
        )
        self.controllers.append(controller)
        return controller

    def add_leader_task(self, name: str, factory: TaskFactory) -> None:
        """A supervised task that runs only while leading (periodic passes, for instance)."""
        self._leader_tasks.append((name, factory))

    def add_task(self, name: str, factory: TaskFactory) -> None:
        """A supervised task that runs on every replica for the life of the manager."""
        self._tasks.append((name, factory))

    # -------------------------------------------------------------- probes

    def health(self) -> tuple[bool, str]:
        """Liveness: no crash-looping task, no running controller stalled with work waiting."""
        problems = [f"task {name} is crash-looping" for name in self.supervisor.failing()]
        for controller in self.controllers:
            if not controller.running:
                continue
            stalled = controller.queue.seconds_without_progress()
            if stalled > self.settings.stall_seconds:
                problems.append(
                    f"controller {controller.name}: no progress for {stalled:.0f}s "
                    f"({len(controller.queue)} waiting)"
                )
        for name, check in self.settings.extra_checks.items():
            ok, detail = check()
            if not ok:
                problems.append(f"{name}: {detail}")
        return (not problems, "; ".join(problems) or "ok")

    def ready(self) -> tuple[bool, str]:
        """Readiness: every informer has completed its first list."""
        waiting = self.informers.unsynced()
        if waiting:
            return False, "informers not synced: " + ", ".join(repr(i) for i in waiting)
        return True, "ok"

    # -------------------------------------------------------------- running

    def stop(self) -> None:
        """Ask for a graceful shutdown (safe to call from a signal handler)."""
        self._stop.set()

    async def run(self) -> None:
        """Run until ``stop()`` (returns) or loss of leadership (raises ``LeadershipLost``)."""
        await self._start_servers()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.supervisor.run("informers", self.informers.run))
                group.create_task(self.supervisor.run("events", self.events.run))
                for name, factory in self._tasks:
                    group.create_task(self.supervisor.run(name, factory))
                group.create_task(self._lead())
        except* _ShutdownComplete:
            log.info("manager stopped")
        except* LeadershipLost as lost:
            raise LeadershipLost(str(lost.exceptions[0])) from None
        finally:
            await self._stop_servers()

    async def _lead(self) -> None:
        acquire = asyncio.ensure_future(self.elector.acquire())
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({acquire, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not acquire.done():
                acquire.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await acquire
            stop.cancel()
        if self._stop.is_set() or not acquire.done() or acquire.cancelled():
            # Stopped while campaigning — possibly just as the acquiring write landed (the two
            # finish together, or the write reached the server before its answer was read):
            # the lease must not stay held by a process that is going away.
            await self.elector.release()
            raise _ShutdownComplete
        acquire.result()
        self.leading.set()
        names = ", ".join(c.name for c in self.controllers) or "none"
        log.info("leading: starting controllers", controllers=names)
        try:
            async with asyncio.TaskGroup() as session:
                session.create_task(self.elector.hold())
                for controller in self.controllers:
                    session.create_task(self.supervisor.run(controller.name, controller.run))
                for name, factory in self._leader_tasks:
                    session.create_task(self.supervisor.run(name, factory))
                session.create_task(self._graceful_stop())
        finally:
            self.leading.clear()
            if self._stop.is_set():
                await self.elector.release()

    async def _graceful_stop(self) -> None:
        await self._stop.wait()
        log.info("stopping: finishing in-flight work", timeout=self.settings.graceful_shutdown)
        for controller in self.controllers:
            controller.shutdown()
        try:
            await run_with_deadline(
                self._clock,
                self.settings.graceful_shutdown,
                asyncio.gather(*(c.queue.drain() for c in self.controllers)),
            )
        except TimeoutError:
            log.warning("in-flight work did not finish in time; cancelling it")
        with contextlib.suppress(TimeoutError):
            await run_with_deadline(self._clock, 2.0, self.events.flush())
        raise _ShutdownComplete

    async def _start_servers(self) -> None:
        metrics_at = parse_bind_address(self.settings.metrics_address)
        probes_at = parse_bind_address(self.settings.probe_address)
        if metrics_at is not None and metrics_at == probes_at:
            self.servers.append(
                ProbeServer(
                    *metrics_at, health=self.health, ready=self.ready, registry=self._registry
                )
            )
        else:
            if metrics_at is not None:
                self.servers.append(ProbeServer(*metrics_at, registry=self._registry))
            if probes_at is not None:
                self.servers.append(ProbeServer(*probes_at, health=self.health, ready=self.ready))
        started: list[ProbeServer] = []
        try:
            for server in self.servers:
                await server.start()
                started.append(server)
                log.info(
                    "serving",
                    address=f"{server.host}:{server.bound_port}",
                    endpoints=", ".join(server.endpoints),
                )
        except OSError:
            for server in started:
                await server.stop()
            raise

    async def _stop_servers(self) -> None:
        for server in self.servers:
            await server.stop()
