"""L5 — a JIT config is used once: the seed incidents on the whole simulated world.

A runner whose pod is lost or failed after its runner started is replaced (the runner deleted,
its registration removed), never given a second pod with the used JIT config — across a
controller restart too, when no memory of the start survives. The config is reused only with
positive proof the runner never started (image pull, init container), with back-off, and the
runner is replaced after five such failures. "Never mounted again" is checked on ground truth:
the simulated runner processes that tried to connect and the fake's session rejections.
"""

from __future__ import annotations

import json

import httpx2
from tests.integration.controllers.ephemeralrunner.world import RUNNER_IMAGE, World

from scaleset.devtools.transports import RequestHook
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.kubelet.directives import EXIT, IMAGE_PULL_ERROR, OOM_AFTER, RUNNER_FAULTS
from scaleset.embedded.kubelet.status import (
    IMAGE_PULL_BACK_OFF,
    ContainerRecord,
    Waiting,
    held,
    pod_status,
    started,
    waiting,
)
from scaleset.embedded.kubelet.status import PodView as KubeletPodView
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube import ObjectKey
from scaleset.kube.resources import POD


async def listening(world: World, name: str) -> None:
    await world.until(lambda: RunnerPhase.LISTENING in world.phases.of(name), f"{name} listening")


async def pod_gone(world: World, name: str) -> None:
    async def absent() -> bool:
        return await world.pod(name) is None

    await world.until(absent, f"pod {name} gone")


def assert_used_once(world: World, name: str, runner_id: int) -> None:
    """The JIT config of ``runner_id`` went to one runner process, and its registration is
    gone; nobody was ever refused a session with it (a second use would be)."""
    assert world.connections(name) == 1, world.phases.of(name)
    truth = world.fake.control.snapshot().runner(runner_id)
    assert truth.session_rejections == ()
    assert not truth.registered


async def test_L5_pod_deleted_after_start_across_a_controller_restart_is_replaced(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-restart"
    async with world.controller(identity="first"):
        await world.create_runner(name)
        runner = await world.runner_where(
            name, lambda r: r.status.runner_started_at is not None, "start recorded"
        )
        await listening(world, name)
    # No controller runs: the pod goes away (a node drained, a user's kubectl delete).
    await world.client.delete(POD, ObjectKey(world.namespace, name))
    await pod_gone(world, name)
    async with world.controller(identity="second") as controller:
        await world.gone(name)
        assert controller.decisions("PodLostAfterStart") == 1
    assert await world.pod(name) is None
    assert_used_once(world, name, runner.status.runner_id)


async def test_L5_a_start_no_controller_saw_leaves_no_proof_so_the_runner_is_replaced(
    world: World,
) -> None:
    """The controller stops right after creating the pod; the runner starts and its pod is
    deleted while no controller runs. The next controller has no evidence either way, so the
    JIT config is not trusted: replaced."""
    name = "arc-runner-unseen"
    async with world.controller(identity="first"):
        await world.create_runner(name)

        async def pod_created() -> bool:
            return await world.pod(name) is not None

        await world.until(pod_created, "pod created")
    runner = await world.runner(name)
    assert runner is not None
    assert runner.status.runner_started_at is None
    async with world.kubelet():
        await listening(world, name)
        await world.client.delete(POD, ObjectKey(world.namespace, name))
        await pod_gone(world, name)
    async with world.controller(identity="second") as controller:
        await world.gone(name)
        assert controller.decisions("PodLost") == 1
    assert_used_once(world, name, runner.status.runner_id)


async def test_L5_a_pod_that_ran_and_vanished_is_replaced(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-vanish"
    async with world.controller():
        await world.create_runner(name)
        await listening(world, name)
        runner = await world.runner(name)
        assert runner is not None
        await kubelet.vanish(world.namespace, name)
        await world.gone(name)
    assert_used_once(world, name, runner.status.runner_id)


async def test_L5_the_jit_secret_is_deleted_once_the_runner_started(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-secret-gone"
    async with world.controller() as controller:
        await world.create_runner(name)
        await world.runner_where(name, lambda r: r.status.runner_started_at is not None, "start")

        async def secret_gone() -> bool:
            return await world.secret(name) is None

        await world.until(secret_gone, "JIT Secret deleted")
        await listening(world, name)
        await world.until(lambda: controller.decisions("JitSecretDeleted") == 1, "counted")
        pod = await world.pod(name)
        assert pod is not None
        assert pod.status.get("phase") == "Running"  # the running container kept its config


async def test_L5_image_pull_failure_reuses_the_config_with_backoff_then_replaces_after_five(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-pull"
    async with world.controller() as controller:
        await world.create_runner(name, pod_annotations={IMAGE_PULL_ERROR: "runner"})
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")
        await world.gone(name)
        assert controller.decisions("ImagePullFailed") == 4
        assert controller.decisions("PodRetry") == 4
        assert controller.decisions("ReplacedAfterFailures") == 1
    # One registration, one JIT config, five pods, and no runner ever ran.
    [registration] = world.registrations(name)
    assert registration.id == runner.status.runner_id
    assert not registration.registered
    assert world.connections(name) == 0
    reasons = await world.event_reasons(name, "ImagePullFailed", "ReplacedAfterFailures")
    assert reasons.count("ImagePullFailed") == 4


async def test_L5_an_init_container_failure_reuses_the_config(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-init"
    init = [{"name": "setup", "image": "busybox:1.36"}]
    async with world.controller() as controller:
        await world.create_runner(
            name, pod_annotations={EXIT: "setup=1"}, pod_spec={"initContainers": init}
        )
        await world.runner_where(name, lambda r: len(r.status.failures) >= 2, "two failures")
        assert controller.decisions("InitContainerFailed") >= 2
        assert controller.decisions("PodRetry") >= 1
        assert len(world.registrations(name)) == 1
        await world.gone(name)
        assert controller.decisions("ReplacedAfterFailures") == 1
    assert world.connections(name) == 0


async def test_L5_an_oom_killed_busy_runner_is_replaced_never_left_running(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-oom"
    async with world.controller() as controller:
        request_id = world.fake.control.queue_job(["arc"], duration_seconds=3600)
        await world.create_runner(name, pod_annotations={OOM_AFTER: "runner=120"})
        await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
        await world.job_started(name, request_id)
        runner = await world.runner_where(name, lambda r: r.status.phase == "Running", "Running")
        await world.gone(name)
        assert controller.decisions("RunnerOOMKilled") == 1
    assert_used_once(world, name, runner.status.runner_id)


async def test_L5_a_runner_that_exited_1_is_replaced_not_restarted(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-exit1"
    async with world.controller() as controller:
        await world.create_runner(name, pod_annotations={EXIT: "runner=1@5"})
        await world.gone(name)
        assert controller.decisions("RunnerFailed") == 1
    assert len(world.registrations(name)) == 1
    assert not world.registrations(name)[0].registered


async def test_L5_exit_7_marks_the_runner_outdated_and_cleans_up(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-outdated"
    async with world.controller() as controller:
        await world.create_runner(name, pod_annotations={RUNNER_FAULTS: "outdated"})
        runner = await world.runner_where(name, lambda r: r.status.phase == "Outdated", "Outdated")
        assert (runner.status.reason, runner.status.message) == ("Outdated", "Runner is deprecated")
        await pod_gone(world, name)

        async def secret_gone() -> bool:
            return await world.secret(name) is None

        await world.until(secret_gone, "JIT Secret deleted")
        assert controller.decisions("RunnerOutdated") == 1
        await world.until(
            lambda: not world.registrations(name)[0].registered, "registration removed"
        )
    runner = await world.runner(name)
    assert runner is not None
    assert runner.status.phase == "Outdated"  # L2: terminal stays terminal


async def test_L5_a_pod_rejected_at_admission_is_retried_with_the_same_config(
    world: World,
) -> None:
    """No kubelet runs; the test writes what a kubelet writes when it refuses a pod at
    admission (phase Failed, reason OutOfcpu, no container ever created)."""
    name = "arc-runner-admission"
    async with world.controller() as controller:
        await world.create_runner(name)
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")

        async def pod_created() -> bool:  # the runner id is written just before the pod
            return await world.pod(name) is not None

        await world.until(pod_created, "the first pod")
        first = await world.pod(name)
        assert first is not None
        await world.client.patch_merge(
            POD,
            first.key,
            {
                "status": {
                    "phase": "Failed",
                    "reason": "OutOfcpu",
                    "message": "Pod Node didn't have enough resource: cpu, requested: 4000",
                }
            },
            status=True,
        )

        async def replaced_pod() -> bool:
            pod = await world.pod(name)
            return pod is not None and pod.uid != first.uid

        await world.until(replaced_pod, "a new pod")
        runner = await world.runner_where(name, lambda r: first.uid in r.status.failures, "failure")
        assert controller.decisions("AdmissionRejected") == 1
        assert controller.decisions("PodRetry") == 1
        await world.event_reasons(name, "AdmissionRejected", "PodRetry")
        secret = await world.secret(name)
        assert secret is not None  # the same JIT config, never used
    assert [r.id for r in world.registrations(name)] == [runner.status.runner_id]


async def test_L5_a_runner_that_starts_while_its_pod_failure_is_decided_keeps_its_pod(
    world: World,
) -> None:
    """The retry path decides on a pod whose runner waits on its image (the proof it never
    ran); the container starts between that read and the pod deletion (the test plays the
    kubelet, and writes the start from a hook on the controller's DELETE). The deletion is
    guarded by the version read, so the stale decision deletes nothing: the controller reads
    again, records the start and deletes the JIT Secret — and when that pod is later lost, the
    runner is replaced, never given a second pod with the used config."""
    name = "arc-runner-late-start"
    key = world.key(name)
    created_pods: list[str] = []
    start = world.clock.now()
    record = waiting("runner", RUNNER_IMAGE, "main", has_init=False)

    async def write_status(container: ContainerRecord) -> None:
        pod = await world.pod(name)
        assert pod is not None
        view = KubeletPodView("Never", (), (container,), "10.0.0.1", "10.1.0.7", start)
        status = pod_status(view, pod.status, world.clock.now())
        await world.client.patch_merge(POD, key, {"status": status}, status=True)

    async def count_pod(request: httpx2.Request) -> None:
        created_pods.append(json.loads(request.content)["metadata"]["name"])

    async def container_starts(request: httpx2.Request) -> None:
        pod = await world.pod(name)
        assert pod is not None
        await write_status(started(record, at=world.clock.now(), pod_uid=pod.uid))

    late_start = RequestHook("DELETE", f"/pods/{name}$", container_starts)
    hooks = [late_start, RequestHook("POST", "/pods$", count_pod, times=10**9)]
    async with world.controller(hooks=hooks) as controller:
        await world.create_runner(name)

        async def has_pod() -> bool:
            return await world.pod(name) is not None

        await world.until(has_pod, "pod created")
        pod = await world.pod(name)
        assert pod is not None
        binding = {"target": {"apiVersion": "v1", "kind": "Node", "name": "sim-node-1"}}
        binding |= {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}}
        await world.client.create_subresource(POD, key, "binding", binding)
        message = f'Back-off pulling image "{RUNNER_IMAGE}"'
        await write_status(held(record, Waiting(IMAGE_PULL_BACK_OFF, message)))
        await world.until(lambda: late_start.fired == 1, "the pod deletion was attempted")
        runner = await world.runner_where(
            name, lambda r: r.status.runner_started_at is not None, "the start recorded"
        )
        kept = await world.pod(name)
        assert kept is not None
        assert (kept.uid, kept.is_deleting) == (pod.uid, False), "deleted by a stale decision"
        assert runner.status.failures == {}
        assert not any(c.type == "RetryPod" for c in runner.status.conditions)

        async def secret_gone() -> bool:
            return await world.secret(name) is None

        await world.until(secret_gone, "JIT Secret deleted after the start")
        # the node goes away with the pod: the spent config is never mounted again
        await world.client.delete(POD, key, grace_period_seconds=0)
        await world.gone(name)
        assert controller.decisions("PodLostAfterStart") == 1
        assert controller.decisions("ImagePullFailed") == 0
    assert created_pods == [name]
