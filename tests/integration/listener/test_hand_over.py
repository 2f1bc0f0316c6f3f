"""A graceful stop hands the message session over; only the scale set going away deletes it
(lifecycle.md L7, L10).

Issue 25, item 3: SIGTERM deleted the session, and SIGTERM is every listener pod replacement (a
config change, a controller upgrade, a node drain): the JobStarted/JobCompleted events queued in
it while no listener ran were lost with it (a crash resumed it; a rollout did not).
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from tests.integration.listener.world import OWNER, World, world_on
from tests.plugins.kube_backends import KubeBackend
from tests.support.waiting import eventually

from scaleset.embedded.actions.model import JobEventKind
from scaleset.embedded.runner import run_runner
from scaleset.kube import KubeClient
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET
from scaleset.listener.exits import EXIT_RUNNER_SET_GONE, ListenerExit

pytestmark = pytest.mark.usefixtures("actions_crds")

SUCCESSOR = "arc-754b578d-listener-2"
"""Another pod name: a successor that is not the same pod again."""


def _session_events(world: World, event: str) -> float:
    return world.counter("scaleset_listener_session_events_total", {"event": event})


async def test_L7_a_graceful_stop_hands_the_session_and_its_queued_events_over(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:
        first = world.start()
        await world.wait(lambda: len(world.sessions()) == 1, "a session")
        [session] = world.sessions()
        await first.stop()  # SIGTERM: the runner set is still there
        assert [s.session_id for s in world.sessions()] == [session.session_id]
        state = await world.state()
        assert (state.session_id, state.handed_over) == (session.session_id, True)

        # while no listener runs, a job starts and completes on a runner: both events are
        # queued in the session
        jit = world.fake.control.generate_jit_config(world.scale_set_id, "arc-runner-1")
        await world.add_runner("arc-runner-1")
        runner = asyncio.create_task(run_runner(jit.env(), clock=world.clock))
        request_id = world.fake.control.queue_job(["arc"], duration_seconds=5)
        await world.wait(
            lambda: (
                (event := world.fake.control.job_event(request_id, JobEventKind.COMPLETED))
                is not None
                and event.session_id == session.session_id
            ),
            "the job done while no listener runs",
        )
        assert await asyncio.wait_for(runner, 10) == 0

        second = world.start(owner=SUCCESSOR)  # a new pod: another name
        try:
            await world.wait(lambda: _session_events(world, "resumed") == 1, "the hand-over")
            assert _session_events(world, "created") == 0

            async def recorded() -> bool:
                status = (await world.runner("arc-runner-1")).status
                completion = status.get("jobCompletion") or {}
                return status.get("jobRequestId") == request_id and (
                    completion.get("runnerName") == "arc-runner-1"
                )

            await world.wait(recorded, "both job events recorded on the runner")
            for kind in (JobEventKind.STARTED, JobEventKind.COMPLETED):
                event = world.fake.control.job_event(request_id, kind)
                assert event is not None
                assert event.dropped_why is None
            assert [s.session_id for s in world.sessions()] == [session.session_id]
            resumed = await world.state()
            assert (resumed.owner, resumed.handed_over) == (SUCCESSOR, False)
        finally:
            await second.stop()


async def test_L7_a_successor_waiting_on_a_conflict_takes_the_session_handed_over(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """A rollout starts the new pod before the old one has stopped: the new one meets a 409,
    and resumes the session as soon as the old one hands it over (no wait for GitHub to expire
    it)."""
    async with world_on(kube_backend, client, namespace) as world:
        first = world.start()
        await world.wait(lambda: len(world.sessions()) == 1, "a session")
        [session] = world.sessions()
        second = world.start(owner=SUCCESSOR)
        try:
            await world.wait(lambda: _session_events(world, "conflict") >= 1, "a conflict")
            await first.stop()
            await world.wait(lambda: _session_events(world, "resumed") == 1, "the hand-over")
            assert [s.session_id for s in world.sessions()] == [session.session_id]
            assert _session_events(world, "created") == 0
        finally:
            await second.stop()


async def test_L7_L10_the_session_is_deleted_when_the_scale_set_goes_away(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:
        running = world.start()
        try:
            await world.wait(lambda: len(world.sessions()) == 1, "a session")
            # the AutoscalingRunnerSet's deletion removes the runner set first (L10)
            await client.delete(EPHEMERAL_RUNNER_SET, world.runner_set_key)
            # small virtual steps: the session delete on the way out is bounded on the same
            # clock, and must not see its deadline pass while the request is on the wire
            await eventually(
                running.task.done, clock=world.clock, max_step=0.05, what="the listener exits"
            )
            with pytest.raises(ListenerExit) as exit_:
                running.task.result()
            assert exit_.value.code == EXIT_RUNNER_SET_GONE
        finally:
            await running.close()
        assert world.sessions() == []
        assert _session_events(world, "closed") == 1


async def test_L7_L10_a_stop_after_the_runner_set_is_gone_deletes_the_session(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """SIGTERM before the listener noticed the runner set is gone (its pod removed right after
    it, L10): the hand-over write finds nothing, so the session is deleted."""
    async with world_on(kube_backend, client, namespace) as world:
        running = world.start(owner=OWNER)
        await world.wait(lambda: len(world.sessions()) == 1, "a session")
        await client.delete(EPHEMERAL_RUNNER_SET, world.runner_set_key)
        # SIGTERM (unless it noticed first: then it exits by itself, with the same outcome)
        with contextlib.suppress(ListenerExit):
            await running.stop()
        assert world.sessions() == []
        assert _session_events(world, "closed") == 1
