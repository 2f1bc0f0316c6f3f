"""Init containers: they run in order before the main containers (which wait with
PodInitializing); a failing one fails the pod under Never and is restarted otherwise; a native
sidecar (restartPolicy Always) keeps running next to the main containers."""

from __future__ import annotations

import pytest
from tests.integration.kubelet.pods import (
    advance,
    condition,
    container,
    container_status,
    create_pod,
    is_running,
    phase,
    pod_manifest,
    state_of,
    terminated,
    wait_pod,
    waiting_reason,
)

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.kubelet.directives import EXIT
from scaleset.kube import KubeClient


async def test_init_containers_run_first_then_the_main_ones(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest(
        "staged",
        init=[container("setup"), container("migrate")],
        annotations={EXIT: "setup=0@10,migrate=0@5"},
    )
    await create_pod(client, namespace, manifest)
    pod = await wait_pod(
        client, namespace, "staged", lambda p: is_running(p, "setup", init=True), "setup"
    )
    assert phase(pod) == "Pending"
    assert waiting_reason(pod, "migrate", init=True) == "PodInitializing"
    assert waiting_reason(pod, "main") == "PodInitializing"
    assert container_status(pod, "setup", init=True)["ready"] is False
    initialized = condition(pod, "Initialized")
    assert (initialized["status"], initialized["reason"]) == ("False", "ContainersNotInitialized")
    assert initialized["message"] == "containers with incomplete status: [setup migrate]"

    await advance(clock, 10)
    pod = await wait_pod(
        client, namespace, "staged", lambda p: is_running(p, "migrate", init=True), "migrate"
    )
    setup = terminated(pod, "setup", init=True)
    assert setup is not None
    assert (setup["exitCode"], setup["reason"]) == (0, "Completed")
    assert container_status(pod, "setup", init=True)["ready"] is True
    assert (
        condition(pod, "Initialized")["message"] == "containers with incomplete status: [migrate]"
    )

    await advance(clock, 5)
    pod = await wait_pod(client, namespace, "staged", is_running, "main running")
    assert phase(pod) == "Running"
    assert condition(pod, "Initialized")["status"] == "True"
    assert [s["name"] for s in pod.status["initContainerStatuses"]] == ["setup", "migrate"]


async def test_a_failing_init_container_fails_the_pod_under_never(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    manifest = pod_manifest("doomed", init=[container("setup")], annotations={EXIT: "setup=1"})
    await create_pod(client, namespace, manifest)
    pod = await wait_pod(client, namespace, "doomed", lambda p: phase(p) == "Failed", "Failed")
    setup = terminated(pod, "setup", init=True)
    assert setup is not None
    assert (setup["exitCode"], setup["reason"]) == (1, "Error")
    assert waiting_reason(pod, "main") == "PodInitializing"
    assert condition(pod, "Initialized")["status"] == "False"
    assert condition(pod, "Initialized")["message"] == "containers with incomplete status: [setup]"
    truth = kubelet.truth(namespace, "doomed")
    assert truth is not None
    assert truth.container("main").state == "waiting"
    assert truth.processes_alive == 0


async def test_a_failing_init_container_is_restarted_under_on_failure(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest(
        "stubborn",
        init=[container("setup")],
        restart_policy="OnFailure",
        annotations={EXIT: "setup=1@3"},
    )
    await create_pod(client, namespace, manifest)
    await wait_pod(client, namespace, "stubborn", lambda p: is_running(p, "setup", init=True), "up")
    await advance(clock, 3)
    pod = await wait_pod(
        client,
        namespace,
        "stubborn",
        lambda p: container_status(p, "setup", init=True)["restartCount"] == 1,
        "setup restarted",
    )
    status = container_status(pod, "setup", init=True)
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert phase(pod) == "Pending"
    assert waiting_reason(pod, "main") == "PodInitializing"


@pytest.mark.embedded_only(
    reason="kube-apiserver 1.20 prunes initContainers[].restartPolicy (native sidecars are 1.28+)"
)
async def test_a_native_sidecar_runs_beside_the_main_container_and_stops_after_it(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest(
        "with-sidecar",
        init=[container("dind", image="docker:dind", restartPolicy="Always")],
        annotations={EXIT: "main=0@30"},
    )
    await create_pod(client, namespace, manifest)
    pod = await wait_pod(client, namespace, "with-sidecar", is_running, "main running")
    assert state_of(pod, "dind", init=True)[0] == "running"
    assert container_status(pod, "dind", init=True)["ready"] is True
    assert condition(pod, "Initialized")["status"] == "True"
    assert phase(pod) == "Running"

    await advance(clock, 30)
    pod = await wait_pod(
        client,
        namespace,
        "with-sidecar",
        lambda p: phase(p) == "Succeeded" and terminated(p, "dind", init=True) is not None,
        "Succeeded with the sidecar stopped",
    )
    dind = terminated(pod, "dind", init=True)
    assert dind is not None
    assert dind["exitCode"] == 0  # stopped with SIGTERM once the main container finished
    truth = kubelet.truth(namespace, "with-sidecar")
    assert truth is not None
    assert truth.processes_alive == 0
