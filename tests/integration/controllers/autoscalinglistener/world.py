"""The AutoscalingListener controller against a simulated world, on both API-server backends:
our CRDs, the fake GitHub service (a scale set, a PAT in the scale set namespace's GitHub
Secret), an AutoscalingRunnerSet and its EphemeralRunnerSet (inert: their controllers do not
run), the simulated kubelet for listener pods, and the controller itself in a ``Manager`` —
everything on one ``ManualClock``. Tests create the AutoscalingListener as the
AutoscalingRunnerSet controller would.

The kubelet runs ``until_stopped`` for the listener image unless a test gives the real listener
program (``listener_process``), which runs the listener loop as the pod's ServiceAccount."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.api import AutoscalingListener, Policy, keys
from scaleset.api.naming import listener_config_secret_name, listener_name
from scaleset.clock import ManualClock
from scaleset.controllers.autoscalinglistener.metrics import ListenerDecisionMetrics
from scaleset.controllers.autoscalinglistener.reconciler import AutoscalingListenerReconciler
from scaleset.controllers.autoscalinglistener.resources import LISTENER_OWNED_SELECTOR
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.controllers.autoscalinglistener.setup import build
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.setup import ProcessContext
from scaleset.embedded.actions import FakeGitHub
from scaleset.embedded.kubelet import ContainerRuntime, Program, SimulatedKubelet, until_stopped
from scaleset.kube import AlreadyExists, KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    EVENT,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    Kind,
)
from scaleset.runtime.controller import Controller as RuntimeController

PAT = "ghp_autoscalingListenerTests0123456789ab"
LISTENER_IMAGE = "ghcr.io/scaleset/scaleset:test"
SCALE_SET = "arc"
GITHUB_SECRET = "github-config"
SETTINGS = Settings(log_level="info", policy=Policy(allow_http_github_url=True))
"""The fake GitHub serves http, which the controller is told to accept."""


@dataclass
class Controller:
    """One running controller process (its own client, manager and caches)."""

    client: KubeClient
    registry: CollectorRegistry
    reconciler: AutoscalingListenerReconciler
    runtime: RuntimeController
    """The runtime's controller (its work queue)."""

    def idle(self) -> bool:
        """No key waits in the work queue and no reconcile runs (delayed requeues aside)."""
        return len(self.runtime.queue) == 0 and not self.runtime.queue.processing()

    def decisions(self, reason: str) -> float:
        value = self.registry.get_sample_value(
            "scaleset_autoscaling_listener_decisions_total", {"reason": reason}
        )
        return value or 0.0

    def running_listener(self, name: str, namespace: str) -> float | None:
        """ARC's ``gha_controller_running_listeners`` for one listener (None: never set)."""
        return self.registry.get_sample_value(
            "gha_controller_running_listeners",
            {
                "name": name,
                "namespace": namespace,
                "organization": "acme",
                "repository": "",
                "enterprise": "",
            },
        )


@dataclass
class World:
    backend: KubeBackend
    client: KubeClient
    namespace: str
    """The controller namespace (listeners, their pods, Secrets, ServiceAccounts)."""
    clock: ManualClock
    fake: FakeGitHub
    scale_set_id: int
    scale_set_namespace: str = ""
    """Where the AutoscalingRunnerSet lives (default: the controller namespace)."""

    def __post_init__(self) -> None:
        self.scale_set_namespace = self.scale_set_namespace or self.namespace

    # --- names --------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return listener_name(SCALE_SET, self.scale_set_namespace, "", self.fake.config_url("acme"))

    def key(self, name: str | None = None) -> ObjectKey:
        return ObjectKey(self.namespace, name or self.name)

    def rbac_key(self) -> ObjectKey:
        return ObjectKey(self.scale_set_namespace, self.name)

    def config_secret_key(self) -> ObjectKey:
        """The listener's config Secret, in the controller namespace."""
        return self.key(listener_config_secret_name(self.name))

    # --- the scale set side -------------------------------------------------------------------

    async def github_secret(self, token: str = PAT, name: str = GITHUB_SECRET) -> KubeObject:
        data = {"github_token": base64.b64encode(token.encode()).decode()}
        body = {"metadata": {"name": name, "namespace": self.scale_set_namespace}, "data": data}
        try:
            return await self.client.create(SECRET, body)
        except AlreadyExists:
            return await self.client.patch_merge(
                SECRET, ObjectKey(self.scale_set_namespace, name), {"data": data}
            )

    async def scale_set_objects(self, runner_set: str = SCALE_SET) -> None:
        """The AutoscalingRunnerSet and its EphemeralRunnerSet (no controller runs them)."""
        await self.client.create(
            AUTOSCALING_RUNNER_SET,
            {
                "metadata": {"name": SCALE_SET, "namespace": self.scale_set_namespace},
                "spec": {
                    "githubConfigUrl": self.fake.config_url("acme"),
                    "githubConfigSecret": GITHUB_SECRET,
                    "template": {"spec": {"containers": [{"name": "runner", "image": "r:1"}]}},
                },
            },
        )
        await self.runner_set(runner_set)

    async def runner_set(self, name: str) -> KubeObject:
        return await self.client.create(
            EPHEMERAL_RUNNER_SET,
            {
                "metadata": {"name": name, "namespace": self.scale_set_namespace},
                "spec": {
                    "patchID": 0,
                    "ephemeralRunnerSpec": {
                        "githubConfigUrl": self.fake.config_url("acme"),
                        "githubConfigSecret": GITHUB_SECRET,
                        "runnerScaleSetId": self.scale_set_id,
                        "spec": {"containers": [{"name": "runner", "image": "r:1"}]},
                    },
                },
            },
        )

    # --- the listener -------------------------------------------------------------------------

    def listener_body(self, *, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
        """The AutoscalingListener as the AutoscalingRunnerSet controller creates it."""
        return {
            "apiVersion": keys.API_VERSION,
            "kind": "AutoscalingListener",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {
                    keys.PART_OF_LABEL: keys.PART_OF_VALUE,
                    keys.COMPONENT_LABEL: keys.COMPONENT_LISTENER,
                    keys.SCALE_SET_NAME_LABEL: SCALE_SET,
                    keys.SCALE_SET_NAMESPACE_LABEL: self.scale_set_namespace,
                    keys.ORGANIZATION_LABEL: "acme",
                    **(labels or {}),
                },
            },
            "spec": {
                "githubConfigUrl": self.fake.config_url("acme"),
                "githubConfigSecret": GITHUB_SECRET,
                "runnerScaleSetId": self.scale_set_id,
                "autoscalingRunnerSetNamespace": self.scale_set_namespace,
                "autoscalingRunnerSetName": SCALE_SET,
                "ephemeralRunnerSetName": SCALE_SET,
                "minRunners": 0,
                "maxRunners": 10,
                "image": LISTENER_IMAGE,
                **spec,
            },
        }

    async def create_listener(self, **options: Any) -> KubeObject:
        return await self.client.create(AUTOSCALING_LISTENER, self.listener_body(**options))

    async def listener(self) -> AutoscalingListener | None:
        obj = await self.get(AUTOSCALING_LISTENER, self.key())
        return AutoscalingListener.model_validate(obj.raw) if obj is not None else None

    async def patch_listener(self, body: dict[str, Any]) -> KubeObject:
        return await self.client.patch_merge(AUTOSCALING_LISTENER, self.key(), body)

    async def get(self, kind: Kind, key: ObjectKey) -> KubeObject | None:
        try:
            return await self.client.get(kind, key)
        except NotFound:
            return None

    async def pod(self) -> KubeObject | None:
        return await self.get(POD, self.key())

    async def config_secret(self) -> KubeObject | None:
        return await self.get(SECRET, self.config_secret_key())

    async def config_json(self) -> dict[str, Any]:
        import json

        secret = await self.config_secret()
        assert secret is not None
        return dict(json.loads(base64.b64decode(secret.raw["data"]["config.json"])))

    async def listener_objects(self) -> dict[str, KubeObject | None]:
        return {
            "pod": await self.pod(),
            "config": await self.config_secret(),
            "serviceaccount": await self.get(SERVICE_ACCOUNT, self.key()),
            "role": await self.get(ROLE, self.rbac_key()),
            "rolebinding": await self.get(ROLE_BINDING, self.rbac_key()),
        }

    async def condition(self, kind: str) -> dict[str, Any] | None:
        obj = await self.get(AUTOSCALING_LISTENER, self.key())
        if obj is None:
            return None
        for cond in obj.status.get("conditions") or []:
            if cond.get("type") == kind:
                return dict(cond)
        return None

    async def events(self) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the Events about the listener, oldest first."""
        listed = await self.client.list(EVENT, namespace=self.namespace)
        return [
            (str(e.raw.get("type")), str(e.raw.get("reason")), str(e.raw.get("message")))
            for e in listed.items
            if (e.raw.get("involvedObject") or {}).get("kind") == "AutoscalingListener"
        ]

    async def event_where(
        self, check: Callable[[str, str, str], bool], what: str
    ) -> tuple[str, str, str]:
        """The first Event about the listener that ``check(type, reason, message)`` accepts
        (Events are posted in the background: wait for it)."""
        found: list[tuple[str, str, str]] = []

        async def posted() -> bool:
            found.extend(e for e in await self.events() if check(*e))
            return bool(found)

        await self.until_still(posted, what)
        return found[0]

    # --- waiting ------------------------------------------------------------------------------

    async def until(
        self,
        condition: Callable[[], Awaitable[bool]] | Callable[[], bool],
        what: str,
        *,
        max_step: float = 10.0,
    ) -> None:
        """Wait (bounded), letting virtual time pass to each pending deadline."""
        await eventually(condition, clock=self.clock, within=30.0, what=what, max_step=max_step)

    async def until_still(
        self, condition: Callable[[], Awaitable[bool]] | Callable[[], bool], what: str
    ) -> None:
        """Wait (bounded) without moving the clock."""
        await eventually(condition, within=30.0, what=what)

    async def pod_where(self, check: Callable[[KubeObject], bool], what: str) -> KubeObject:
        found: list[KubeObject] = []

        async def holds() -> bool:
            pod = await self.pod()
            if pod is not None and check(pod):
                found.append(pod)
                return True
            return False

        await self.until(holds, what)
        return found[-1]

    async def running_pod(self, other_than: str = "") -> KubeObject:
        """The listener pod once its container runs (and its UID is not ``other_than``)."""
        return await self.pod_where(
            lambda pod: pod.uid != other_than and _listener_state(pod) == "running",
            "a running listener pod" + (" (a new one)" if other_than else ""),
        )

    async def settled(self, controller: Controller) -> None:
        """Wait until the listener runs, every cache of its objects (and the watch of the scale
        set's GitHub Secret) holds what the server holds, and ``controller`` has nothing queued or
        running (a delayed requeue aside)."""
        await self.running_pod()
        await self.condition_where(
            "ListenerRunning", lambda c: c["status"] == "True", "ListenerRunning=True"
        )
        reconciler = controller.reconciler
        watched = [
            (reconciler.listeners, AUTOSCALING_LISTENER, self.key()),
            (reconciler.pods, POD, self.key()),
            (reconciler.service_accounts, SERVICE_ACCOUNT, self.key()),
            (reconciler.roles, ROLE, self.rbac_key()),
            (reconciler.role_bindings, ROLE_BINDING, self.rbac_key()),
            (reconciler.secrets, SECRET, self.config_secret_key()),
        ]

        inputs = reconciler.input_secrets
        github_secret = ObjectKey(self.scale_set_namespace, GITHUB_SECRET)

        async def caught_up_and_idle() -> bool:
            for cache, kind, key in watched:
                assert cache is not None, kind.kind
                fresh, cached = await self.get(kind, key), cache.get(key)
                if fresh is None or cached is None:
                    return False
                if cached.resource_version != fresh.resource_version:
                    return False
            assert inputs is not None
            fresh, cached = await self.get(SECRET, github_secret), inputs.cached(github_secret)
            if fresh is None or cached is None:
                return False
            if cached.resource_version != fresh.resource_version:
                return False
            return controller.idle()

        await self.until_still(caught_up_and_idle, "caches caught up, nothing queued")

    async def condition_where(
        self, kind: str, check: Callable[[dict[str, Any]], bool], what: str
    ) -> dict[str, Any]:
        found: list[dict[str, Any]] = []

        async def holds() -> bool:
            cond = await self.condition(kind)
            if cond is not None and check(cond):
                found.append(cond)
                return True
            return False

        await self.until(holds, what)
        return found[-1]

    # --- the controller and the kubelet -------------------------------------------------------

    @asynccontextmanager
    async def controller(
        self,
        *,
        settings: Settings = SETTINGS,
        identity: str = "controller-1",
        client: KubeClient | None = None,
        resync: bool = True,
    ) -> AsyncIterator[Controller]:
        """Run the controller (a fresh process: new client, caches and reconciler) until exit,
        with production's periodic resync (``--sync-period``; none without ``resync``): where
        the scale set's GitHub Secret may not be watched, it is how a rotated credential reaches
        the listener."""
        own = client or make_client(self.backend, clock=self.clock)
        registry = CollectorRegistry()
        try:
            options = ControllerOptions(
                controller_namespace=self.namespace,
                listener_image=LISTENER_IMAGE,
                allow_http_github_url=settings.policy.allow_http_github_url,
                allow_full_listener_template=settings.policy.allow_full_listener_template,
            )
            manager = manual_manager(
                own,
                self.namespace,
                identity,
                self.clock,
                namespaces=list(dict.fromkeys([self.namespace, self.scale_set_namespace])),
                resync_period=options.sync_period if resync else 0,
            )
            context = ProcessContext(options, own, self.clock)
            runtime, reconciler = build(
                manager, context, settings=settings, metrics=ListenerDecisionMetrics(registry)
            )
            async with running(manager):
                await eventually(manager.leading.is_set, within=30.0, what="leading")
                yield Controller(own, registry, reconciler, runtime)
        finally:
            await own.close()

    @asynccontextmanager
    async def kubelet(
        self, program: Program | None = None, *, missing_images: Sequence[str] = ()
    ) -> AsyncIterator[SimulatedKubelet]:
        """The simulated kubelet for listener pods (``program`` runs the listener image)."""
        runtime = ContainerRuntime(
            {LISTENER_IMAGE: program or until_stopped()}, missing_images=missing_images
        )
        async with SimulatedKubelet(
            self.client,
            nodes=["sim-node-1"],
            namespaces=[self.namespace],
            label_selector=LISTENER_OWNED_SELECTOR,
            clock=self.clock,
            runtime=runtime,
        ) as running_kubelet:
            yield running_kubelet


def _listener_state(pod: KubeObject) -> str:
    for status in pod.status.get("containerStatuses") or []:
        if status.get("name") == "listener":
            return next(iter(status.get("state") or {}), "")
    return ""
