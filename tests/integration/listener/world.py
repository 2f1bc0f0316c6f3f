"""The world a listener lives in, for the loop tests: the fake GitHub service (its message queue
on its own host and port, as on github.com), a scale set on it,
an EphemeralRunnerSet (and runners) in a fresh namespace on the test backend, and listeners built
exactly as production builds them, all on one ``ManualClock``.

``World.start()`` runs a listener as a task; ``stop()`` is its SIGTERM. ``World.wait(...)`` waits
for a condition while letting virtual time pass (back-offs, job durations).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from tests.integration.listener.runners import SentRequests, make_runner, runner_set_body
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube import make_client
from tests.support.waiting import eventually

from scaleset.api.listener_state import ListenerState
from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, FakeSettings
from scaleset.embedded.actions.faults import Surface
from scaleset.github import ActionsClient, PersonalAccessToken, ProxyConfig, SystemInfo
from scaleset.github.tls import tls_context
from scaleset.github.transport import ProxyRoutingTransport
from scaleset.kube import KubeClient, KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from scaleset.listener.config import ListenerConfig, parse_config
from scaleset.listener.loop import Listener, LoopSettings
from scaleset.listener.metrics import ListenerMetrics, ScaleSetIdentity
from scaleset.runtime.events import EventRecorder

PAT = "ghp_listenerLoopTests0123456789abcdefgh"
SCALE_SET = "arc"
RUNNER_SET = "arc-runners"
OWNER = "arc-754b578d-listener"
FAST = LoopSettings(
    patch_interval=0.3,
    poison_cap=3,
    retry_initial=1.0,
    retry_max=8.0,
    session_conflict_initial=5.0,
    session_conflict_max=20.0,
)


@dataclass
class RunningListener:
    listener: Listener
    task: asyncio.Task[None]
    stop_event: asyncio.Event
    kube: KubeClient
    actions: ActionsClient
    events: EventRecorder
    events_task: asyncio.Task[None]

    async def stop(self) -> None:
        """SIGTERM: stop, let it delete its session, then close its clients."""
        self.stop_event.set()
        try:
            await asyncio.wait_for(asyncio.shield(self.task), 20)
        finally:
            await self.close()

    async def kill(self) -> None:
        """kill -9: the task dies where it is; nothing is cleaned up on GitHub's side."""
        self.task.cancel()
        self.listener.sessions.session = None  # a killed process deletes nothing
        await asyncio.gather(self.task, return_exceptions=True)
        await self.close()

    async def close(self) -> None:
        self.events_task.cancel()
        await asyncio.gather(self.events_task, return_exceptions=True)
        await self.kube.close()
        await self.actions.aclose()


@dataclass
class World:
    backend: KubeBackend
    admin: KubeClient
    namespace: str
    fake: FakeGitHub
    clock: ManualClock
    scale_set_id: int
    min_runners: int = 0
    max_runners: int = 10
    sent: SentRequests = field(default_factory=SentRequests)
    metrics: ListenerMetrics | None = None
    github_wrap: Callable[[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport] | None = None
    """Wraps the transport of the listeners' GitHub client (a seam to watch or gate its
    requests); the production transport inside it is unchanged."""

    @property
    def config(self) -> ListenerConfig:
        return parse_config(
            {
                "configure_url": self.fake.config_url("acme"),
                "github_token": PAT,
                "ephemeral_runner_set_namespace": self.namespace,
                "ephemeral_runner_set_name": RUNNER_SET,
                "min_runners": self.min_runners,
                "max_runners": self.max_runners,
                "runner_scale_set_id": self.scale_set_id,
                "runner_scale_set_name": SCALE_SET,
            }
        )

    @property
    def runner_set_key(self) -> ObjectKey:
        return ObjectKey(self.namespace, RUNNER_SET)

    def build(
        self, owner: str = OWNER, settings: LoopSettings = FAST
    ) -> tuple[Listener, KubeClient, ActionsClient, EventRecorder]:
        config = self.config
        metrics = ListenerMetrics(
            ScaleSetIdentity(RUNNER_SET, self.namespace, organization="acme"),
            config.metrics,
            registry=CollectorRegistry(),
        )
        self.metrics = metrics
        kube = make_client(
            self.backend, wrap=self.sent.wrap, metrics=metrics.runtime, clock=self.clock
        )
        actions = ActionsClient(
            config.configure_url,
            config.credentials(),
            system_info=SystemInfo(
                scale_set_id=config.runner_scale_set_id, subsystem="ghalistener"
            ),
            proxy=ProxyConfig(),
            environ={},
            clock=self.clock,
            metrics=metrics.github,
            transport=self._github_transport(),
        )
        events = EventRecorder(kube, component="scaleset-listener", clock=self.clock)
        listener = Listener(
            config,
            actions,
            kube,
            owner=owner,
            clock=self.clock,
            metrics=metrics,
            events=events,
            settings=settings,
        )
        return listener, kube, actions, events

    def _github_transport(self) -> httpx2.AsyncBaseTransport | None:
        if self.github_wrap is None:
            return None
        limits = httpx2.Limits(max_connections=20, max_keepalive_connections=20)
        return self.github_wrap(
            ProxyRoutingTransport(ProxyConfig(), tls_context(None, verify=True), limits)
        )

    def start(self, owner: str = OWNER, settings: LoopSettings = FAST) -> RunningListener:
        listener, kube, actions, events = self.build(owner, settings)
        stop = asyncio.Event()
        task = asyncio.create_task(listener.run(stop))
        events_task = asyncio.create_task(events.run())
        return RunningListener(listener, task, stop, kube, actions, events, events_task)

    async def wait(
        self,
        condition: Callable[[], bool] | Callable[[], Awaitable[bool]],
        what: str,
        *,
        within: float = 30.0,
    ) -> None:
        await eventually(condition, clock=self.clock, within=within, what=what, max_step=10.0)

    # ------------------------------------------------------------------- observations

    async def runner_set(self) -> KubeObject:
        return await self.admin.get(EPHEMERAL_RUNNER_SET, self.runner_set_key)

    async def state(self) -> ListenerState:
        return ListenerState.of((await self.runner_set()).annotations)

    async def runner(self, name: str) -> KubeObject:
        return await self.admin.get(EPHEMERAL_RUNNER, ObjectKey(self.namespace, name))

    def ers_patches(self) -> list[dict[str, Any]]:
        """Desired-count patches the listener sent (those carrying ``spec``)."""
        return [b for b in self.sent.patches(f"/ephemeralrunnersets/{RUNNER_SET}") if "spec" in b]

    def sessions(self) -> list[Any]:
        return [
            s for s in self.fake.control.snapshot().sessions if s.scale_set_id == self.scale_set_id
        ]

    def counter(self, name: str, labels: dict[str, str] | None = None) -> float:
        assert self.metrics is not None
        value = self.metrics.registry.get_sample_value(name, labels or {})
        return value or 0.0

    # ----------------------------------------------------------------------- set-up

    async def add_runner(self, name: str, status: dict[str, Any] | None = None) -> KubeObject:
        return await make_runner(self.admin, self.namespace, name, status or {"phase": "Pending"})

    def inject_messages(self, *messages: dict[str, Any]) -> None:
        """The next polls are answered with these messages, in order (200, JSON)."""
        for message in messages:
            self.fake.control.faults.fail_next(
                1,
                200,
                body=json.dumps(message),
                content_type="application/json",
                surface=Surface.MESSAGE_QUEUE,
                method="GET",
            )


def job_message(message_id: int, jobs: list[dict[str, Any]], **statistics: int) -> dict[str, Any]:
    """An outer queue message holding ``jobs`` (double-encoded, as the service sends it)."""
    return {
        "messageId": message_id,
        "messageType": "RunnerScaleSetJobMessages",
        "body": json.dumps(jobs),
        "statistics": {
            "totalAvailableJobs": 0,
            "totalAcquiredJobs": 0,
            "totalAssignedJobs": statistics.get("assigned", 0),
            "totalRunningJobs": statistics.get("running", 0),
            "totalRegisteredRunners": statistics.get("registered", 0),
            "totalBusyRunners": statistics.get("busy", 0),
            "totalIdleRunners": statistics.get("idle", 0),
        },
    }


def started_job(runner_name: str, request_id: int = 11, **extra: Any) -> dict[str, Any]:
    return {
        "messageType": "JobStarted",
        "runnerRequestId": request_id,
        "repositoryName": "app",
        "ownerName": "acme",
        "jobId": f"job-{request_id}",
        "jobDisplayName": "build",
        "workflowRunId": 9000 + request_id,
        "eventName": "push",
        "runnerId": request_id,
        "runnerName": runner_name,
        **extra,
    }


def completed_job(runner_name: str, request_id: int = 11, **extra: Any) -> dict[str, Any]:
    return {
        "messageType": "JobCompleted",
        "runnerRequestId": request_id,
        "repositoryName": "app",
        "ownerName": "acme",
        "jobId": f"job-{request_id}",
        "workflowRunId": 9000 + request_id,
        "result": "succeeded",
        "runnerId": request_id,
        "runnerName": runner_name,
        **extra,
    }


@asynccontextmanager
async def world_on(
    backend: KubeBackend,
    admin: KubeClient,
    namespace: str,
    *,
    settings: FakeSettings | None = None,
    poll_hold: float = 0.1,
    **options: Any,
) -> AsyncIterator[World]:
    """A started fake with scale set ``arc``, the ERS in ``namespace``, one ManualClock; an
    empty long poll is held ``poll_hold`` virtual seconds."""
    clock = ManualClock()
    fake = FakeGitHub(
        clock=clock, poll_hold_seconds=poll_hold, message_queue_host="localhost", settings=settings
    )
    await fake.start()
    try:
        register_secret_source(fake.control.issued_secrets)
        fake.add_pat(register_secret(PAT))
        scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), SCALE_SET)
        await admin.create(EPHEMERAL_RUNNER_SET, runner_set_body(RUNNER_SET, namespace))
        yield World(backend, admin, namespace, fake, clock, scale_set_id, **options)
    finally:
        await fake.stop()


def pat_credentials() -> PersonalAccessToken:
    return PersonalAccessToken(token=SecretStr(PAT))
