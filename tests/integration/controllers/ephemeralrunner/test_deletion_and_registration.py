"""Deleting a runner: the registration is removed first
(RunnerNotFound counts as removed; an unknown runner id is looked up by name; a busy runner is
waited for), then the pod, the JIT Secret and, in Kubernetes container mode, the hook pods and
Secrets; then only our finalizers are dropped (JSON patch with a ``test`` op). And registering:
a name already registered (AgentExists) in our scale set is removed and registered again; in
another scale set it is left alone and the runner replaced.
"""

from __future__ import annotations

from typing import Any

from tests.integration.controllers.ephemeralrunner.world import FINALIZERS, World
from tests.support.waiting import eventually

from scaleset.api import keys
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD, SECRET


async def absent(world: World, kind: Any, name: str) -> None:
    async def gone() -> bool:
        listed = await world.client.list(kind, namespace=world.namespace)
        return all(item.name != name for item in listed.items)

    await world.until(gone, f"{kind.kind} {name} gone")


async def test_deleting_a_starting_runner_removes_registration_pod_and_secret(
    world: World,
) -> None:
    """No kubelet: the pod never starts, so the JIT Secret is still there to delete."""
    name = "arc-runner-del"
    async with world.controller():
        await world.create_runner(name)
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")

        async def pod_and_secret() -> bool:
            return await world.pod(name) is not None and await world.secret(name) is not None

        await world.until(pod_and_secret, "pod and Secret")
        await world.client.delete(EPHEMERAL_RUNNER, world.key(name))
        await world.gone(name)
        await absent(world, POD, name)
        await absent(world, SECRET, name)
    assert not world.fake.control.snapshot().runner(runner.status.runner_id).registered


async def test_deleting_an_idle_runner_stops_it(world: World, kubelet: SimulatedKubelet) -> None:
    name = "arc-runner-del-idle"
    async with world.controller():
        await world.create_runner(name)
        await world.until(lambda: RunnerPhase.LISTENING in world.phases.of(name), "listening")
        runner = await world.runner(name)
        assert runner is not None
        await world.client.delete(EPHEMERAL_RUNNER, world.key(name))
        # Its registration is removed before its pod is deleted, so the pod gets the short
        # termination grace (1 s): the SIGTERM'd idle runner exits by itself within it. That
        # second is virtual here and would pass at once: let the runner exit before time moves.
        await eventually(
            lambda: world.phases.of(name)[-1] is RunnerPhase.EXITED, within=30.0, what="exited"
        )
        await world.gone(name)
        await absent(world, POD, name)
    assert not world.fake.control.snapshot().runner(runner.status.runner_id).registered
    assert world.phases.of(name)[-1] is RunnerPhase.EXITED


async def test_deleting_a_busy_runner_waits_until_github_lets_go(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-del-busy"
    request_id = world.fake.control.queue_job(["arc"], duration_seconds=300)
    async with world.controller() as controller:
        await world.create_runner(name)
        await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
        await world.job_started(name, request_id)
        await world.client.delete(EPHEMERAL_RUNNER, world.key(name))
        await world.event_reasons(name, "RegistrationBusy")
        runner = await world.runner(name)
        assert runner is not None
        assert runner.metadata.is_deleting
        assert keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER in runner.metadata.finalizers
        pod = await world.pod(name)
        assert pod is not None
        assert not pod.is_deleting  # the job keeps its runner
        await world.gone(name)  # the job finishes, the runner exits, GitHub lets go
        assert controller.decisions("RegistrationBusy") >= 1
    assert world.fake.control.snapshot().job(request_id).result == "success"


async def test_deleting_a_runner_whose_id_is_unknown_removes_its_registration_by_name(
    world: World,
) -> None:
    """Deleted before the controller ever wrote the runner id (a crash right after
    generatejitconfig): the registration is found by the runner's name and removed."""
    name = "arc-runner-by-name"
    leaked = world.fake.control.generate_jit_config(world.scale_set_id, name)
    await world.create_runner(name)
    await world.client.delete(EPHEMERAL_RUNNER, world.key(name))
    async with world.controller():
        await world.gone(name)
    assert not world.fake.control.snapshot().runner(leaked.id).registered


async def test_deletion_removes_hook_pods_and_keeps_other_finalizers(world: World) -> None:
    name = "arc-runner-hooks"
    runner_container = {
        "name": "runner",
        "image": "ghcr.io/actions/actions-runner:2.335.1",
        "env": [{"name": keys.RUNNER_CONTAINER_HOOKS_ENV, "value": "/home/runner/k8s/index.js"}],
    }
    body = world.runner_body(name, pod_spec={"containers": [runner_container]})
    body["metadata"]["finalizers"] = ["example.com/keep", *FINALIZERS]
    await world.client.create(EPHEMERAL_RUNNER, body)
    labels = {keys.RUNNER_POD_LABEL: name}
    await world.client.create(
        POD,
        {
            "metadata": {"name": f"{name}-workflow", "labels": labels},
            "spec": {"containers": [{"name": "job", "image": "busybox:1.36"}]},
        },
        namespace=world.namespace,
    )
    await world.client.create(
        SECRET, {"metadata": {"name": f"{name}-env", "labels": labels}}, namespace=world.namespace
    )
    async with world.controller():
        await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")
        await world.client.delete(EPHEMERAL_RUNNER, world.key(name))
        runner = await world.runner_where(
            name, lambda r: r.metadata.finalizers == ["example.com/keep"], "our finalizers gone"
        )
        assert runner.metadata.is_deleting
        await absent(world, POD, f"{name}-workflow")
        await absent(world, SECRET, f"{name}-env")
    await world.client.patch_merge(
        EPHEMERAL_RUNNER, world.key(name), {"metadata": {"finalizers": None}}
    )
    await world.gone(name)


async def test_agent_exists_in_our_scale_set_is_removed_and_registered_again(
    world: World,
) -> None:
    name = "arc-runner-exists"
    stale = world.fake.control.generate_jit_config(world.scale_set_id, name)
    async with world.controller() as controller:
        await world.create_runner(name)
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")
        assert runner.status.runner_id != stale.id
        assert controller.decisions("StaleRegistration") == 1
    truth = world.fake.control.snapshot()
    assert not truth.runner(stale.id).registered
    assert truth.runner(runner.status.runner_id).registered


async def test_agent_exists_in_another_scale_set_is_left_alone(world: World) -> None:
    name = "arc-runner-elsewhere"
    other = world.fake.control.create_scale_set(world.fake.config_url("acme"), "other")
    theirs = world.fake.control.generate_jit_config(other, name)
    async with world.controller() as controller:
        await world.create_runner(name)
        await world.gone(name)
        assert controller.decisions("RunnerNameInOtherScaleSet") == 1
    assert world.fake.control.snapshot().runner(theirs.id).registered
