"""The listener process as the simulated kubelet runs it in the listener pod: ``scaleset
listener``'s pieces (config from ``$LISTENER_CONFIG_PATH``, the message loop, the Event
recorder) built as ``scaleset.listener.main.serve`` builds them, with two seams a pod gives for
free and a test must provide:

- the Kubernetes client acts as the pod's ServiceAccount (impersonation over the backend's
  admin credentials), so every request the listener makes is authorized by the Role the
  controller generated — any 403 shows up as an exit or a dropped Event;
- the clock is the test's ``ManualClock``.

Every request is recorded (``AccessRecorder``, and each answer's status in ``statuses``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx2
from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend

from scaleset.clock import ManualClock
from scaleset.devtools.transports import ImpersonatingTransport, ServiceAccountRef
from scaleset.embedded.kubelet import ContainerRun, Program
from scaleset.github import ActionsClient, ProxyConfig, SystemInfo
from scaleset.kube import KubeClient
from scaleset.kube.access import AccessRecorder
from scaleset.kube.client import ClientSettings
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.listener.config import CONFIG_PATH_ENV, ListenerConfigError, parse_config
from scaleset.listener.exits import EXIT_CONFIG, ListenerExit
from scaleset.listener.loop import Listener, LoopSettings
from scaleset.listener.main import identity_of
from scaleset.listener.metrics import ListenerMetrics
from scaleset.runtime.events import EventRecorder

FAST = ClientSettings(qps=1000.0, burst=1000, timeout=30.0, watch_read_grace=2.0)
LOOP = LoopSettings(patch_interval=0.3, poison_cap=3, retry_initial=1.0, retry_max=8.0)


class _StatusRecording(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, statuses: list[tuple[str, str, int]]):
        self._inner = inner
        self._statuses = statuses

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        self._statuses.append((request.method, request.url.path, response.status_code))
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class ListenerRecord:
    """What listener processes did, across every pod they ran in."""

    access: AccessRecorder = field(default_factory=AccessRecorder)
    statuses: list[tuple[str, str, int]] = field(default_factory=list)
    exits: list[int] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    """``repr`` of each config read (no secrets)."""
    dropped_events: list[float] = field(default_factory=list)
    listeners: list[Listener] = field(default_factory=list)

    def forbidden(self) -> list[tuple[str, str, int]]:
        return [entry for entry in self.statuses if entry[2] == 403]


def service_account_client(
    backend: KubeBackend,
    account: ServiceAccountRef,
    clock: ManualClock,
    *,
    access: AccessRecorder | None = None,
    statuses: list[tuple[str, str, int]] | None = None,
    metrics: RuntimeMetrics | None = None,
) -> KubeClient:
    """Our production client acting as ``account`` (requests' statuses recorded if asked)."""
    transport: httpx2.AsyncBaseTransport = ImpersonatingTransport.as_service_account(
        backend.transport(), account
    )
    if statuses is not None:
        transport = _StatusRecording(transport, statuses)
    return KubeClient.from_config(
        backend.config(),
        settings=FAST,
        transport=transport,
        access=access,
        metrics=metrics or RuntimeMetrics(CollectorRegistry()),
        clock=clock,
    )


def listener_program(
    backend: KubeBackend,
    clock: ManualClock,
    record: ListenerRecord,
    *,
    prepare: Callable[[Listener], None] | None = None,
) -> Program:
    """The listener container: reads the mounted config, runs the loop as the pod's
    ServiceAccount (named like the pod, as the controller names it) until SIGTERM; exits with
    the listener's exit codes."""

    async def program(run: ContainerRun) -> int:
        path = run.env.get(CONFIG_PATH_ENV, "")
        try:
            config = parse_config(run.files[path])
        except (KeyError, ListenerConfigError):
            record.exits.append(EXIT_CONFIG)
            return EXIT_CONFIG
        record.configs.append(repr(config))
        registry = CollectorRegistry()
        metrics = ListenerMetrics(identity_of(config), config.metrics, registry=registry)
        kube = service_account_client(
            backend,
            ServiceAccountRef(run.pod.namespace, run.pod.name),
            clock,
            access=record.access,
            statuses=record.statuses,
            metrics=metrics.runtime,
        )
        actions = ActionsClient(
            config.configure_url,
            config.credentials(),
            system_info=SystemInfo(scale_set_id=config.runner_scale_set_id, subsystem="test"),
            root_ca_pem=config.server_root_ca or None,
            proxy=ProxyConfig(),
            environ={},
            clock=clock,
            metrics=metrics.github,
        )
        events = EventRecorder(
            kube, component="scaleset-listener", clock=clock, metrics=metrics.runtime
        )
        listener = Listener(
            config,
            actions,
            kube,
            owner=run.pod.name,
            clock=clock,
            metrics=metrics,
            events=events,
            settings=LOOP,
        )
        record.listeners.append(listener)
        if prepare is not None:
            prepare(listener)
        events_task = asyncio.create_task(events.run())
        stop = asyncio.Event()

        async def relay() -> None:
            await run.stop.wait()
            stop.set()

        relay_task = asyncio.create_task(relay())
        code = 0
        try:
            await listener.run(stop)
        except ListenerExit as exit_:
            code = exit_.code
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(events.flush(), 5.0)
            for task in (events_task, relay_task):
                task.cancel()
            await asyncio.gather(events_task, relay_task, return_exceptions=True)
            dropped = registry.get_sample_value(
                "scaleset_kube_events_dropped_total", {"cause": "post_failed"}
            )
            record.dropped_events.append(dropped or 0.0)
            await actions.aclose()
            await kube.close()
        record.exits.append(code)
        return code

    return program
