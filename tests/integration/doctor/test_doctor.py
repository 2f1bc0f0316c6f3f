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

from datetime import UTC, datetime, timedelta

from pydantic import SecretStr
from tests.integration.doctor.world import PAT, Cluster

from scaleset.api import keys
from scaleset.clock import ManualClock
from scaleset.doctor.diagnose import diagnose
from scaleset.doctor.inventory import Thresholds
from scaleset.kube import ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER


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
        ahead(2 * 3600),  # the busy runner's job has run two hours; the idle one is no age
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
