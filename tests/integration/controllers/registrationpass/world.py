"""The registration pass's test world: the EphemeralRunnerSet and its EphemeralRunners written
by hand (no other controller runs, no finalizers), runners registered with the fake's control
API, and passes run directly (``World.run_pass``) so each L6 rule is seen in isolation.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from tests.plugins.kube_backends import KubeBackend
from tests.support.waiting import eventually

from scaleset.api import keys
from scaleset.clock import ManualClock
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.registrationpass.metrics import PassDecisionMetrics
from scaleset.controllers.registrationpass.reconciler import PassReport, RegistrationPass
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, EVENT, POD
from scaleset.runtime.events import EventRecorder

PAT = "ghp_registrationPassTests0123456789abcdef"
SCALE_SET = "arc"
SET = "arc"
PREFIX = f"{SET}-runner-"


@dataclass
class World:
    backend: KubeBackend
    client: KubeClient
    namespace: str
    clock: ManualClock
    fake: FakeGitHub
    scale_set_id: int
    recorder: EventRecorder
    github: GitHubClients
    runner_set: KubeObject | None = None
    passes: dict[str, RegistrationPass] = field(default_factory=dict)

    def key(self, name: str) -> ObjectKey:
        return ObjectKey(self.namespace, name)

    async def create_set(self) -> KubeObject:
        self.runner_set = await self.client.create(
            EPHEMERAL_RUNNER_SET,
            {
                "apiVersion": keys.API_VERSION,
                "kind": "EphemeralRunnerSet",
                "metadata": {"name": SET, "namespace": self.namespace},
                "spec": {
                    "replicas": 0,
                    "patchID": 0,
                    "ephemeralRunnerSpec": {
                        "githubConfigUrl": self.fake.config_url("acme"),
                        "githubConfigSecret": "github-config",
                        "runnerScaleSetId": self.scale_set_id,
                        "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
                    },
                },
            },
        )
        return self.runner_set

    async def create_runner(
        self, name: str, *, register: bool = True, status: dict[str, Any] | None = None
    ) -> int:
        """An EphemeralRunner of the set; registered with the fake (its runner id in status)
        unless ``register`` is false. Returns the runner id (0 when not registered)."""
        assert self.runner_set is not None
        await self.client.create(
            EPHEMERAL_RUNNER,
            {
                "apiVersion": keys.API_VERSION,
                "kind": "EphemeralRunner",
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "ownerReferences": [
                        {
                            "apiVersion": keys.API_VERSION,
                            "kind": "EphemeralRunnerSet",
                            "name": SET,
                            "uid": self.runner_set.uid,
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "githubConfigUrl": self.fake.config_url("acme"),
                    "githubConfigSecret": "github-config",
                    "runnerScaleSetId": self.scale_set_id,
                    "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
                },
            },
        )
        runner_id = 0
        if register:
            runner_id = self.fake.control.generate_jit_config(self.scale_set_id, name).id
        fields = {"runnerId": runner_id, "runnerName": name, "phase": "Pending", **(status or {})}
        await self.client.patch_merge(
            EPHEMERAL_RUNNER, self.key(name), {"status": fields}, status=True
        )
        return runner_id

    async def running_pod(self, name: str) -> None:
        """The runner's pod, reported Running (as a kubelet would)."""
        await self.client.create(
            POD,
            {
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "labels": {keys.EPHEMERAL_RUNNER_LABEL: keys.EPHEMERAL_RUNNER_LABEL_VALUE},
                },
                "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
            },
        )
        await self.client.patch_merge(
            POD, self.key(name), {"status": {"phase": "Running"}}, status=True
        )

    async def runner_exists(self, name: str) -> bool:
        try:
            await self.client.get(EPHEMERAL_RUNNER, self.key(name))
        except NotFound:
            return False
        return True

    def registered(self, runner_id: int) -> bool:
        return self.fake.control.snapshot().runner(runner_id).registered

    def registration_pass(self, settings: Settings | None = None) -> RegistrationPass:
        return RegistrationPass(
            self.client,
            self.github,
            self.recorder,
            self.clock,
            settings or Settings(),
            metrics=PassDecisionMetrics(None),
        )

    async def run_pass(self, registration_pass: RegistrationPass) -> PassReport:
        """One pass, letting virtual time run for the GitHub client's retries."""
        assert self.runner_set is not None
        fresh = await self.client.get(EPHEMERAL_RUNNER_SET, self.key(SET))
        task = asyncio.ensure_future(registration_pass.run(fresh))
        await eventually(task.done, clock=self.clock, within=60.0, what="pass", max_step=5.0)
        return task.result()

    async def event_reasons(self) -> list[str]:
        await self.recorder.flush()
        listed = await self.client.list(EVENT, namespace=self.namespace)
        return [str(e.raw.get("reason")) for e in listed.items]
