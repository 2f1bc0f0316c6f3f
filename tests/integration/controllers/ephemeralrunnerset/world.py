"""The EphemeralRunnerSet controller against a real API server (both backends) and the fake
GitHub service, on one ``ManualClock`` whose wall time starts at the real time (so the API
server's creation timestamps and the controller's clock agree).

Tests play the other actors by hand, so each rule is seen in isolation:

- the **listener**: ``patch_replicas`` (the ERS merge patch ARC's listener sends), and the job
  fields on a runner (``job_started``);
- the **EphemeralRunner controller**: ``register`` (a JIT registration on the fake plus
  ``runnerId`` in status), ``make_idle`` (``ready``), ``mark_terminal``; and ``Finalizers``,
  which removes the runner finalizers of deleted runners the way its deletion path ends;
- **GitHub**: the fake service; ``start_job`` runs a simulated runner from the runner's JIT
  config until it has taken a queued job (so GitHub says JobStillRunning)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import Wrap, make_client
from tests.support.managers import manual_manager, reconcile_count, running
from tests.support.waiting import eventually

from scaleset.api import EphemeralRunnerSet, keys
from scaleset.clock import ManualClock
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
from scaleset.controllers.ephemeralrunnerset.reconciler import EphemeralRunnerSetReconciler
from scaleset.controllers.ephemeralrunnerset.settings import Settings
from scaleset.controllers.ephemeralrunnerset.setup import build
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.options import ControllerOptions
from scaleset.controllers.setup import ProcessContext
from scaleset.devtools.transports import RequestHook
from scaleset.embedded.actions import FakeGitHub, JitRunner
from scaleset.embedded.runner import RunnerPhase, run_runner
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.patches import remove_finalizer
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, EVENT
from scaleset.runtime.controller import Controller as RuntimeController
from scaleset.runtime.informer import Informer
from scaleset.runtime.store import InformerEvent

PAT = "ghp_ephemeralRunnerSetControllerTests012345"
RUNNER_IMAGE = "ghcr.io/actions/actions-runner:2.335.1"
SCALE_SET = "arc"
SET = "arc"
RUNNER_FINALIZERS = (keys.EPHEMERAL_RUNNER_FINALIZER, keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER)


@dataclass
class Controller:
    """One running ERS controller (its own client, manager, caches, GitHub clients)."""

    client: KubeClient
    registry: CollectorRegistry
    reconciler: EphemeralRunnerSetReconciler
    runtime: RuntimeController

    def counted(self, metric: str, **labels: str) -> float:
        return self.registry.get_sample_value(metric, labels) or 0.0

    def passes(self) -> float:
        """Passes of the set finished so far (any outcome)."""
        return reconcile_count(self.registry, "ephemeralrunnerset")


@dataclass
class World:
    backend: KubeBackend
    client: KubeClient
    namespace: str
    clock: ManualClock
    fake: FakeGitHub
    scale_set_id: int
    jit: dict[str, JitRunner] = field(default_factory=dict)
    runner_tasks: list[asyncio.Task[int]] = field(default_factory=list)

    def key(self, name: str) -> ObjectKey:
        return ObjectKey(self.namespace, name)

    # --- the set -------------------------------------------------------------------------

    def set_body(
        self, *, replicas: int = 0, patch_id: int = 0, image: str = RUNNER_IMAGE, **extra: Any
    ) -> dict[str, Any]:
        return {
            "apiVersion": keys.API_VERSION,
            "kind": "EphemeralRunnerSet",
            "metadata": {
                "name": SET,
                "namespace": self.namespace,
                "labels": {keys.SCALE_SET_NAME_LABEL: SET},
                **extra.pop("metadata", {}),
            },
            "spec": {
                "replicas": replicas,
                "patchID": patch_id,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": self.fake.config_url("acme"),
                    "githubConfigSecret": "github-config",
                    "runnerScaleSetId": self.scale_set_id,
                    "spec": {"containers": [{"name": "runner", "image": image}]},
                },
                **extra,
            },
        }

    async def create_set(self, **options: Any) -> KubeObject:
        return await self.client.create(EPHEMERAL_RUNNER_SET, self.set_body(**options))

    async def patch_replicas(self, replicas: int, patch_id: int) -> None:
        """The listener's patch (ARC sends ``replicas: null`` for 0)."""
        await self.client.patch_merge(
            EPHEMERAL_RUNNER_SET,
            self.key(SET),
            {"spec": {"replicas": replicas or None, "patchID": patch_id}},
        )

    async def set_image(self, image: str) -> None:
        """A runner-spec change, patched in place (as the ARS controller does)."""
        await self.client.patch_merge(
            EPHEMERAL_RUNNER_SET,
            self.key(SET),
            {
                "spec": {
                    "ephemeralRunnerSpec": {
                        "spec": {"containers": [{"name": "runner", "image": image}]}
                    }
                }
            },
        )

    async def runner_set(self) -> EphemeralRunnerSet | None:
        try:
            obj = await self.client.get(EPHEMERAL_RUNNER_SET, self.key(SET))
        except NotFound:
            return None
        return EphemeralRunnerSet.model_validate(obj.raw)

    # --- the runners ---------------------------------------------------------------------

    async def runners(self, *, include_deleting: bool = False) -> list[KubeObject]:
        listed = await self.client.list(EPHEMERAL_RUNNER, namespace=self.namespace)
        return sorted(
            (r for r in listed.items if include_deleting or not r.is_deleting),
            key=lambda r: (r.metadata.get("creationTimestamp", ""), r.name),
        )

    async def names(self) -> list[str]:
        return [r.name for r in await self.runners()]

    async def runner(self, name: str) -> KubeObject | None:
        try:
            return await self.client.get(EPHEMERAL_RUNNER, self.key(name))
        except NotFound:
            return None

    async def patch_status(self, name: str, status: dict[str, Any]) -> None:
        await self.client.patch_merge(
            EPHEMERAL_RUNNER, self.key(name), {"status": status}, status=True
        )

    async def register(self, name: str, *, idle: bool = True) -> JitRunner:
        """The runner controller's part: a registration on GitHub, its id in status, and (for an
        idle runner) the pod Ready."""
        jit = self.fake.control.generate_jit_config(self.scale_set_id, name)
        self.jit[name] = jit
        status: dict[str, Any] = {"runnerId": jit.id, "runnerName": name, "phase": "Pending"}
        if idle:
            status["ready"] = True
        await self.patch_status(name, status)
        return jit

    async def mark_terminal(self, name: str, phase: str = "Failed", reason: str = "") -> None:
        await self.patch_status(name, {"phase": phase, "reason": reason})

    async def job_started(self, name: str, request_id: int = 1) -> None:
        """The listener's JobStarted write (job fields and Running)."""
        await self.patch_status(
            name,
            {"phase": "Running", "jobRequestId": request_id, "jobId": f"job-{request_id}"},
        )

    async def start_job(self, name: str) -> int:
        """A job queued on GitHub and taken by the simulated runner of ``name`` (busy on
        GitHub); returns the job's request id. Nothing is written to the runner."""
        request_id = self.fake.control.queue_job([SCALE_SET], duration_seconds=3600)
        phases: list[RunnerPhase] = []
        task = asyncio.ensure_future(
            run_runner(self.jit[name].env(), clock=self.clock, on_phase=phases.append)
        )
        self.runner_tasks.append(task)
        await eventually(
            lambda: RunnerPhase.JOB_STARTED in phases, within=20.0, what=f"{name} took a job"
        )
        return request_id

    def registered(self, name: str) -> bool:
        """GitHub (the fake's ground truth) still holds ``name``'s registration."""
        truth = self.fake.control.snapshot()
        return any(r.name == name and r.registered for r in truth.runners)

    async def events(self, kind: str = "EphemeralRunner", name: str | None = None) -> list[str]:
        listed = await self.client.list(EVENT, namespace=self.namespace)
        return [
            str(e.raw.get("reason"))
            for e in listed.items
            if (e.raw.get("involvedObject") or {}).get("kind") == kind
            and (name is None or (e.raw.get("involvedObject") or {}).get("name") == name)
        ]

    async def event_posted(
        self, reason: str, *, kind: str = "EphemeralRunner", name: str | None = None
    ) -> None:
        """Wait for an Event (the recorder posts in the background)."""

        async def posted() -> bool:
            return reason in await self.events(kind=kind, name=name)

        await self.until(posted, f"Event {reason}")

    # --- waiting -------------------------------------------------------------------------

    async def until(
        self, condition: Callable[[], Awaitable[bool]] | Callable[[], bool], what: str
    ) -> None:
        """Wait (bounded), letting virtual time pass to each pending deadline."""
        await eventually(condition, clock=self.clock, within=30.0, what=what, max_step=5.0)

    async def count_is(self, count: int) -> None:
        async def holds() -> bool:
            return len(await self.runners()) == count

        await self.until(holds, f"{count} runners")

    async def status_where(
        self, check: Callable[[EphemeralRunnerSet], bool], what: str
    ) -> EphemeralRunnerSet:
        found: list[EphemeralRunnerSet] = []

        async def holds() -> bool:
            current = await self.runner_set()
            if current is not None and check(current):
                found.append(current)
                return True
            return False

        await self.until(holds, what)
        return found[-1]

    async def caught_up(self, controller: Controller, what: str) -> None:
        """Wait until ``controller`` has seen the set as the server holds it now and has nothing
        left to do for it: its cache shows the server's resourceVersion, its queue is empty and
        no reconcile runs. (A listener patch that changes nothing the set does is not
        acknowledged in status, so status cannot say it was seen.)"""
        key = self.key(SET)

        async def holds() -> bool:
            current = await self.client.get(EPHEMERAL_RUNNER_SET, key)
            cached = controller.runtime.informer.get(key)
            queue = controller.runtime.queue
            return (
                cached is not None
                and cached.resource_version == current.resource_version
                and len(queue) == 0
                and not queue.processing()
            )

        await self.until(holds, what)

    # --- the controller --------------------------------------------------------------------

    @asynccontextmanager
    async def controller(
        self,
        *,
        hooks: Sequence[RequestHook] = (),
        wrap: Wrap | None = None,
        settings: Settings | None = None,
        github_transport: Any = None,
        identity: str = "controller-1",
        allow_http_github_url: bool = True,
    ) -> AsyncIterator[Controller]:
        """Run the ERS controller (a fresh process: new client, caches and reconciler); the fake
        GitHub serves http, so the controller accepts http config URLs unless told not to."""
        own = make_client(self.backend, hooks=hooks, wrap=wrap, clock=self.clock)
        registry = CollectorRegistry()
        github = GitHubClients(
            own,
            ClientOptions(
                clock=self.clock,
                environ={},
                transport=github_transport,
                allow_http_github_url=allow_http_github_url,
            ),
        )
        try:
            manager = manual_manager(
                own, self.namespace, identity, self.clock, metrics=RuntimeMetrics(registry)
            )
            options = ControllerOptions(controller_namespace=self.namespace, listener_image="x")
            runtime, reconciler = build(
                manager,
                ProcessContext(options, own, self.clock),
                settings=settings or Settings(),
                github=github,
                metrics=RunnerSetMetrics(registry),
            )
            async with running(manager):
                await eventually(manager.leading.is_set, within=30.0, what="leading")
                yield Controller(own, registry, reconciler, runtime)
        finally:
            await github.aclose()
            await own.close()


class Finalizers:
    """Plays the end of the runner controller's deletion path: a deleted runner loses its
    finalizers (``paused`` holds them, e.g. to look at a deleting runner)."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client = client
        self.informer = Informer(client, EPHEMERAL_RUNNER, namespaces=[namespace])
        self.informer.add_handler(self._on_event)
        self.paused = False
        self._tasks: set[asyncio.Task[None]] = set()

    def _on_event(self, event: InformerEvent) -> None:
        if event.type != "DELETED" and event.obj.is_deleting and not self.paused:
            task = asyncio.ensure_future(self._release(event.obj.key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def release_all(self) -> None:
        self.paused = False
        for obj in self.informer.list():
            if obj.is_deleting:
                task = asyncio.ensure_future(self._release(obj.key))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _release(self, key: ObjectKey) -> None:
        for _ in range(5):
            try:
                obj = await self.client.get(EPHEMERAL_RUNNER, key)
            except NotFound:
                return
            try:
                for finalizer in RUNNER_FINALIZERS:
                    ops = remove_finalizer(obj, finalizer)
                    if ops is not None:
                        obj = await self.client.patch_json(EPHEMERAL_RUNNER, key, ops)
                return
            except NotFound:
                return
            except Exception:  # noqa: S112 - conflict: read again
                continue
