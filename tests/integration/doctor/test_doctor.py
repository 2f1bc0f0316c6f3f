"""``scaleset doctor`` on both API-server backends: ARC-shaped objects written by hand (an
ARC-era runner whose pod was recreated, one Running with no job, one whose registration the
fake GitHub does not know, one stuck deleting, a Failed one, an old idle one, two listeners
for one scale set, a crash-looping listener pod; scale sets without a controller, with a bad
condition, without a listener or listener pod; a runner whose pod is gone, runners GitHub
refuses as deprecated; a controller nobody leads) are each found; a healthy namespace gives no
finding; the doctor writes nothing; without GitHub credentials it says which check it skipped.

Creation and deletion timestamps come from the API server's own clock, so the doctor's
``ManualClock`` is set ahead of it (the "now" of the age checks). The pod-newer-than-runner
gap is between two server timestamps a test cannot spread by hours: that check runs here with
a threshold of -1 s (the gap logic itself is proved in tests/unit/doctor).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.integration.doctor.world import Cluster

from scaleset.api import keys
from scaleset.clock import ManualClock
from scaleset.doctor.diagnose import diagnose
from scaleset.doctor.findings import Report
from scaleset.doctor.inventory import Thresholds
from scaleset.doctor.registrations import GitHubAccess
from scaleset.kube import ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER


def ahead(seconds: float) -> ManualClock:
    return ManualClock(wall=datetime.now(UTC) + timedelta(seconds=seconds))


def by_check(report: Report) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in report.findings:
        found.setdefault(finding.check, set()).add(finding.target)
    return found


async def test_doctor_finds_each_fingerprint_in_arc_shaped_objects(
    cluster: Cluster, github: GitHubAccess
) -> None:
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
        github=github,
        thresholds=Thresholds(pod_newer_than_runner=-1.0),
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


async def test_doctor_finds_nothing_on_a_healthy_set(
    cluster: Cluster, github: GitHubAccess
) -> None:
    clock = ahead(2 * 3600)  # the busy runner's job has run two hours; the idle one is no age
    await cluster.scale_set("arc", conditions=[registered()])
    await cluster.controller()
    await cluster.lease(renewed=clock.now())
    await cluster.listener("arc-listener")
    await cluster.listener_pod("arc-listener")
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
    await cluster.runner_pod("set-runner-busy")
    report = await diagnose(cluster.client, clock, namespace=cluster.namespace, github=github)
    assert report.findings == ()
    assert report.skipped == ()
    assert report.healthy
    assert "registration-missing" in report.checked


def registered() -> dict[str, str]:
    return {"type": "ScaleSetRegistered", "status": "True", "reason": "Registered"}


async def test_without_credentials_the_github_check_is_skipped_and_said(
    cluster: Cluster, no_credentials: GitHubAccess
) -> None:
    await cluster.runner("set-runner-gone", phase="Pending", runnerId=4242)
    await cluster.runner_pod("set-runner-gone")
    report = await diagnose(
        cluster.client, ahead(60), namespace=cluster.namespace, github=no_credentials
    )
    assert report.findings == ()
    assert [s.check for s in report.skipped] == ["registration-missing"]
    assert "GITHUB_TOKEN" in report.skipped[0].why


async def test_doctor_finds_what_stops_a_scale_set(
    cluster: Cluster, no_credentials: GitHubAccess
) -> None:
    """No controller serves the namespace; one scale set's registration failed
    (ScaleSetRegistered=False), one registered has no listener, one has a listener without a
    pod; a runner is Running with its pod gone; runner pods exit 7 — GitHub refuses their
    version — while the scale set reports Running (ARC #4601)."""
    ns = cluster.namespace
    refused = {"type": "ScaleSetRegistered", "status": "False", "reason": "GitHubUnauthorized"}
    await cluster.scale_set("refused", registered=False, conditions=[refused])
    await cluster.scale_set("no-listener", phase="Running")
    await cluster.scale_set("no-listener-pod")
    await cluster.listener("no-listener-pod-listener", scale_set="no-listener-pod")
    await cluster.runner("set-runner-pod-gone", phase="Running", runnerId=cluster.register("g"))
    for name in ("set-runner-v1", "set-runner-v2"):
        await cluster.refused_runner(name)
    soon = await diagnose(cluster.client, ahead(30), namespace=ns, github=no_credentials)
    assert "runner-pod-missing" not in by_check(soon)  # gone for less than a minute
    report = await diagnose(cluster.client, ahead(3600), namespace=ns, github=no_credentials)
    found = by_check(report)
    assert found["controller-missing"] == {f"Namespace {ns}"}
    assert found["scale-set-condition"] == {f"AutoscalingRunnerSet {ns}/refused"}
    assert found["listener-missing"] == {
        f"AutoscalingRunnerSet {ns}/no-listener",
        f"AutoscalingListener {ns}/no-listener-pod-listener",
    }
    assert found["runner-pod-missing"] == {f"EphemeralRunner {ns}/set-runner-pod-gone"}
    assert "running-without-job" not in found
    deprecated = [f for f in report.findings if f.check == "runner-version-deprecated"]
    assert {f.target for f in deprecated} == {
        f"EphemeralRunner {ns}/set-runner-v1",
        f"EphemeralRunner {ns}/set-runner-v2",
    }
    assert all("exited 7" in f.detail and f.severity == "error" for f in deprecated)
    assert not report.healthy


async def test_doctor_finds_a_controller_nobody_leads(
    cluster: Cluster, no_credentials: GitHubAccess
) -> None:
    clock = ahead(3600)
    await cluster.scale_set("arc")
    await cluster.listener("arc-listener")
    await cluster.listener_pod("arc-listener")
    await cluster.controller()
    await cluster.lease(renewed=clock.now() - timedelta(minutes=10))
    report = await diagnose(
        cluster.client, clock, namespace=cluster.namespace, github=no_credentials
    )
    assert len(report.findings) == 1, report.findings
    [finding] = report.findings
    assert finding.check == "controller-not-leading"
    assert finding.target == f"Lease {cluster.namespace}/{cluster.lease_name}"
    assert "gha-rs-controller-0" in finding.detail


async def test_a_controller_that_is_not_ready_is_missing(cluster: Cluster) -> None:
    await cluster.scale_set("arc")
    await cluster.controller(ready=False)
    report = await diagnose(cluster.client, ahead(3600), namespace=cluster.namespace)
    [finding] = [f for f in report.findings if f.check == "controller-missing"]
    assert "not ready" in finding.detail
