"""The AutoscalingRunnerSet controller against our CRDs and the fake GitHub service, on both
API-server backends, in a ``Manager`` on one ``ManualClock``. Nothing else runs: tests play the
EphemeralRunnerSet controller by hand (its finalizer, its status counts) where they need runners,
so each rule is seen in isolation. The controller namespace (where listeners live) is the test's
namespace."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.api import AutoscalingRunnerSet, Policy, keys
from scaleset.api.naming import listener_name
from scaleset.clock import ManualClock
from scaleset.controllers.autoscalingrunnerset.metrics import ScaleSetDecisionMetrics
from scaleset.controllers.autoscalingrunnerset.reconciler import AutoscalingRunnerSetReconciler
from scaleset.controllers.autoscalingrunnerset.settings import Settings
from scaleset.controllers.autoscalingrunnerset.setup import build
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.setup import ProcessContext
from scaleset.embedded.actions import FakeGitHub
from scaleset.github import ActionsClient, PersonalAccessToken, RunnerScaleSet
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    EVENT,
    SECRET,
)

PAT = "ghp_autoscalingRunnerSetControllerTests01234"
LISTENER_IMAGE = "ghcr.io/scaleset/scaleset:test"
RUNNER_IMAGE = "ghcr.io/actions/actions-runner:2.335.1"
CONFIG_SECRET = "github-config"


def runner_template(image: str = RUNNER_IMAGE) -> dict[str, Any]:
    return {
        "spec": {
            "containers": [{"name": "runner", "image": image, "command": ["/home/runner/run.sh"]}],
            "restartPolicy": "Never",
        }
    }


@dataclass
class Running:
    """One running controller (its own client, manager, caches and GitHub clients)."""

    client: KubeClient
    registry: CollectorRegistry
    github: GitHubClients
    reconciler: AutoscalingRunnerSetReconciler

    def decisions(self, reason: str) -> float:
        value = self.registry.get_sample_value(
            "scaleset_autoscaling_runner_set_decisions_total", {"reason": reason}
        )
        return value or 0.0


@dataclass
class World:
    backend: KubeBackend
    client: KubeClient
    namespace: str
    clock: ManualClock
    fake: FakeGitHub

    @property
    def url(self) -> str:
        return self.fake.config_url("acme")

    def key(self, name: str) -> ObjectKey:
        return ObjectKey(self.namespace, name)

    def settings(self, **changes: Any) -> Settings:
        """The controller's settings; the fake GitHub serves http, which it is told to accept."""
        changes.setdefault("policy", Policy(allow_http_github_url=True))
        return Settings(
            controller_namespace=self.namespace, listener_image=LISTENER_IMAGE, **changes
        )

    # --- objects ------------------------------------------------------------------------------

    def scale_set_body(
        self,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        **spec: Any,
    ) -> dict[str, Any]:
        """An AutoscalingRunnerSet as the ``gha-runner-scale-set`` chart renders it."""
        return {
            "apiVersion": keys.API_VERSION,
            "kind": "AutoscalingRunnerSet",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    keys.COMPONENT_LABEL: keys.COMPONENT_AUTOSCALING_RUNNER_SET,
                    keys.PART_OF_LABEL: keys.CHART_PART_OF_VALUE,
                    keys.VERSION_LABEL: "0.14.2",
                    keys.SCALE_SET_NAME_LABEL: name,
                    keys.SCALE_SET_NAMESPACE_LABEL: self.namespace,
                    **(labels or {}),
                },
                "annotations": {keys.VALUES_HASH_ANNOTATION: "abc", **(annotations or {})},
            },
            "spec": {
                "githubConfigUrl": self.url,
                "githubConfigSecret": CONFIG_SECRET,
                "template": runner_template(),
                **spec,
            },
        }

    async def create_scale_set(self, name: str, **options: Any) -> KubeObject:
        return await self.client.create(
            AUTOSCALING_RUNNER_SET, self.scale_set_body(name, **options)
        )

    async def patch_spec(self, name: str, spec: dict[str, Any]) -> KubeObject:
        return await self.client.patch_merge(AUTOSCALING_RUNNER_SET, self.key(name), {"spec": spec})

    async def scale_set(self, name: str) -> AutoscalingRunnerSet | None:
        obj = await self.get(AUTOSCALING_RUNNER_SET, name)
        return None if obj is None else AutoscalingRunnerSet.model_validate(obj.raw)

    async def get(self, kind: Any, name: str) -> KubeObject | None:
        try:
            return await self.client.get(kind, self.key(name))
        except NotFound:
            return None

    async def runner_set(self, name: str) -> KubeObject | None:
        return await self.get(EPHEMERAL_RUNNER_SET, name)

    async def runner_sets(self) -> list[KubeObject]:
        return (await self.client.list(EPHEMERAL_RUNNER_SET, namespace=self.namespace)).items

    async def listeners(self) -> list[KubeObject]:
        return (await self.client.list(AUTOSCALING_LISTENER, namespace=self.namespace)).items

    def listener_name(self, scale_set: str, runner_group: str = "") -> str:
        return listener_name(scale_set, self.namespace, runner_group, self.url)

    async def listener(self, scale_set: str, runner_group: str = "") -> KubeObject | None:
        return await self.get(AUTOSCALING_LISTENER, self.listener_name(scale_set, runner_group))

    async def events(self, name: str, kind: str = "AutoscalingRunnerSet") -> list[tuple[str, str]]:
        """(reason, message) of the Events about ``name``, oldest first."""
        listed = await self.client.list(EVENT, namespace=self.namespace)
        return [
            (str(e.raw.get("reason")), str(e.raw.get("message")))
            for e in listed.items
            if (e.raw.get("involvedObject") or {}).get("name") == name
            and (e.raw.get("involvedObject") or {}).get("kind") == kind
        ]

    async def put_secret(self, name: str, data: dict[str, str]) -> None:
        encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
        await self.client.create(
            SECRET, {"metadata": {"name": name}, "data": encoded}, namespace=self.namespace
        )

    async def set_runner_set_status(self, name: str, status: dict[str, Any]) -> None:
        """What the EphemeralRunnerSet controller would write (it does not run here)."""
        await self.client.patch_merge(
            EPHEMERAL_RUNNER_SET,
            self.key(name),
            {"status": {"currentReplicas": 0, **status}},
            status=True,
        )

    # --- GitHub ground truth ------------------------------------------------------------------

    def github_scale_sets(self) -> dict[int, tuple[str, tuple[str, ...], int]]:
        """id -> (name, labels, runner group id), as the fake service holds them."""
        return {
            s.id: (s.name, s.labels, s.runner_group_id)
            for s in self.fake.control.snapshot().scale_sets
        }

    @asynccontextmanager
    async def actions(self) -> AsyncIterator[ActionsClient]:
        """A production GitHub client for the test's own look at GitHub."""
        from pydantic import SecretStr

        async with ActionsClient(
            self.url, PersonalAccessToken(token=SecretStr(PAT)), clock=self.clock, environ={}
        ) as github:
            yield github

    async def github_scale_set(self, scale_set_id: int) -> RunnerScaleSet | None:
        async with self.actions() as github:
            return await github.get_runner_scale_set_by_id(scale_set_id)

    # --- waiting ------------------------------------------------------------------------------

    async def until(
        self, condition: Callable[[], Awaitable[bool]] | Callable[[], bool], what: str
    ) -> None:
        """Wait (bounded), letting virtual time pass to each pending deadline."""
        await eventually(condition, clock=self.clock, within=30.0, what=what, max_step=10.0)

    async def scale_set_where(
        self, name: str, check: Callable[[AutoscalingRunnerSet], bool], what: str
    ) -> AutoscalingRunnerSet:
        found: list[AutoscalingRunnerSet] = []

        async def holds() -> bool:
            current = await self.scale_set(name)
            if current is not None and check(current):
                found.append(current)
                return True
            return False

        await self.until(holds, what)
        return found[-1]

    async def ready(self, name: str, runner_group: str = "") -> AutoscalingRunnerSet:
        """Wait until the scale set is registered, has its runner set and listener, and says
        Running."""

        async def complete() -> bool:
            current = await self.scale_set(name)
            return (
                current is not None
                and current.status.phase == "Running"
                and await self.listener(name, runner_group) is not None
            )

        await self.until(complete, f"{name} registered with runner set and listener")
        current = await self.scale_set(name)
        assert current is not None
        return current

    async def gone(self, kind: Any, name: str) -> None:
        async def absent() -> bool:
            return await self.get(kind, name) is None

        await self.until(absent, f"{kind.kind} {name} gone")

    # --- the controller -----------------------------------------------------------------------

    @asynccontextmanager
    async def controller(
        self,
        *,
        settings: Settings | None = None,
        identity: str = "controller-1",
        github_transport: httpx2.AsyncBaseTransport | None = None,
    ) -> AsyncIterator[Running]:
        """Run the controller (a fresh process: new client, caches and reconciler) until exit;
        ``github_transport`` carries its GitHub requests (default: real HTTP)."""
        own = make_client(self.backend, clock=self.clock)
        registry = CollectorRegistry()
        chosen = settings or self.settings()
        github = GitHubClients(
            own,
            ClientOptions(
                clock=self.clock,
                environ={},
                allow_http_github_url=chosen.policy.allow_http_github_url,
                transport=github_transport,
            ),
        )
        try:
            manager = manual_manager(own, self.namespace, identity, self.clock)
            options = ControllerOptions(
                controller_namespace=self.namespace,
                listener_image=chosen.listener_image,
                allow_http_github_url=chosen.policy.allow_http_github_url,
                allow_full_listener_template=chosen.policy.allow_full_listener_template,
            )
            context = ProcessContext(options, own, self.clock)
            _, reconciler = build(
                manager,
                context,
                settings=chosen,
                github=github,
                metrics=ScaleSetDecisionMetrics(registry),
            )
            async with running(manager):
                await eventually(manager.leading.is_set, within=30.0, what="leading")
                yield Running(own, registry, github, reconciler)
        finally:
            await github.aclose()
            await own.close()
