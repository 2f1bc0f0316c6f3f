"""Leader election over a Lease: hand-over on release, take-over after kill -9, and a
partitioned leader that stops its work before anyone else may start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import (
    SCALESET,
    Process,
    Timings,
    lease_record,
    new_manager,
    processes,
    running,
    wait_holder,
)
from tests.support.netfaults import TcpProxy
from tests.support.waiting import eventually

from scaleset.kube.client import KubeClient
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP, LEASE
from scaleset.runtime.controller import Result
from scaleset.runtime.leader import LeaderElectionConfig, LeaderElector, LeadershipLost


def elector(client: KubeClient, namespace: str, identity: str, lease: float) -> LeaderElector:
    return LeaderElector(
        client,
        LeaderElectionConfig(
            lease_name="handover",
            namespace=namespace,
            identity=identity,
            lease_duration=lease,
            renew_deadline=lease * 2 / 3,
            retry_period=0.2,
        ),
    )


async def test_release_hands_the_lease_over_at_once(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # A 60 s lease: if release did not clear it, B could not lead within the 20 s bound.
    async with make_client(kube_backend) as a_client, make_client(kube_backend) as b_client:
        a = elector(a_client, namespace, "a", lease=60.0)
        b = elector(b_client, namespace, "b", lease=60.0)
        await a.acquire()
        b_acquire = asyncio.ensure_future(b.acquire())
        await eventually(lambda: b.observed_holder == "a", what="b sees a holding")
        assert not b_acquire.done()
        await a.release()
        await asyncio.wait_for(b_acquire, 20.0)
        assert b.is_leader
        record = await lease_record(client, namespace, "handover")
        assert record is not None
        assert record.holder == "b"
        assert record.transitions == 1
        await b.release()


async def test_release_after_an_unseen_renewal_still_clears_the_lease(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # A renewal cancelled by shutdown can reach the server without the elector learning the new
    # resourceVersion; here another write moves the lease on while it still names "a". The
    # release must re-read and clear it, not give up on the 409.
    async with make_client(kube_backend) as a_client:
        a = elector(a_client, namespace, "a", lease=60.0)
        await a.acquire()
        await client.patch_merge(
            LEASE,
            ObjectKey(namespace, "handover"),
            {"metadata": {"annotations": {"test/moved-on": "yes"}}},
        )

        await a.release()

    record = await lease_record(client, namespace, "handover")
    assert record is not None
    assert record.holder == ""
    assert record.duration_seconds == 1
    assert not a.is_leader


async def test_a_partitioned_leader_stops_working_before_its_lease_expires(
    kube_backend: KubeBackend, client: KubeClient, proxy: TcpProxy, namespace: str
) -> None:
    timeline: list[str] = []
    in_flight = asyncio.Event()

    async def a_work(key: ObjectKey) -> Result | None:
        timeline.append("A works")
        in_flight.set()
        try:
            await asyncio.Event().wait()  # long work, still running when the partition hits
        except asyncio.CancelledError:
            timeline.append("A cancelled")
            raise
        return None

    async def b_work(key: ObjectKey) -> Result | None:
        timeline.append("B works")
        return None

    timings = Timings(lease_duration=4.0, renew_deadline=2.0, retry_period=0.25)
    await client.create(
        CONFIG_MAP, {"metadata": {"name": "job", "namespace": namespace, "labels": {"w": "1"}}}
    )
    async with (
        make_client(kube_backend, proxy=proxy) as a_client,
        make_client(kube_backend) as b_client,
    ):
        a = new_manager(a_client, namespace, "a", timings=timings, metrics_address="0")
        a.controller("work", for_kind=CONFIG_MAP, reconcile=a_work, label_selector="w=1")
        b = new_manager(b_client, namespace, "b", timings=timings, metrics_address="0")
        b.controller("work", for_kind=CONFIG_MAP, reconcile=b_work, label_selector="w=1")
        async with running(a) as a_task:
            await eventually(in_flight.is_set, what="A leads and works")
            async with running(b):
                await eventually(lambda: b.elector.observed_holder == "a", what="B sees A holding")
                assert not b.leading.is_set()
                proxy.partition()  # A can no longer renew; B still reaches the server
                await eventually(lambda: "B works" in timeline, within=30.0, what="B took over")
                with pytest.raises(LeadershipLost):
                    await asyncio.wait_for(a_task, 10.0)
    assert timeline.index("A cancelled") < timeline.index("B works")
    assert timeline.count("A works") == 1


def controller_argv(kubeconfig: Path, namespace: str, identity: str) -> list[str]:
    return [
        str(SCALESET),
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        "--identity",
        identity,
        "--leader-election-id",
        "scaleset-test",
        "--lease-duration",
        "3",
        "--renew-deadline",
        "2",
        "--retry-period",
        "0.25",
        "--metrics-addr",
        "0",
        "--log-level",
        "info",
        "--log-format",
        "json",
        "--namespaces",
        namespace,
    ]


def controller_env(namespace: str) -> dict[str, str]:
    return {
        "CONTROLLER_MANAGER_POD_NAMESPACE": namespace,
        "CONTROLLER_MANAGER_CONTAINER_IMAGE": "ghcr.io/actions/gha-runner-scale-set-controller:x",
    }


@pytest.mark.usefixtures("actions_crds")
async def test_a_killed_leader_is_replaced_within_the_lease_duration(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    async with processes() as started:
        leader = await Process.start(
            controller_argv(kube_backend.kubeconfig_path, namespace, "proc-a"),
            tmp_path / "a.log",
            controller_env(namespace),
        )
        started.append(leader)
        await wait_holder(client, namespace, "scaleset-test", "proc-a")
        follower = await Process.start(
            controller_argv(kube_backend.kubeconfig_path, namespace, "proc-b"),
            tmp_path / "b.log",
            controller_env(namespace),
        )
        started.append(follower)
        await eventually(
            lambda: "waiting for leadership" in follower.output(), what="B campaigning"
        )
        record = await lease_record(client, namespace, "scaleset-test")
        assert record is not None
        assert record.holder == "proc-a"
        leader.kill()  # kill -9: no release, the lease must expire
        assert await leader.wait() == -9
        await wait_holder(client, namespace, "scaleset-test", "proc-b")
        record = await lease_record(client, namespace, "scaleset-test")
        assert record is not None
        assert record.transitions == 1
        assert '"became leader"' in follower.output()
        follower.terminate()
        assert await follower.wait() == 0
    record = await lease_record(client, namespace, "scaleset-test")
    assert record is not None
    assert (record.holder, record.duration_seconds) == ("", 1)  # released on SIGTERM


async def test_the_controller_process_explains_a_bad_kubeconfig_in_one_line(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("clusters: [\n")
    proc = await Process.start(
        controller_argv(broken, "default", "x"), tmp_path / "out.log", controller_env("default")
    )
    assert await proc.wait() == 1
    lines = [line for line in proc.output().splitlines() if line.strip()]
    assert len(lines) == 1
    assert "kubeconfig" in lines[0]
    assert "Traceback" not in proc.output()


async def test_the_controller_process_explains_an_unreachable_server(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: abc}}]\n"
    )
    proc = await Process.start(
        controller_argv(kubeconfig, "default", "x"), tmp_path / "out.log", controller_env("default")
    )
    assert await proc.wait() == 1
    lines = [line for line in proc.output().splitlines() if line.strip()]
    assert len(lines) == 1
    assert "cannot reach the Kubernetes API server" in lines[0]
