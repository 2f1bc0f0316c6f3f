"""The doctor's test world: ``Cluster`` writes ARC-shaped objects by hand (scale sets, runners
with ARC's finalizers, runner and listener pods with their status, AutoscalingListeners, a
controller pod and its leader-election Lease) next to the fake GitHub service's scale set.

Controller pods are scoped to the test's namespace (``--watch-single-namespace``): the doctor
lists controller pods cluster-wide, and another test's controller must not serve this one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from scaleset.api import keys
from scaleset.doctor.github_hosts import GitHubHosts
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER,
    LEASE,
    POD,
)

PAT = "ghp_doctorTests0123456789abcdefghijklmn"
ARC_FINALIZERS = [
    "ephemeralrunner.actions.github.com/finalizer",
    "ephemeralrunner.actions.github.com/runner-registration-finalizer",
]
RUNNING = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


def approved(fake: FakeGitHub) -> GitHubHosts:
    """The fake's host:port, approved as a GitHub Enterprise Server (``--github-host``)."""
    return GitHubHosts.with_servers([urlsplit(fake.base_url).netloc])


def micro_time(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Cluster:
    def __init__(self, client: KubeClient, namespace: str, fake: FakeGitHub) -> None:
        self.client = client
        self.namespace = namespace
        self.fake = fake
        self.url = fake.config_url("acme")
        self.scale_set_id = fake.control.create_scale_set(self.url, "arc")

    def register(self, name: str) -> int:
        return self.fake.control.generate_jit_config(self.scale_set_id, name).id

    async def runner(self, name: str, *, url: str | None = None, **status: Any) -> None:
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
                    "githubConfigUrl": url or self.url,
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

    async def scale_set(self, name: str = "arc", *, registered: bool = True, **status: Any) -> None:
        """An AutoscalingRunnerSet as the chart writes it; ``registered`` gives it the scale set
        id annotation the controller writes once the scale set exists on GitHub."""
        annotations = {keys.RUNNER_SCALE_SET_ID_ANNOTATION: str(self.scale_set_id)}
        await self.client.create(
            AUTOSCALING_RUNNER_SET,
            {
                "apiVersion": keys.API_VERSION,
                "kind": "AutoscalingRunnerSet",
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "annotations": annotations if registered else {},
                },
                "spec": {"githubConfigUrl": self.url, "githubConfigSecret": "github-config"},
            },
        )
        if status:
            await self.client.patch_merge(
                AUTOSCALING_RUNNER_SET,
                ObjectKey(self.namespace, name),
                {"status": status},
                status=True,
            )

    async def pod(self, name: str, *, labels: dict[str, str], status: dict[str, Any]) -> None:
        await self.raw_pod(
            {
                "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i:1"}]},
            },
            status,
        )

    async def raw_pod(self, body: dict[str, Any], status: dict[str, Any]) -> None:
        await self.client.create(POD, body)
        key = ObjectKey(self.namespace, body["metadata"]["name"])
        await self.client.patch_merge(POD, key, {"status": status}, status=True)

    async def runner_pod(self, name: str, **status: Any) -> None:
        labels = {keys.EPHEMERAL_RUNNER_LABEL: keys.EPHEMERAL_RUNNER_LABEL_VALUE}
        await self.pod(name, labels=labels, status=status or {"phase": "Running"})

    async def refused_runner(self, name: str) -> None:
        """A runner GitHub refuses as deprecated: its runner container ended with exit 7."""
        await self.runner(name, phase="Pending", runnerId=self.register(name))
        await self.runner_pod(
            name,
            phase="Failed",
            containerStatuses=[
                {
                    "name": "runner",
                    "image": "ghcr.io/actions/actions-runner:2.334.0",
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 7, "reason": "Error"}},
                }
            ],
        )

    async def listener(self, name: str, scale_set: str = "arc") -> None:
        await self.client.create(
            AUTOSCALING_LISTENER,
            {
                "apiVersion": keys.API_VERSION,
                "kind": "AutoscalingListener",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {
                    "githubConfigUrl": self.url,
                    "githubConfigSecret": "github-config",
                    "runnerScaleSetId": self.scale_set_id,
                    "autoscalingRunnerSetName": scale_set,
                    "autoscalingRunnerSetNamespace": self.namespace,
                    "ephemeralRunnerSetName": scale_set,
                    "image": "listener:1",
                },
            },
        )

    async def listener_pod(self, name: str) -> None:
        labels = {
            keys.COMPONENT_LABEL: keys.COMPONENT_LISTENER,
            keys.SCALE_SET_NAMESPACE_LABEL: self.namespace,
        }
        await self.pod(name, labels=labels, status=RUNNING)

    @property
    def lease_name(self) -> str:
        return f"{self.namespace}-controller"

    async def controller(self, name: str = "gha-rs-controller-0", *, ready: bool = True) -> None:
        """A controller pod as the controller charts make it: ARC's labels, leader election
        on, serving this namespace only."""
        await self.raw_pod(
            {
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "labels": {
                        keys.PART_OF_LABEL: keys.CONTROLLER_PART_OF_VALUE,
                        keys.COMPONENT_LABEL: keys.COMPONENT_CONTROLLER_MANAGER,
                    },
                },
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": "controller:1",
                            "args": [
                                "--enable-leader-election",
                                f"--leader-election-id={self.lease_name}",
                                f"--watch-single-namespace={self.namespace}",
                            ],
                        }
                    ]
                },
            },
            RUNNING if ready else {"phase": "Running"},
        )

    async def lease(self, renewed: datetime, holder: str = "gha-rs-controller-0_1") -> None:
        await self.client.create(
            LEASE,
            {
                "metadata": {"name": self.lease_name, "namespace": self.namespace},
                "spec": {
                    "holderIdentity": holder,
                    "leaseDurationSeconds": 15,
                    "acquireTime": micro_time(renewed),
                    "renewTime": micro_time(renewed),
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
