"""L4 — a finished job ends its runner, even if the runner process hangs.

The simulated runner finishes its job and then hangs (``hang-after-completion``); the test plays
the listener, recording JobCompleted on the runner. The controller stores the grace deadline
(its own clock) on first sight and, once it passes, deletes the pod, removes the registration
and deletes the runner. A completion that names another job deletes nothing, and a runner
deleted after its job completed loses its pod even while GitHub cannot remove its
registration.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually

from scaleset.api import EphemeralRunner
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.embedded.actions import JobState
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.kubelet.directives import RUNNER_FAULTS
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube.resources import EPHEMERAL_RUNNER

JOB_SECONDS = 60.0
GRACE = Settings().grace_period
"""The controller's default grace period (the world runs it with the default settings)."""
HANG = {RUNNER_FAULTS: "hang-after-completion"}


async def hung_after_job(world: World, name: str, *, record_start: bool) -> tuple[int, int]:
    """A runner that took a job, finished it and hangs; (runner id, job request id)."""
    request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
    await world.create_runner(name, pod_annotations=HANG)
    await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
    if record_start:
        await world.job_started(name, request_id)
        await world.runner_where(name, lambda r: r.status.phase == "Running", "Running")
    await world.until(lambda: RunnerPhase.HANGING in world.phases.of(name), "runner hangs")
    assert world.fake.control.snapshot().job(request_id).state is JobState.COMPLETED
    runner = await world.runner(name)
    assert runner is not None
    return runner.status.runner_id, request_id


def pod_gone(world: World, name: str) -> Callable[[], Awaitable[bool]]:
    async def absent() -> bool:
        return await world.pod(name) is None

    return absent


async def deadline_stored(world: World, name: str) -> EphemeralRunner:
    """The runner once the controller stored the grace deadline (no virtual time passes)."""
    found: list[EphemeralRunner] = []

    async def stored() -> bool:
        runner = await world.runner(name)
        if runner is not None and runner.status.job_completion_deadline is not None:
            found.append(runner)
            return True
        return False

    await eventually(stored, within=30.0, what="grace deadline stored")
    return found[-1]


async def test_L4_a_runner_hung_after_its_job_completed_is_ended_after_the_grace_period(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-hung"
    async with world.controller() as controller:
        runner_id, request_id = await hung_after_job(world, name, record_start=True)
        before = world.clock.now()
        await world.job_completed(name, request_id, runner_id)
        runner = await deadline_stored(world, name)
        deadline = runner.status.job_completion_deadline
        assert deadline is not None
        assert (
            before + timedelta(seconds=GRACE)
            <= deadline
            <= world.clock.now() + timedelta(seconds=GRACE)
        )
        assert await world.pod(name) is not None  # the grace period runs: nothing deleted yet
        assert not runner.metadata.is_deleting

        world.clock.advance(GRACE)
        await world.gone(name)
        pod = await world.pod(name)
        assert pod is None or pod.is_deleting  # the hung process gets the grace-period kill
        await world.until(pod_gone(world, name), "pod gone")
        assert controller.decisions("JobCompletedRunnerAlive") == 1
        assert controller.decisions("JobCompletedRunnerEnded") == 1
        await world.event_reasons(name, "JobCompletionObserved", "JobCompletedRunnerAlive")
    assert not world.fake.control.snapshot().runner(runner_id).registered


async def test_L4_a_completion_without_a_recorded_start_still_ends_the_runner(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """The JobStarted was lost: the runner has no job fields, runner id and name suffice."""
    name = "arc-runner-nostart"
    async with world.controller() as controller:
        runner_id, request_id = await hung_after_job(world, name, record_start=False)
        runner = await world.runner(name)
        assert runner is not None
        assert not runner.status.has_job
        await world.job_completed(name, request_id, runner_id)
        await deadline_stored(world, name)
        world.clock.advance(GRACE)
        await world.gone(name)
        assert controller.decisions("JobCompletedRunnerAlive") == 1


async def test_L4_a_mismatched_completion_deletes_nothing(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-mismatch"
    async with world.controller() as controller:
        runner_id, request_id = await hung_after_job(world, name, record_start=True)
        await world.job_completed(name, request_id, runner_id, jobId="some-other-job")
        await world.event_reasons(name, "JobCompletionMismatch")
        for _ in range(4):
            world.clock.advance(GRACE)
            runner = await world.runner(name)
            assert runner is not None
            assert not runner.metadata.is_deleting
            assert runner.status.job_completion_deadline is None
        assert await world.pod(name) is not None
        assert controller.decisions("JobCompletedRunnerAlive") == 0
        assert controller.decisions("JobCompletionMismatch") >= 1


async def test_L4_a_finished_runner_deleted_during_a_github_outage_loses_its_pod_at_once(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """Soak seed 6: a scale-down deleted a hung runner whose job had completed while GitHub
    answered 503; deletion removes the registration first, so the pod (and its node slot)
    lived until GitHub came back. Now the pod goes at once; the registration, and with it
    the EphemeralRunner, waits for GitHub."""
    name = "arc-runner-outage"
    async with world.controller() as controller:
        runner_id, request_id = await hung_after_job(world, name, record_start=True)
        await world.job_completed(name, request_id, runner_id)
        await deadline_stored(world, name)
        outage = world.fake.control.faults.unavailable(None)
        await world.client.delete(EPHEMERAL_RUNNER, world.key(name))  # a scale-down

        async def pod_deleted() -> bool:
            pod = await world.pod(name)
            return pod is None or pod.is_deleting

        await world.until(pod_deleted, "pod deleted while GitHub is out")
        runner = await world.runner(name)
        assert runner is not None
        assert runner.metadata.is_deleting  # the registration step waits for GitHub

        world.fake.control.faults.remove(outage)
        await world.gone(name)
        assert controller.decisions("JobCompletedRunnerAlive") == 0  # no L4 deadline passed
