"""Graceful deletion finished like a real kubelet does (SIGTERM, grace period on the kubelet's
clock, SIGKILL, terminated statuses, grace-0 delete with a uid precondition), and the injected
faults: eviction, node loss (vanish), hang, freeze."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from tests.integration.kubelet.pods import (
    advance,
    condition,
    container,
    create_pod,
    is_running,
    phase,
    pod_manifest,
    terminated,
    wait_gone,
    wait_pod,
    waiting_reason,
)
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import SimulatedKubelet, UnknownPod
from scaleset.embedded.kubelet._api import write_status
from scaleset.embedded.kubelet.directives import EVICT_AFTER, HANG, IMAGE_PULL_ERROR, VANISH_AFTER
from scaleset.kube import Invalid, KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import POD


@asynccontextmanager
async def pod_history(
    client: KubeClient, namespace: str, name: str
) -> AsyncIterator[list[tuple[str, KubeObject]]]:
    """Every watch event of one pod while the block runs (and until it is deleted)."""
    seen: list[tuple[str, KubeObject]] = []
    current = await client.get(POD, ObjectKey(namespace, name))
    opened = asyncio.Event()

    async def follow() -> None:
        async with client.watch(
            POD,
            namespace=namespace,
            resource_version=current.resource_version,
            field_selector=f"metadata.name={name}",
            timeout_seconds=60,
        ) as events:
            opened.set()
            async for event in events:
                seen.append((event.type, event.object))
                if event.type == "DELETED":
                    return

    task = asyncio.ensure_future(follow())
    await opened.wait()
    try:
        yield seen
        async with asyncio.timeout(15):
            await asyncio.shield(task)
    finally:
        task.cancel()


async def test_graceful_deletion_stops_the_containers_and_removes_the_pod(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    pod = await create_pod(client, namespace, pod_manifest("web"))
    await wait_pod(client, namespace, "web", is_running, "running")
    async with pod_history(client, namespace, "web") as history:
        deleting = await client.delete(POD, ObjectKey(namespace, "web"))
        assert deleting is not None
        assert deleting.deletion_timestamp is not None  # bound pods are deleted gracefully
    kinds = [kind for kind, _ in history]
    assert kinds[-1] == "DELETED"
    final = history[-1][1]
    assert final.uid == pod.uid
    done = terminated(final, "main")
    assert done is not None
    assert (done["exitCode"], done["reason"]) == (0, "Completed")  # it obeyed SIGTERM
    assert phase(final) == "Succeeded"
    await eventually(
        lambda: kubelet.truth(namespace, "web") is None, within=10.0, what="worker gone"
    )


async def test_a_hung_container_is_killed_when_the_grace_period_ends(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    await create_pod(client, namespace, pod_manifest("stuck", annotations={HANG: "main"}, grace=45))
    await wait_pod(client, namespace, "stuck", is_running, "running")
    async with pod_history(client, namespace, "stuck") as history:
        await client.delete(POD, ObjectKey(namespace, "stuck"))
        pod = await wait_pod(
            client, namespace, "stuck", lambda p: p.is_deleting, "deletion observed"
        )
        assert pod.metadata["deletionGracePeriodSeconds"] == 45
        assert is_running(pod)  # SIGTERM ignored: still running during the grace period
        await advance(clock, 44)
        truth = kubelet.truth(namespace, "stuck")
        assert truth is not None
        assert truth.container("main").state == "running"
        await advance(clock, 1)
    final = history[-1][1]
    done = terminated(final, "main")
    assert done is not None
    assert (done["exitCode"], done["reason"]) == (137, "Error")
    assert phase(final) == "Failed"


async def test_deleting_a_pod_that_never_started_just_removes_it(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    manifest = pod_manifest("unpullable", annotations={IMAGE_PULL_ERROR: "main"})
    await create_pod(client, namespace, manifest)
    await wait_pod(
        client,
        namespace,
        "unpullable",
        lambda p: waiting_reason(p, "main") == "ErrImagePull",
        "ErrImagePull",
    )
    await client.delete(POD, ObjectKey(namespace, "unpullable"))
    await wait_gone(client, namespace, "unpullable")


async def test_image_pull_errors_back_off(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest("typo", containers=[container(image="registry.example/nope:1")])
    await create_pod(client, namespace, manifest)
    await wait_pod(client, namespace, "typo", is_running, "running")  # pulls work by default
    await client.delete(POD, ObjectKey(namespace, "typo"))
    await wait_gone(client, namespace, "typo")

    await create_pod(client, namespace, pod_manifest("typo2", annotations={IMAGE_PULL_ERROR: "*"}))
    pod = await wait_pod(
        client, namespace, "typo2", lambda p: waiting_reason(p, "main") == "ErrImagePull", "err"
    )
    message = pod.status["containerStatuses"][0]["state"]["waiting"]["message"]
    assert "failed to pull and unpack image" in message
    assert '"docker.io/library/busybox:1.36"' in message
    assert phase(pod) == "Pending"
    await advance(clock, 10)
    pod = await wait_pod(
        client,
        namespace,
        "typo2",
        lambda p: waiting_reason(p, "main") == "ImagePullBackOff",
        "ImagePullBackOff",
    )
    assert pod.status["containerStatuses"][0]["state"]["waiting"]["message"] == (
        'Back-off pulling image "busybox:1.36"'
    )


async def test_eviction_fails_the_pod_with_reason_evicted(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    await create_pod(client, namespace, pod_manifest("victim"))
    await wait_pod(client, namespace, "victim", is_running, "running")
    await kubelet.evict(namespace, "victim")
    pod = await client.get(POD, ObjectKey(namespace, "victim"))  # written before evict returned
    assert phase(pod) == "Failed"
    assert pod.status["reason"] == "Evicted"
    assert pod.status["message"].startswith("The node was low on resource: memory. ")
    assert "Container main was using" in pod.status["message"]
    disruption = condition(pod, "DisruptionTarget")
    assert (disruption["status"], disruption["reason"]) == ("True", "TerminationByKubelet")
    done = terminated(pod, "main")
    assert done is not None
    assert done["exitCode"] == 137
    truth = kubelet.truth(namespace, "victim")
    assert truth is not None
    assert truth.processes_alive == 0

    await client.delete(POD, ObjectKey(namespace, "victim"))  # a Failed pod goes at once
    with pytest.raises(NotFound):
        await client.get(POD, ObjectKey(namespace, "victim"))


async def test_eviction_by_annotation(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    await create_pod(client, namespace, pod_manifest("spot", annotations={EVICT_AFTER: "300"}))
    await wait_pod(client, namespace, "spot", is_running, "running")
    await advance(clock, 300)
    pod = await wait_pod(client, namespace, "spot", lambda p: phase(p) == "Failed", "evicted")
    assert pod.status["reason"] == "Evicted"


async def test_vanish_deletes_the_pod_object_and_kills_its_processes(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    await create_pod(client, namespace, pod_manifest("lost"))
    running = await wait_pod(client, namespace, "lost", is_running, "running")
    await kubelet.vanish(namespace, "lost")
    with pytest.raises(NotFound):
        await client.get(POD, ObjectKey(namespace, "lost"))
    await eventually(
        lambda: kubelet.truth(namespace, "lost") is None, within=10.0, what="worker gone"
    )
    assert kubelet.orphaned_processes == 0
    assert is_running(running)  # the last status written: nobody reported the end
    with pytest.raises(UnknownPod):
        await kubelet.evict(namespace, "lost")


async def test_vanish_can_leave_the_processes_running_unreachable(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    await create_pod(client, namespace, pod_manifest("cutoff", annotations={VANISH_AFTER: "60"}))
    await wait_pod(client, namespace, "cutoff", is_running, "running")
    await create_pod(client, namespace, pod_manifest("partitioned"))
    await wait_pod(client, namespace, "partitioned", is_running, "running")
    await kubelet.vanish(namespace, "partitioned", keep_processes=True)
    assert kubelet.orphaned_processes == 1
    await advance(clock, 60)
    await wait_gone(client, namespace, "cutoff")
    assert kubelet.orphaned_processes == 1


async def test_a_frozen_node_never_finishes_a_deletion(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    await create_pod(client, namespace, pod_manifest("frozen"))
    await wait_pod(client, namespace, "frozen", is_running, "running")
    kubelet.freeze(namespace, "frozen")
    await client.delete(POD, ObjectKey(namespace, "frozen"))
    clock.advance(3600)
    pod = await wait_pod(client, namespace, "frozen", lambda p: p.is_deleting, "terminating")
    assert is_running(pod)
    truth = kubelet.truth(namespace, "frozen")
    assert truth is not None
    assert truth.frozen
    assert truth.processes_alive == 1
    await client.delete(POD, ObjectKey(namespace, "frozen"), grace_period_seconds=0)
    await eventually(
        lambda: kubelet.truth(namespace, "frozen") is None, within=10.0, what="worker gone"
    )


async def test_a_pod_force_deleted_and_recreated_under_the_same_name_is_a_new_pod(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    first = await create_pod(client, namespace, pod_manifest("runner-1"))
    await wait_pod(client, namespace, "runner-1", is_running, "running")
    await client.delete(POD, ObjectKey(namespace, "runner-1"), grace_period_seconds=0)
    second = await create_pod(client, namespace, pod_manifest("runner-1", restart_policy="Never"))
    pod = await wait_pod(
        client,
        namespace,
        "runner-1",
        lambda p: p.uid == second.uid and is_running(p),
        "the new pod running",
    )
    assert pod.uid != first.uid
    await eventually(
        lambda: [t.uid for t in kubelet.pods()] == [second.uid],
        within=10.0,
        what="only the new pod on the node",
    )


async def test_a_status_write_for_an_old_uid_never_lands_on_its_replacement(
    client: KubeClient, namespace: str
) -> None:
    old = await create_pod(client, namespace, pod_manifest("same-name", node_name="elsewhere"))
    await client.delete(POD, old.key, grace_period_seconds=0)
    new = await create_pod(client, namespace, pod_manifest("same-name", node_name="elsewhere"))
    with pytest.raises(Invalid):
        await write_status(client, new.key, old.uid, {"phase": "Failed"})
    assert phase(await client.get(POD, new.key)) == "Pending"
    written = await write_status(client, new.key, new.uid, {"phase": "Running"})
    assert phase(written) == "Running"
