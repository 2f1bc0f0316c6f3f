"""Containers that end: Completed / Error / OOMKilled terminations, the pod phase they lead to,
and restarts under restartPolicy OnFailure / Always (immediate, then CrashLoopBackOff)."""

from __future__ import annotations

from tests.integration.kubelet.pods import (
    KubeletFactory,
    advance,
    condition,
    container,
    container_status,
    create_pod,
    is_running,
    phase,
    pod_manifest,
    terminated,
    wait_pod,
    waiting_reason,
)

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import (
    ContainerRuntime,
    ExitDirective,
    PodScript,
    SimulatedKubelet,
    exit_after,
)
from scaleset.embedded.kubelet.directives import EXIT, OOM_AFTER
from scaleset.kube import KubeClient


async def test_a_container_that_exits_zero_completes_the_pod(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    await create_pod(client, namespace, pod_manifest("job", annotations={EXIT: "main=0@60"}))
    await wait_pod(client, namespace, "job", is_running, "running")
    await advance(clock, 60)
    pod = await wait_pod(client, namespace, "job", lambda p: phase(p) == "Succeeded", "Succeeded")

    done = terminated(pod, "main")
    assert done is not None
    assert done["exitCode"] == 0
    assert done["reason"] == "Completed"
    assert done["containerID"] == container_status(pod, "main")["containerID"]
    assert done["startedAt"] <= done["finishedAt"]
    assert container_status(pod, "main")["ready"] is False
    assert container_status(pod, "main")["started"] is False
    for kind in ("Ready", "ContainersReady"):
        assert condition(pod, kind)["status"] == "False"
        assert condition(pod, kind)["reason"] == "PodCompleted"
    assert condition(pod, "Initialized")["reason"] == "PodCompleted"
    truth = kubelet.truth(namespace, "job")
    assert truth is not None
    assert truth.processes_alive == 0


async def test_a_non_zero_exit_fails_the_pod_under_never(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    await create_pod(client, namespace, pod_manifest("broken", annotations={EXIT: "main=3"}))
    pod = await wait_pod(client, namespace, "broken", lambda p: phase(p) == "Failed", "Failed")
    done = terminated(pod, "main")
    assert done is not None
    assert (done["exitCode"], done["reason"]) == (3, "Error")
    ready = condition(pod, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")
    assert ready["message"] == "containers with unready status: [main]"


async def test_programs_come_from_the_runtime_by_image(
    client: KubeClient, namespace: str, start_kubelet: KubeletFactory, clock: ManualClock
) -> None:
    runtime = ContainerRuntime({"example.com/batch:*": exit_after(5, 4)})
    async with start_kubelet(runtime=runtime):
        manifest = pod_manifest(
            "batch",
            containers=[container("work", image="example.com/batch:v1"), container("idle")],
        )
        await create_pod(client, namespace, manifest)
        await wait_pod(client, namespace, "batch", lambda p: is_running(p, "work"), "running")
        await advance(clock, 5)
        pod = await wait_pod(
            client, namespace, "batch", lambda p: terminated(p, "work") is not None, "work ended"
        )
        work = terminated(pod, "work")
        assert work is not None
        assert (work["exitCode"], work["reason"]) == (4, "Error")
        assert is_running(pod, "idle")  # the default program runs until stopped
        assert phase(pod) == "Running"


async def test_oom_kill_terminates_with_137_oomkilled(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    await create_pod(client, namespace, pod_manifest("hungry"))
    await wait_pod(client, namespace, "hungry", is_running, "running")
    await kubelet.oom_kill(namespace, "hungry")
    pod = await wait_pod(client, namespace, "hungry", lambda p: phase(p) == "Failed", "Failed")
    done = terminated(pod, "main")
    assert done is not None
    assert (done["exitCode"], done["reason"]) == (137, "OOMKilled")
    assert "reason" not in pod.status  # an OOM kill is a container event, not a pod reason


async def test_an_oom_killed_container_restarts_under_always(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest("server", restart_policy="Always", annotations={OOM_AFTER: "main=20"})
    await create_pod(client, namespace, manifest)
    first = await wait_pod(client, namespace, "server", is_running, "running")
    await advance(clock, 20)
    pod = await wait_pod(
        client,
        namespace,
        "server",
        lambda p: container_status(p, "main")["restartCount"] == 1 and is_running(p),
        "restarted",
    )
    status = container_status(pod, "main")
    last = status["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")
    assert last["containerID"] == container_status(first, "main")["containerID"]
    assert status["containerID"] != last["containerID"]
    assert phase(pod) == "Running"


async def test_crash_loop_back_off_after_the_first_restart(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest("crasher", restart_policy="Always", annotations={EXIT: "main=2@1"})
    pod = await create_pod(client, namespace, manifest)
    await wait_pod(client, namespace, "crasher", is_running, "running")
    await advance(clock, 1)  # exits; restarted at once
    await wait_pod(
        client,
        namespace,
        "crasher",
        lambda p: container_status(p, "main")["restartCount"] == 1 and is_running(p),
        "first restart",
    )
    await advance(clock, 1)  # exits again: now it backs off
    backing_off = await wait_pod(
        client,
        namespace,
        "crasher",
        lambda p: waiting_reason(p, "main") == "CrashLoopBackOff",
        "CrashLoopBackOff",
    )
    status = container_status(backing_off, "main")
    assert status["state"]["waiting"]["message"] == (
        f"back-off 10s restarting failed container=main pod=crasher_{namespace}({pod.uid})"
    )
    assert status["lastState"]["terminated"]["exitCode"] == 2
    assert status["restartCount"] == 1
    assert phase(backing_off) == "Running"
    assert condition(backing_off, "Ready")["status"] == "False"

    await advance(clock, 10)
    restarted = await wait_pod(
        client,
        namespace,
        "crasher",
        lambda p: container_status(p, "main")["restartCount"] == 2 and is_running(p),
        "second restart after the back-off",
    )
    assert condition(restarted, "Ready")["status"] == "True"


async def test_on_failure_restarts_failures_but_not_success(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet, clock: ManualClock
) -> None:
    manifest = pod_manifest("retry", restart_policy="OnFailure", annotations={EXIT: "main=1@5"})
    await create_pod(client, namespace, manifest)
    await wait_pod(client, namespace, "retry", is_running, "running")
    await advance(clock, 5)
    await wait_pod(
        client,
        namespace,
        "retry",
        lambda p: container_status(p, "main")["restartCount"] == 1 and is_running(p),
        "restarted after a failure",
    )
    await kubelet.exit(namespace, "retry", "main", 0)
    pod = await wait_pod(client, namespace, "retry", lambda p: phase(p) == "Succeeded", "done")
    done = terminated(pod, "main")
    assert done is not None
    assert (done["exitCode"], done["reason"]) == (0, "Completed")
    assert container_status(pod, "main")["restartCount"] == 1


async def test_registered_scripts_apply_to_pods_created_later(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    kubelet.script("batch-*", PodScript(exits={"main": ExitDirective(5)}), namespace=namespace)
    await create_pod(client, namespace, pod_manifest("batch-1"))
    await create_pod(client, namespace, pod_manifest("other-1"))
    pod = await wait_pod(client, namespace, "batch-1", lambda p: phase(p) == "Failed", "Failed")
    done = terminated(pod, "main")
    assert done is not None
    assert done["exitCode"] == 5
    other = await wait_pod(client, namespace, "other-1", is_running, "running")
    assert phase(other) == "Running"


async def test_a_restart_whose_image_pull_fails_keeps_the_last_termination(
    client: KubeClient, namespace: str, kubelet: SimulatedKubelet
) -> None:
    await create_pod(client, namespace, pod_manifest("flaky", restart_policy="Always"))
    await wait_pod(client, namespace, "flaky", is_running, "running")
    kubelet.fail_image_pull(namespace, "flaky")
    kubelet.hang(namespace, "flaky")  # hanging does not stop an OOM kill
    await kubelet.oom_kill(namespace, "flaky")
    pod = await wait_pod(
        client, namespace, "flaky", lambda p: waiting_reason(p, "main") == "ErrImagePull", "pull"
    )
    status = container_status(pod, "main")
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert status["restartCount"] == 0  # counted when a container is created again
    assert phase(pod) == "Running"  # it ran before: it counts as stopped, not as waiting
