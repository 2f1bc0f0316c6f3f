"""One runner's whole life under the controller: registered (JIT config in a Secret named like
the runner, with ARC's keys), its pod built from the template (ARC's env, labels, owner
reference, ``restartPolicy: Never``), Pending written by the controller, start recorded and the
JIT Secret deleted, a job (Running written only by the listener), exit 0, and cleanup: pod,
registration and finalizers gone."""

from __future__ import annotations

import base64

import httpx2
from tests.integration.controllers.ephemeralrunner.world import FINALIZERS, World

from scaleset.api import keys
from scaleset.devtools.transports import RequestHook
from scaleset.embedded.actions import JobState
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.runner import RunnerPhase

JOB_SECONDS = 120.0


async def test_L1_L5_a_runner_registers_runs_one_job_and_is_cleaned_up(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-life1"
    async with world.controller() as controller:
        await world.create_runner(name)
        runner = await world.runner_where(
            name, lambda r: r.status.runner_id > 0 and r.status.phase == "Pending", "registered"
        )
        truth = world.fake.control.snapshot().runner(runner.status.runner_id)
        assert truth.registered
        assert truth.scale_set_id == world.scale_set_id
        assert runner.status.runner_name == name

        # the runner id is written just before the pod is created (its write-ahead record)
        async def pod_created() -> bool:
            return await world.pod(name) is not None

        await world.until(pod_created, "the runner pod")
        pod = await world.pod(name)
        assert pod is not None
        spec = pod.raw["spec"]
        assert spec["restartPolicy"] == "Never"
        assert pod.labels[keys.EPHEMERAL_RUNNER_LABEL] == "True"
        assert keys.POD_TEMPLATE_HASH_LABEL in pod.labels
        assert pod.labels["app.kubernetes.io/component"] == "runner"
        owner = pod.controller_owner
        assert owner is not None
        assert (owner.kind, owner.name, owner.uid) == ("EphemeralRunner", name, runner.metadata.uid)
        env = {e["name"]: e for e in spec["containers"][0]["env"]}
        assert env[keys.RUNNER_JIT_CONFIG_ENV]["valueFrom"]["secretKeyRef"] == {
            "name": name,
            "key": keys.JIT_TOKEN_KEY,
        }
        assert env[keys.RUNNER_DEPRECATED_EXIT_CODE_ENV]["value"] == "1"
        assert env[keys.RUNNER_EXTRA_USER_AGENT_ENV]["value"].startswith("scaleset/")

        # L5: once the runner container started, the start is recorded and the Secret deleted.
        runner = await world.runner_where(
            name, lambda r: r.status.runner_started_at is not None, "runner start recorded"
        )
        await world.until(lambda: RunnerPhase.LISTENING in world.phases.of(name), "listening")

        async def secret_gone() -> bool:
            return await world.secret(name) is None

        await world.until(secret_gone, "JIT Secret deleted after start")
        runner = await world.runner_where(name, lambda r: r.status.ready, "ready")
        assert runner.status.phase == "Pending"  # L1: never Running from the pod

        request_id = world.fake.control.queue_job([world_label()], duration_seconds=JOB_SECONDS)
        await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
        await world.job_started(name, request_id)
        runner = await world.runner_where(name, lambda r: r.status.phase == "Running", "Running")

        world.clock.advance(JOB_SECONDS)
        await world.gone(name)
        truth = world.fake.control.snapshot()
        assert truth.job(request_id).state is JobState.COMPLETED
        assert not truth.runner(runner.status.runner_id).registered
        assert controller.decisions("RunnerSucceeded") == 1
        assert controller.decisions("RunnerStarted") == 1


async def test_a_runner_created_without_finalizers_gets_both(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-fin"
    async with world.controller():
        await world.create_runner(name, finalizers=False)
        runner = await world.runner_where(
            name, lambda r: len(r.metadata.finalizers) == 2, "finalizers added"
        )
        assert sorted(runner.metadata.finalizers) == sorted(FINALIZERS)


async def test_the_jit_secret_has_arcs_keys_and_owner(world: World) -> None:
    """Without a kubelet the pod never starts, so the JIT Secret stays and can be read."""
    name = "arc-runner-secret"
    async with world.controller():
        await world.create_runner(name)
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")
        secret = await world.secret(name)
        assert secret is not None
        data = {k: base64.b64decode(v).decode() for k, v in secret.raw["data"].items()}
        assert set(data) == {"jitToken", "runnerName", "runnerId", "scaleSetId"}
        assert data["runnerId"] == str(runner.status.runner_id)
        assert data["runnerName"] == name
        assert data["scaleSetId"] == str(world.scale_set_id)
        owner = secret.controller_owner
        assert owner is not None
        assert (owner.kind, owner.name) == ("EphemeralRunner", name)


def world_label() -> str:
    return "arc"


async def test_L2_L5_a_runner_that_exited_is_deleted_with_one_request_while_the_listener_writes(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """At the end of a job the runner exits as GitHub reports the job done, so the listener's
    JobCompleted lands on the runner between the controller's read and its deletion. The
    deletion rests on the runner container's exit, which no write to the runner can undo: it
    is made with the uid as its only precondition, one DELETE, not a 409 and another."""
    name = "arc-runner-exit-race"
    request_id = world.fake.control.queue_job([world_label()], duration_seconds=JOB_SECONDS)

    async def listener_writes_first(request: httpx2.Request) -> None:
        if listener_writes_first_hook.fired == 1:
            runner = await world.runner(name)
            assert runner is not None
            await world.job_completed(name, request_id, runner.status.runner_id)

    listener_writes_first_hook = RequestHook(
        "DELETE", rf"/ephemeralrunners/{name}$", listener_writes_first, times=10
    )
    async with world.controller(hooks=[listener_writes_first_hook]) as controller:
        await world.create_runner(name)
        await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
        await world.job_started(name, request_id)
        await world.runner_where(name, lambda r: r.status.phase == "Running", "Running")
        world.clock.advance(JOB_SECONDS)
        await world.gone(name)
        assert controller.decisions("RunnerSucceeded") == 1
    assert listener_writes_first_hook.fired == 1
