"""The doctor's test world: ``Cluster`` writes ARC-shaped objects by hand (runners with ARC's
finalizers, runner and listener pods with their status, AutoscalingListeners) next to the fake
GitHub service's scale set."""

from __future__ import annotations

from typing import Any

from scaleset.api import keys
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import AUTOSCALING_LISTENER, EPHEMERAL_RUNNER, POD

PAT = "ghp_doctorTests0123456789abcdefghijklmn"
ARC_FINALIZERS = [
    "ephemeralrunner.actions.github.com/finalizer",
    "ephemeralrunner.actions.github.com/runner-registration-finalizer",
]


class Cluster:
    def __init__(self, client: KubeClient, namespace: str, fake: FakeGitHub) -> None:
        self.client = client
        self.namespace = namespace
        self.fake = fake
        self.scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")

    def register(self, name: str) -> int:
        return self.fake.control.generate_jit_config(self.scale_set_id, name).id

    async def runner(self, name: str, **status: Any) -> None:
        await self.client.create(
            EPHEMERAL_RUNNER,
            {
                "apiVersion": keys.API_VERSION,
                "kind": "EphemeralRunner",
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "finalizers": list(ARC_FINALIZERS),
                },
                "spec": {
                    "githubConfigUrl": self.fake.config_url("acme"),
                    "githubConfigSecret": "github-config",
                    "runnerScaleSetId": self.scale_set_id,
                },
            },
        )
        await self.client.patch_merge(
            EPHEMERAL_RUNNER,
            ObjectKey(self.namespace, name),
            {"status": {"runnerName": name, **status}},
            status=True,
        )

    async def pod(self, name: str, *, labels: dict[str, str], status: dict[str, Any]) -> None:
        await self.client.create(
            POD,
            {
                "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i:1"}]},
            },
        )
        await self.client.patch_merge(
            POD, ObjectKey(self.namespace, name), {"status": status}, status=True
        )

    async def runner_pod(self, name: str) -> None:
        labels = {keys.EPHEMERAL_RUNNER_LABEL: keys.EPHEMERAL_RUNNER_LABEL_VALUE}
        await self.pod(name, labels=labels, status={"phase": "Running"})

    async def listener(self, name: str) -> None:
        await self.client.create(
            AUTOSCALING_LISTENER,
            {
                "apiVersion": keys.API_VERSION,
                "kind": "AutoscalingListener",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {
                    "githubConfigUrl": self.fake.config_url("acme"),
                    "githubConfigSecret": "github-config",
                    "runnerScaleSetId": self.scale_set_id,
                    "autoscalingRunnerSetName": "arc",
                    "autoscalingRunnerSetNamespace": self.namespace,
                    "ephemeralRunnerSetName": "arc",
                    "image": "listener:1",
                },
            },
        )

    async def release(self) -> None:
        """Drop the ARC finalizers (nothing else runs here to do it) so teardown can end."""
        listed = await self.client.list(EPHEMERAL_RUNNER, namespace=self.namespace)
        for item in listed.items:
            await self.client.patch_merge(
                EPHEMERAL_RUNNER, item.key, {"metadata": {"finalizers": None}}
            )
