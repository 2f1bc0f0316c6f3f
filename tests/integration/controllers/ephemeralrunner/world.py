"""The EphemeralRunner controller against a whole simulated world, on both API-server backends:
our CRDs, the fake GitHub service (a scale set, a PAT in the namespace's GitHub Secret), the
simulated kubelet running the simulated runner for runner pods, and the controller itself in a
``Manager`` — everything on one ``ManualClock``. Tests play the listener (its status writes)
and the EphemeralRunnerSet (creating runners) by hand, so each rule is seen in isolation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import Wrap, make_client
from tests.support.managers import manual_manager, reconcile_count, running
from tests.support.waiting import eventually

from scaleset.api import EphemeralRunner, keys
from scaleset.clock import ManualClock
from scaleset.controllers.ephemeralrunner.metrics import RunnerDecisionMetrics
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.controllers.ephemeralrunner.setup import USER_AGENT, build
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.setup import ProcessContext
from scaleset.devtools.transports import RequestHook
from scaleset.embedded.actions import FakeGitHub
from scaleset.embedded.kubelet import (
    ContainerRun,
    SimulatedKubelet,
    default_runtime,
    runner_program,
)
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.conflict import retry_on_conflict
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.resources import EPHEMERAL_RUNNER, EVENT, POD, SECRET

PAT = "ghp_ephemeralRunnerControllerTests0123456789"
RUNNER_IMAGE = "ghcr.io/actions/actions-runner:2.335.1"
SCALE_SET = "arc"
FINALIZERS = [keys.EPHEMERAL_RUNNER_FINALIZER, keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER]


@dataclass
class RunnerPhases:
    """What each simulated runner container did, per pod name, in order."""

    by_pod: dict[str, list[RunnerPhase]] = field(default_factory=dict)

    def __call__(self, run: ContainerRun, phase: RunnerPhase) -> None:
        self.by_pod.setdefault(run.pod.name, []).append(phase)

    def of(self, pod: str) -> list[RunnerPhase]:
        return self.by_pod.get(pod, [])


@dataclass
class Controller:
    """One running controller process (its own client, manager and caches)."""

    client: KubeClient
    registry: CollectorRegistry
    github: GitHubClients

    def reconciles(self) -> float:
        """Reconciles finished so far (any outcome)."""
        return reconcile_count(self.registry, "ephemeralrunner")

    def idle(self) -> bool:
        """No runner waits in the work queue and no reconcile is under way."""
        queued = self.registry.get_sample_value("workqueue_depth", {"name": "ephemeralrunner"})
        busy = self.registry.get_sample_value(
            "controller_runtime_active_workers", {"controller": "ephemeralrunner"}
        )
        return not queued and not busy

    def decisions(self, reason: str) -> float:
        """How often the controller decided ``reason`` (its Prometheus counter)."""
        value = self.registry.get_sample_value(
            "scaleset_ephemeral_runner_decisions_total", {"reason": reason}
        )
        return value or 0.0


@dataclass
class World:
    backend: KubeBackend
    client: KubeClient
    namespace: str
    clock: ManualClock
    fake: FakeGitHub
    scale_set_id: int
    phases: RunnerPhases
    settings: Settings = field(default_factory=lambda: Settings(user_agent=USER_AGENT))
    _pokes: int = 0

    # --- the objects -------------------------------------------------------------------------

    def key(self, name: str) -> ObjectKey:
        return ObjectKey(self.namespace, name)

    def runner_body(
        self,
        name: str,
        *,
        pod_annotations: dict[str, str] | None = None,
        pod_spec: dict[str, Any] | None = None,
        finalizers: bool = True,
        **spec: Any,
    ) -> dict[str, Any]:
        """An EphemeralRunner as the EphemeralRunnerSet creates it (finalizers included)."""
        template_spec: dict[str, Any] = {
            "containers": [
                {"name": "runner", "image": RUNNER_IMAGE, "command": ["/home/runner/run.sh"]}
            ],
            **(pod_spec or {}),
        }
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": {"app.kubernetes.io/component": "runner"},
        }
        if finalizers:
            metadata["finalizers"] = list(FINALIZERS)
        return {
            "apiVersion": keys.API_VERSION,
            "kind": "EphemeralRunner",
            "metadata": metadata,
            "spec": {
                "githubConfigUrl": self.fake.config_url("acme"),
                "githubConfigSecret": "github-config",
                "runnerScaleSetId": self.scale_set_id,
                "metadata": {"annotations": pod_annotations or {}},
                "spec": template_spec,
                **spec,
            },
        }

    async def create_runner(self, name: str, **options: Any) -> KubeObject:
        return await self.client.create(EPHEMERAL_RUNNER, self.runner_body(name, **options))

    async def runner(self, name: str) -> EphemeralRunner | None:
        try:
            obj = await self.client.get(EPHEMERAL_RUNNER, self.key(name))
        except NotFound:
            return None
        return EphemeralRunner.model_validate(obj.raw)

    async def pod(self, name: str) -> KubeObject | None:
        try:
            return await self.client.get(POD, self.key(name))
        except NotFound:
            return None

    async def secret(self, name: str) -> KubeObject | None:
        try:
            return await self.client.get(SECRET, self.key(name))
        except NotFound:
            return None

    async def events(self, name: str) -> list[tuple[str, str]]:
        """(reason, message) of the Events about runner ``name``, oldest first."""
        listed = await self.client.list(EVENT, namespace=self.namespace)
        return [
            (str(e.raw.get("reason")), str(e.raw.get("message")))
            for e in listed.items
            if (e.raw.get("involvedObject") or {}).get("name") == name
            and (e.raw.get("involvedObject") or {}).get("kind") == "EphemeralRunner"
        ]

    async def event_reasons(self, name: str, *expected: str) -> list[str]:
        """The Event reasons about runner ``name`` once all of ``expected`` are posted."""
        seen: list[str] = []

        async def posted() -> bool:
            seen[:] = [reason for reason, _ in await self.events(name)]
            return all(reason in seen for reason in expected)

        await eventually(posted, within=30.0, what=f"events {expected} about {name}")
        return seen

    async def until(
        self, condition: Callable[[], Awaitable[bool]] | Callable[[], bool], what: str
    ) -> None:
        """Wait (bounded), letting virtual time pass to each pending deadline."""
        await eventually(condition, clock=self.clock, within=30.0, what=what, max_step=10.0)

    async def runner_where(
        self, name: str, check: Callable[[EphemeralRunner], bool], what: str
    ) -> EphemeralRunner:
        found: list[EphemeralRunner] = []

        async def holds() -> bool:
            runner = await self.runner(name)
            if runner is not None and check(runner):
                found.append(runner)
                return True
            return False

        await self.until(holds, what)
        return found[-1]

    async def gone(self, name: str) -> None:
        async def absent() -> bool:
            return await self.runner(name) is None

        await self.until(absent, f"runner {name} gone")

    async def settle(self, controller: Controller, name: str) -> None:
        """Return once the controller reconciled ``name`` after everything written so far
        (a label poke triggers a reconcile, which reads the runner fresh)."""
        before = controller.reconciles()
        self._pokes += 1
        await self.client.patch_merge(
            EPHEMERAL_RUNNER, self.key(name), {"metadata": {"labels": {"poke": str(self._pokes)}}}
        )
        await eventually(lambda: controller.reconciles() > before, within=30.0, what="reconciled")

    async def reconciled_after_all_writes(
        self, controller: Controller, name: str, requests: Sequence[str]
    ) -> None:
        """Return once a reconcile of ``name`` that began after everything written so far has
        ended, exactly: a label poke makes the next reconcile read the runner fresh, which
        ``requests`` (the controller's requests, ``"GET <resource>/<name>"``, recorded by a
        ``RequestHook``) shows; then the controller runs until it is idle."""
        seen = len(requests)
        self._pokes += 1
        await self.client.patch_merge(
            EPHEMERAL_RUNNER, self.key(name), {"metadata": {"labels": {"poke": str(self._pokes)}}}
        )
        read = f"GET ephemeralrunners/{name}"
        await eventually(lambda: read in requests[seen:], within=30.0, what=f"{name} read")
        await eventually(controller.idle, within=30.0, what="the controller idle")

    # --- the listener's writes (L1, L4) -------------------------------------------------------

    async def job_started(self, name: str, request_id: int) -> None:
        """What the listener writes on JobStarted: the job fields and Running, guarded."""
        job = self.fake.control.snapshot().job(request_id)
        fields = {
            "phase": "Running",
            "jobRequestId": request_id,
            "jobId": job.job_id,
            "jobRepositoryName": f"{job.owner}/{job.repository}",
            "workflowRunId": 9,
            "jobDisplayName": "build",
        }

        async def write() -> KubeObject:
            obj = await self.client.get(EPHEMERAL_RUNNER, self.key(name))
            return await self.client.patch_with_lock(obj, {"status": fields}, status=True)

        await retry_on_conflict(write, operation="test-listener")

    async def job_completed(
        self, name: str, request_id: int, runner_id: int, **fields: Any
    ) -> None:
        """What the listener writes on JobCompleted: the completion on the runner it names."""
        job = self.fake.control.snapshot().job(request_id)
        completion = {
            "result": job.result or "succeeded",
            "runnerId": runner_id,
            "runnerName": name,
            "jobId": job.job_id,
            "workflowRunId": 9,
            **fields,
        }
        await self.client.patch_merge(
            EPHEMERAL_RUNNER, self.key(name), {"status": {"jobCompletion": completion}}, status=True
        )

    # --- the node ------------------------------------------------------------------------------

    @asynccontextmanager
    async def kubelet(self) -> AsyncIterator[SimulatedKubelet]:
        """The simulated kubelet for runner pods in the test's namespace (simulated runners).

        Its Events are off: on one shared ManualClock its recorder and the controller's would
        name an Event about pod ``x`` and one about runner ``x`` alike (``x.<nanoseconds>``),
        and the runtime's recorder drops an Event whose name is taken."""
        runtime = default_runtime(runner_program(on_phase=self.phases))
        async with SimulatedKubelet(
            self.client,
            nodes=["sim-node-1"],
            namespaces=[self.namespace],
            label_selector=keys.RUNNER_POD_SELECTOR,
            clock=self.clock,
            runtime=runtime,
            events=False,
        ) as running_kubelet:
            yield running_kubelet

    def connections(self, name: str) -> int:
        """How many runner processes of pod ``name`` tried to use a JIT config."""
        return self.phases.of(name).count(RunnerPhase.CONNECTING)

    def registrations(self, name: str) -> list[Any]:
        """Every registration the fake ever had under runner name ``name``."""
        return [r for r in self.fake.control.snapshot().runners if r.name == name]

    # --- the controller ------------------------------------------------------------------------

    @asynccontextmanager
    async def controller(
        self,
        *,
        hooks: Sequence[RequestHook] = (),
        settings: Settings | None = None,
        identity: str = "controller-1",
        resync_period: float | None = None,
        wrap: Wrap | None = None,
        allow_http_github_url: bool = True,
    ) -> AsyncIterator[Controller]:
        """Run the controller (a fresh process: new client, caches and reconciler) until exit.

        Starting one takes a virtual second: Event names are ``<object>.<clock nanoseconds>``,
        and a new recorder at the very instant of the previous one's last Event would reuse its
        name (the runtime's recorder then drops the Event). The fake GitHub serves http, so the
        controller accepts http config URLs unless told not to."""
        self.clock.advance(1.0)
        own = make_client(self.backend, hooks=hooks, clock=self.clock, wrap=wrap)
        registry = CollectorRegistry()
        github = GitHubClients(
            own,
            ClientOptions(
                clock=self.clock, environ={}, allow_http_github_url=allow_http_github_url
            ),
        )
        try:
            extra: dict[str, object] = {}
            if resync_period is not None:
                extra["resync_period"] = resync_period
            manager = manual_manager(
                own, self.namespace, identity, self.clock, metrics=RuntimeMetrics(registry), **extra
            )
            options = ControllerOptions(controller_namespace=self.namespace, listener_image="x")
            context = ProcessContext(options, own, self.clock)
            _, reconciler = build(
                manager, context, settings=settings or self.settings, github=github
            )
            reconciler.metrics = RunnerDecisionMetrics(registry)
            async with running(manager):
                await eventually(manager.leading.is_set, within=30.0, what="leading")
                yield Controller(own, registry, github)
        finally:
            await github.aclose()
            await own.close()
