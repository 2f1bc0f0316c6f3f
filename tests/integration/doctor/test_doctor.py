"""``scaleset doctor`` on both API-server backends: ARC-shaped objects written by hand (an
ARC-era runner whose pod was recreated, one Running with no job, one whose registration the
fake GitHub does not know, one stuck deleting, a Failed one, an old idle one, two listeners
for one scale set, a crash-looping listener pod) are each found; a healthy namespace gives no
finding; the doctor writes nothing; without a GitHub token it says which check it skipped.

Creation and deletion timestamps come from the API server's own clock, so the doctor's
``ManualClock`` is set ahead of it (the "now" of the age checks). The pod-newer-than-runner
gap is between two server timestamps a test cannot spread by hours: that check runs here with
a threshold of -1 s (the gap logic itself is proved in tests/unit/doctor).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import SecretStr
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.api import keys
from scaleset.clock import ManualClock
from scaleset.doctor.diagnose import diagnose
from scaleset.doctor.inventory import Thresholds
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import AUTOSCALING_LISTENER, EPHEMERAL_RUNNER, POD, SECRET

__all__ = ["actions_crds", "client"]

PAT = "ghp_doctorTests0123456789abcdefghijklmn"
ARC_FINALIZERS = [
    "ephemeralrunner.actions.github.com/finalizer",
    "ephemeralrunner.actions.github.com/runner-registration-finalizer",
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub(clock=ManualClock(wall=datetime.now(UTC))) as server:
        server.add_pat(register_secret(PAT))
        register_secret_source(server.control.issued_secrets)
        yield server


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


@pytest.fixture
async def cluster(
    kube_backend: KubeBackend,
    client: KubeClient,
    actions_crds: None,
    namespace: str,
    fake: FakeGitHub,
) -> AsyncIterator[Cluster]:
    token = base64.b64encode(PAT.encode()).decode()
    await client.create(
        SECRET,
        {"metadata": {"name": "github-config"}, "data": {"github_token": token}},
        namespace=namespace,
    )
    world = Cluster(client, namespace, fake)
    try:
        yield world
    finally:
        await world.release()


def ahead(seconds: float) -> ManualClock:
    return ManualClock(wall=datetime.now(UTC) + timedelta(seconds=seconds))


async def test_doctor_finds_each_fingerprint_in_arc_shaped_objects(cluster: Cluster) -> None:
    ns = cluster.namespace
    # ARC #4588: pod recreated from the used JIT config, Running with no job
    await cluster.runner("set-runner-4588", phase="Running", runnerId=cluster.register("a"))
    await cluster.runner_pod("set-runner-4588")
    # registration gone on GitHub
    await cluster.runner("set-runner-gone", phase="Pending", runnerId=4242)
    # terminal runner holding its slot
    await cluster.runner(
        "set-runner-failed", phase="Failed", reason="TooManyPodFailures", runnerId=0
    )
    # idle (Ready, no job) for days
    await cluster.runner(
        "set-runner-old", phase="Pending", ready=True, runnerId=cluster.register("b")
    )
    # stuck deleting
    await cluster.runner("set-runner-stuck", phase="Pending", runnerId=cluster.register("c"))
    await cluster.client.delete(EPHEMERAL_RUNNER, ObjectKey(ns, "set-runner-stuck"))
    # two listeners for one scale set, one listener pod crash-looping
    await cluster.listener("arc-listener")
    await cluster.listener("scaleset-listener")
    await cluster.pod(
        "arc-listener",
        labels={
            keys.COMPONENT_LABEL: keys.COMPONENT_LISTENER,
            keys.SCALE_SET_NAMESPACE_LABEL: ns,
        },
        status={
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "listener",
                    "image": "listener:1",
                    "imageID": "",
                    "ready": False,
                    "restartCount": 9,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                }
            ],
        },
    )
    before = await cluster.client.list(EPHEMERAL_RUNNER, namespace=ns)
    report = await diagnose(
        cluster.client,
        ahead(2 * 86400),
        namespace=ns,
        github_token=SecretStr(PAT),
        thresholds=Thresholds(pod_newer_than_runner=-1.0),
        environ={},
    )
    by_check: dict[str, set[str]] = {}
    for finding in report.findings:
        by_check.setdefault(finding.check, set()).add(finding.target)
    runner = f"EphemeralRunner {ns}/"
    assert f"{runner}set-runner-4588" in by_check["pod-newer-than-runner"]
    assert f"{runner}set-runner-4588" in by_check["running-without-job"]
    assert by_check["registration-missing"] == {f"{runner}set-runner-gone"}
    assert by_check["terminal-holding-slot"] == {f"{runner}set-runner-failed"}
    assert f"{runner}set-runner-old" in by_check["idle-past-age"]
    assert by_check["stuck-deleting"] == {f"{runner}set-runner-stuck"}
    assert len(by_check["listener-session-conflict"]) == 1
    assert by_check["listener-crash-loop"] == {f"Pod {ns}/arc-listener"}
    assert report.skipped == ()
    after = await cluster.client.list(EPHEMERAL_RUNNER, namespace=ns)
    assert [i.resource_version for i in after.items] == [
        i.resource_version for i in before.items
    ]  # read-only


async def test_doctor_finds_nothing_on_a_healthy_set(cluster: Cluster) -> None:
    await cluster.runner(
        "set-runner-idle", phase="Pending", ready=True, runnerId=cluster.register("i")
    )
    await cluster.runner_pod("set-runner-idle")
    await cluster.runner(
        "set-runner-busy",
        phase="Running",
        ready=True,
        runnerId=cluster.register("j"),
        jobId="j1",
        jobRequestId=3,
    )
    await cluster.listener("arc-listener")
    report = await diagnose(
        cluster.client,
        ahead(60),
        namespace=cluster.namespace,
        github_token=SecretStr(PAT),
        environ={},
    )
    assert report.findings == ()
    assert report.skipped == ()
    assert "registration-missing" in report.checked


async def test_without_a_token_the_github_check_is_skipped_and_said(cluster: Cluster) -> None:
    await cluster.runner("set-runner-gone", phase="Pending", runnerId=4242)
    report = await diagnose(cluster.client, ahead(60), namespace=cluster.namespace, environ={})
    assert report.findings == ()
    assert [s.check for s in report.skipped] == ["registration-missing"]
    assert "GITHUB_TOKEN" in report.skipped[0].why
