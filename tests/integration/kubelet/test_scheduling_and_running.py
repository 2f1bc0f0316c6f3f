"""Binding and the running shapes: a pod matching the selector is bound to a simulated node and
reported Pending -> Running with the kubelet's conditions, IPs and container status fields."""

from __future__ import annotations

import ipaddress
import re

from tests.integration.kubelet.pods import (
    BUSYBOX,
    KubeletFactory,
    advance,
    condition,
    container,
    container_status,
    create_pod,
    is_running,
    phase,
    pod_manifest,
    state_of,
    wait_pod,
    waiting_reason,
)

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.kubelet.directives import PULL_SECONDS
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import POD

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


async def test_a_matching_pod_is_bound_and_runs(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    await create_pod(client, namespace, pod_manifest("web"))
    pod = await wait_pod(client, namespace, "web", is_running, "running")

    assert pod.spec["nodeName"] == "sim-node-1"
    assert phase(pod) == "Running"
    status = pod.status
    assert ipaddress.ip_address(status["hostIP"])
    assert ipaddress.ip_address(status["podIP"])
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert RFC3339.match(status["startTime"])
    assert [c["type"] for c in status["conditions"]] == [
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled"):
        assert condition(pod, kind)["status"] == "True", kind
        assert RFC3339.match(condition(pod, kind)["lastTransitionTime"])
    main = container_status(pod, "main")
    assert main["ready"] is True
    assert main["started"] is True
    assert main["restartCount"] == 0
    assert main["image"] == f"docker.io/library/{BUSYBOX}"
    assert main["imageID"].startswith("docker.io/library/busybox@sha256:")
    assert re.match(r"^containerd://[0-9a-f]{64}$", main["containerID"])
    assert main["lastState"] == {}
    kind, running = state_of(pod, "main")
    assert kind == "running"
    assert RFC3339.match(running["startedAt"])
    assert pod.status.get("qosClass") == "BestEffort"  # the server's field survives our writes

    truth = kubelet.truth(namespace, "web")
    assert truth is not None
    assert truth.phase == "Running"
    assert truth.processes_alive == 1


async def test_pods_outside_the_selector_are_left_alone(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    await create_pod(client, namespace, pod_manifest("other", labels={"app": "other"}))
    await create_pod(client, namespace, pod_manifest("ours"))
    await wait_pod(client, namespace, "ours", is_running, "running")
    other = await client.get(POD, ObjectKey(namespace, "other"))
    assert not other.spec.get("nodeName")
    assert "conditions" not in other.status
    assert kubelet.truth(namespace, "other") is None


async def test_an_image_pull_in_progress_shows_container_creating(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest("slow", annotations={PULL_SECONDS: "30"})
    await create_pod(client, namespace, manifest)
    pod = await wait_pod(
        client, namespace, "slow", lambda p: "containerStatuses" in p.status, "first status"
    )
    assert phase(pod) == "Pending"
    assert waiting_reason(pod, "main") == "ContainerCreating"
    assert container_status(pod, "main")["ready"] is False
    assert container_status(pod, "main")["started"] is False
    assert "containerID" not in container_status(pod, "main")
    ready = condition(pod, "Ready")
    assert ready["status"] == "False"
    assert ready["reason"] == "ContainersNotReady"
    assert ready["message"] == "containers with unready status: [main]"
    assert condition(pod, "ContainersReady")["reason"] == "ContainersNotReady"
    assert condition(pod, "Initialized")["status"] == "True"
    assert condition(pod, "PodScheduled")["status"] == "True"

    await advance(clock, 30)
    pod = await wait_pod(client, namespace, "slow", is_running, "running after the pull")
    assert condition(pod, "Ready")["status"] == "True"
    assert "reason" not in condition(pod, "Ready")


async def test_pods_spread_over_the_nodes_and_prebound_pods_run(
    client: KubeClient, namespace: str, start_kubelet: KubeletFactory
) -> None:
    async with start_kubelet(nodes=["sim-a", "sim-b"]) as kubelet:
        await create_pod(client, namespace, pod_manifest("one"))
        first = await wait_pod(client, namespace, "one", is_running, "running")
        await create_pod(client, namespace, pod_manifest("two"))
        second = await wait_pod(client, namespace, "two", is_running, "running")
        assert {first.spec["nodeName"], second.spec["nodeName"]} == {"sim-a", "sim-b"}
        assert first.status["hostIP"] != second.status["hostIP"]

        await create_pod(client, namespace, pod_manifest("pinned", node_name="sim-b"))
        pinned = await wait_pod(client, namespace, "pinned", is_running, "running")
        assert pinned.spec["nodeName"] == "sim-b"
        assert condition(pinned, "PodScheduled")["status"] == "True"
        assert len({p.status["podIP"] for p in (first, second, pinned)}) == 3
        assert sorted(t.name for t in kubelet.pods()) == ["one", "pinned", "two"]


async def test_several_containers_are_reported_in_spec_order(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    manifest = pod_manifest(
        "pair", containers=[container("app"), container("proxy", image="envoyproxy/envoy:v1.30")]
    )
    await create_pod(client, namespace, manifest)
    pod = await wait_pod(
        client, namespace, "pair", lambda p: is_running(p, "app") and is_running(p, "proxy"), "both"
    )
    assert [s["name"] for s in pod.status["containerStatuses"]] == ["app", "proxy"]
    assert container_status(pod, "proxy")["image"] == "docker.io/envoyproxy/envoy:v1.30"
