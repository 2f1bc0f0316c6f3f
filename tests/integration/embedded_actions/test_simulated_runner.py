"""The simulated runner against the fake: the happy path, the two zombie modes of ARC #4588
(a reused JIT config), and the runner's fault modes."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx2
import pytest
import trustme
from tests.integration.embedded_actions.wire_client import PAT, ScaleSetClient, Session
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, GroundTruth, JitRunner, JobState
from scaleset.embedded.runner import RunnerFaults, RunnerPhase, run_runner

JOB_SECONDS = 120.0


@dataclass
class Pod:
    """One simulated runner process started from a runner's environment."""

    task: asyncio.Task[int]
    phases: list[RunnerPhase] = field(default_factory=list)

    async def reached(self, phase: RunnerPhase) -> None:
        await eventually(lambda: phase in self.phases, within=10.0, what=f"phase {phase}")

    async def exit_code(self) -> int:
        return await asyncio.wait_for(self.task, timeout=10)


@dataclass
class World:
    fake: FakeGitHub
    clock: ManualClock
    listener: Session
    scale_set_id: int
    pods: list[Pod] = field(default_factory=list)

    def start(
        self, env: dict[str, str], faults: RunnerFaults | None = None, **kwargs: object
    ) -> Pod:
        phases: list[RunnerPhase] = []
        task = asyncio.ensure_future(
            run_runner(env, clock=self.clock, faults=faults, on_phase=phases.append, **kwargs)  # type: ignore[arg-type]
        )
        pod = Pod(task, phases)
        self.pods.append(pod)
        return pod

    def truth(self) -> GroundTruth:
        return self.fake.control.snapshot()

    async def until_truth(self, condition: Callable[[GroundTruth], bool], what: str) -> GroundTruth:
        return await self.fake.control.wait_for(condition, what=what)

    async def drain(self) -> list[dict[str, object]]:
        """Every job message the listener has not read yet."""
        while (await self.listener.poll()).status_code == 200:
            await self.listener.next_batch()
        return self.listener.seen


@pytest.fixture
async def world(org: ScaleSetClient, fake: FakeGitHub, clock: ManualClock) -> AsyncIterator[World]:
    scale_set_id = await org.create_scale_set("arc")
    listener = await org.open_session(scale_set_id)
    world = World(fake, clock, listener, scale_set_id)
    yield world
    for pod in world.pods:
        pod.task.cancel()
    await asyncio.gather(*(pod.task for pod in world.pods), return_exceptions=True)


def runner_for(world: World, name: str = "arc-runner-1") -> JitRunner:
    return world.fake.control.generate_jit_config(world.scale_set_id, name)


async def test_happy_path(world: World) -> None:
    runner = runner_for(world)
    request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
    pod = world.start(runner.env())
    await pod.reached(RunnerPhase.JOB_STARTED)
    truth = world.truth()
    assert truth.job(request_id).state is JobState.RUNNING
    assert truth.runner(runner.id).busy
    assert truth.scale_set(world.scale_set_id).statistics.total_running_jobs == 1
    await eventually(
        lambda: world.clock.sleepers >= 1, within=10.0, what="runner sleeping on the job"
    )
    world.clock.advance(JOB_SECONDS)
    assert await pod.exit_code() == 0
    truth = world.truth()
    assert truth.job(request_id).state is JobState.COMPLETED
    assert truth.job(request_id).result == "success"
    assert not truth.runner(runner.id).registered
    assert truth.runner(runner.id).removed_reason == "ephemeral-job-finished"
    messages = await world.drain()
    assert [m["messageType"] for m in messages] == ["JobAssigned", "JobStarted", "JobCompleted"]
    started, completed = messages[1], messages[2]
    assert started["runnerId"] == runner.id
    assert started["runnerName"] == runner.name
    assert started["runnerAssignTime"] != "0001-01-01T00:00:00Z"
    assert completed["result"] == "success"
    assert completed["runnerName"] == runner.name
    assert completed["finishTime"] != "0001-01-01T00:00:00Z"
    assert pod.phases[-3:] == [
        RunnerPhase.JOB_STARTED,
        RunnerPhase.JOB_COMPLETED,
        RunnerPhase.EXITED,
    ]


async def test_idle_runner_waits_for_a_job(world: World) -> None:
    runner = runner_for(world)
    pod = world.start(runner.env())
    await pod.reached(RunnerPhase.LISTENING)
    truth = await world.until_truth(lambda t: t.runner(runner.id).connected, "runner online")
    assert truth.scale_set(world.scale_set_id).statistics.total_idle_runners == 1
    request_id = world.fake.control.queue_job(["arc"], duration_seconds=1)
    await pod.reached(RunnerPhase.JOB_STARTED)
    await eventually(
        lambda: world.clock.sleepers >= 1, within=10.0, what="runner sleeping on the job"
    )
    world.clock.advance(1)
    assert await pod.exit_code() == 0
    assert world.truth().job(request_id).result == "success"


async def test_job_result_is_reported(world: World) -> None:
    runner = runner_for(world)
    request_id = world.fake.control.queue_job(["arc"], result="failure")
    pod = world.start(runner.env())
    assert await pod.exit_code() == 0
    assert world.truth().job(request_id).result == "failure"


async def test_cancelled_job_stops_the_runner(world: World) -> None:
    runner = runner_for(world)
    request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
    pod = world.start(runner.env())
    await pod.reached(RunnerPhase.JOB_STARTED)
    assert world.fake.control.cancel_job(request_id)
    assert await pod.exit_code() == 0
    assert RunnerPhase.JOB_CANCELED in pod.phases
    assert world.truth().job(request_id).result == "canceled"
    messages = await world.drain()
    assert messages[-1]["messageType"] == "JobCompleted"
    assert messages[-1]["result"] == "canceled"


class TestZombieModes:
    """ARC #4588: a controller that starts a second pod from an already-used JIT config."""

    async def test_second_process_conflicts_while_the_first_session_lives(
        self, world: World
    ) -> None:
        runner = runner_for(world)
        first = world.start(runner.env())
        await first.reached(RunnerPhase.LISTENING)
        second = world.start(runner.env(), conflict_retry_seconds=30.0)
        await second.reached(RunnerPhase.SESSION_CONFLICT)
        await eventually(
            lambda: world.clock.sleepers >= 1, within=10.0, what="second runner waiting to retry"
        )
        world.clock.advance(30)
        await eventually(
            lambda: second.phases.count(RunnerPhase.SESSION_CONFLICT) >= 2,
            within=10.0,
            what="retry",
        )
        assert not second.task.done()  # the zombie: alive, retrying, useless
        truth = world.truth()
        assert truth.runner(runner.id).session_rejections.count("conflict") >= 2
        request_id = world.fake.control.queue_job(["arc"])
        assert await first.exit_code() == 0
        assert world.truth().job(request_id).runner_id == runner.id
        # the first run finished its job; the registration is gone, so the zombie exits too
        await eventually(
            lambda: world.clock.sleepers >= 1, within=10.0, what="zombie waiting to retry"
        )
        world.clock.advance(30)
        assert await second.exit_code() == 0
        assert RunnerPhase.REGISTRATION_DELETED in second.phases
        assert RunnerPhase.JOB_STARTED not in second.phases

    async def test_reused_config_after_the_job_cannot_connect(self, world: World) -> None:
        runner = runner_for(world)
        world.fake.control.queue_job(["arc"])
        first = world.start(runner.env())
        assert await first.exit_code() == 0
        again = world.start(runner.env())
        assert await again.exit_code() == 0
        assert again.phases == [
            RunnerPhase.CONNECTING,
            RunnerPhase.REGISTRATION_DELETED,
            RunnerPhase.EXITED,
        ]
        assert world.truth().runner(runner.id).session_rejections == ("registration-deleted",)

    async def test_deleted_registration_makes_an_idle_runner_exit(self, world: World) -> None:
        runner = runner_for(world)
        pod = world.start(runner.env())
        await pod.reached(RunnerPhase.LISTENING)
        world.fake.control.delete_runner(runner.id)
        assert await pod.exit_code() == 0
        assert RunnerPhase.REGISTRATION_DELETED in pod.phases

    async def test_lost_first_session_is_timed_out_then_the_zombie_learns_the_registration_is_gone(
        self, world: World
    ) -> None:
        runner = runner_for(world)
        request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
        crashed = world.start(runner.env(), RunnerFaults(crash_mid_job=True))
        await crashed.reached(RunnerPhase.JOB_STARTED)
        await eventually(
            lambda: world.clock.sleepers >= 1, within=10.0, what="crashing runner in its job"
        )
        world.clock.advance(JOB_SECONDS / 2)
        assert await crashed.exit_code() == 1
        replacement = world.start(runner.env())
        await replacement.reached(RunnerPhase.SESSION_CONFLICT)
        assert world.truth().job(request_id).state is JobState.RUNNING
        world.clock.advance(world.fake.settings.runner_session_timeout_seconds + 1)
        world.fake.control.sweep()
        truth = world.truth()
        assert truth.job(request_id).result == "failed"
        assert not truth.runner(runner.id).registered
        assert await replacement.exit_code() == 0
        assert RunnerPhase.REGISTRATION_DELETED in replacement.phases

    async def test_giving_up_on_a_conflict_exits_0_through_run_sh(self, world: World) -> None:
        runner = runner_for(world)
        first = world.start(runner.env())
        await first.reached(RunnerPhase.LISTENING)
        second = world.start(
            runner.env(), conflict_retry_seconds=30.0, session_conflict_give_up_seconds=60.0
        )
        for _ in range(2):
            await eventually(
                lambda: world.clock.sleepers >= 1, within=10.0, what="waiting to retry"
            )
            world.clock.advance(30)
        assert await second.exit_code() == 0
        assert second.phases.count(RunnerPhase.SESSION_CONFLICT) == 3


class TestFaultModes:
    async def test_hang_after_completion(self, world: World) -> None:
        runner = runner_for(world)
        request_id = world.fake.control.queue_job(["arc"])
        pod = world.start(runner.env(), RunnerFaults(hang_after_completion=True))
        await pod.reached(RunnerPhase.HANGING)
        assert not pod.task.done()
        truth = world.truth()
        assert truth.job(request_id).state is JobState.COMPLETED
        assert not truth.runner(runner.id).registered

    async def test_crash_mid_job(self, world: World) -> None:
        runner = runner_for(world)
        request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
        pod = world.start(runner.env(), RunnerFaults(crash_mid_job=True, crash_exit_code=137))
        await pod.reached(RunnerPhase.JOB_STARTED)
        await eventually(lambda: world.clock.sleepers >= 1, within=10.0, what="runner in its job")
        world.clock.advance(JOB_SECONDS / 2)
        assert await pod.exit_code() == 137
        truth = world.truth()
        assert truth.job(request_id).state is JobState.RUNNING
        assert truth.runner(runner.id).busy
        world.clock.advance(world.fake.settings.runner_session_timeout_seconds + 1)
        world.fake.control.sweep()
        truth = world.truth()
        assert truth.job(request_id).result == "failed"
        assert not truth.runner(runner.id).registered

    @pytest.mark.parametrize(("flag", "expected"), [("1", 7), (None, 0)])
    async def test_outdated_runner(self, world: World, flag: str | None, expected: int) -> None:
        runner = runner_for(world)
        env = runner.env()
        env.pop("ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE")
        if flag is not None:
            env["ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"] = flag
        pod = world.start(env, RunnerFaults(outdated=True))
        assert await pod.exit_code() == expected
        assert world.truth().runner(runner.id).registered

    @pytest.mark.parametrize("encoded", ["", "bm90IGpzb24=", "%%%"])
    async def test_bad_jit_config_is_a_terminated_error(self, world: World, encoded: str) -> None:
        pod = world.start({"ACTIONS_RUNNER_INPUT_JITCONFIG": encoded})
        assert await pod.exit_code() == 0
        assert pod.phases == [RunnerPhase.INVALID_CONFIG, RunnerPhase.EXITED]

    async def test_graceful_stop_of_an_idle_runner_closes_its_session(self, world: World) -> None:
        runner = runner_for(world)
        stop = asyncio.Event()
        pod = world.start(runner.env(), stop=stop)
        await world.until_truth(lambda t: t.runner(runner.id).connected, "runner online")
        stop.set()
        assert await pod.exit_code() == 0
        truth = world.truth()
        assert not truth.runner(runner.id).connected
        assert truth.runner(runner.id).registered

    async def test_graceful_stop_of_a_busy_runner_fails_its_job(self, world: World) -> None:
        runner = runner_for(world)
        request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
        stop = asyncio.Event()
        pod = world.start(runner.env(), stop=stop)
        await pod.reached(RunnerPhase.JOB_STARTED)
        stop.set()
        assert await pod.exit_code() == 0
        assert world.truth().job(request_id).result == "failed"

    async def test_broker_5xx_is_retried(self, world: World) -> None:
        runner = runner_for(world)
        world.fake.control.queue_job(["arc"])
        world.fake.control.faults.fail_next(2, 503, path_contains="/broker/session")
        pod = world.start(runner.env(), transient_retry_seconds=1.0)
        for _ in range(2):
            await eventually(
                lambda: world.clock.sleepers >= 1, within=10.0, what="runner backing off"
            )
            world.clock.advance(1)
        assert await pod.exit_code() == 0
        assert [r.status for r in world.fake.control.requests_to("/broker/session", "POST")] == [
            503,
            503,
            200,
        ]


async def test_runner_over_tls(clock: ManualClock) -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    async with FakeGitHub(clock=clock, ssl_context=server_context, poll_hold_seconds=0.05) as fake:
        fake.add_pat(PAT)
        async with httpx2.AsyncClient(verify=client_context) as http:
            org = await ScaleSetClient.register(http, fake, fake.config_url("acme"))
            runner = fake.control.generate_jit_config(await org.create_scale_set("arc"), "r1")
        request_id = fake.control.queue_job(["arc"])
        code = await asyncio.wait_for(
            run_runner(runner.env(), clock=clock, verify=client_context), timeout=10
        )
        assert code == 0
        assert fake.control.snapshot().job(request_id).result == "success"


@pytest.mark.parametrize("turns", range(8))
async def test_a_runner_killed_while_it_stops_leaves_no_poll_running(
    world: World, turns: int
) -> None:
    # a kill (the pod's task cancelled) landing at any point of a graceful stop, `turns` loop
    # turns after it began: the long poll must end with the runner, not run on against a client
    # about to close (its error then reported as never retrieved)
    runner = runner_for(world)
    stop = asyncio.Event()
    pod = world.start(runner.env(), stop=stop)
    await world.until_truth(lambda t: t.runner(runner.id).connected, "runner online")
    stop.set()
    for _ in range(turns):
        await asyncio.sleep(0)
    pod.task.cancel()
    await asyncio.gather(pod.task, return_exceptions=True)
    for _ in range(5):
        await asyncio.sleep(0)
    left = [
        task
        for task in asyncio.all_tasks()
        if not task.done() and task.get_coro().__qualname__ == "_Runner._call"  # type: ignore[union-attr]
    ]
    assert not left, f"{len(left)} poll(s) left running after the runner ended"
