"""The stale-surplus cap through the loop (lifecycle.md L7, ARC #4397): it holds back assigned
jobs only while idle runners beside them show they are stale, never on statistics carried over
from failed polls, and never longer than that evidence lasts.

Issue 25 found both: a GitHub outage of three minutes or more that began with a backlog held
every queued job back (each failed poll patched again with the statistics from before it,
while runners that could not connect sat idle), and once those idle runners were scaled away
the jobs waited forever: 3 queued jobs, 0 runners, target 0.
"""

from __future__ import annotations

import pytest
from tests.integration.listener.world import World, job_message, world_on
from tests.plugins.kube_backends import KubeBackend

from scaleset.embedded.actions.faults import Surface
from scaleset.kube import KubeClient
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET
from scaleset.listener.loop import LoopSettings

pytestmark = pytest.mark.usefixtures("actions_crds")

WINDOW = LoopSettings().stale_window


async def _idle_runners(world: World, count: int) -> None:
    """What the runner set reports (L0): runners whose pod runs, without a job."""
    await world.admin.patch_merge(
        EPHEMERAL_RUNNER_SET,
        world.runner_set_key,
        {"status": {"currentReplicas": count, "idleEphemeralRunners": count}},
        status=True,
    )


def _replicas(world: World, since: int = 0) -> list[int]:
    return [p["spec"]["replicas"] or 0 for p in world.ers_patches()[since:]]


async def _scaled_for(world: World, assigned: int) -> int:
    """GitHub's statistics say ``assigned`` jobs, none running; returns the number of desired
    count patches once one asked for them all."""
    await world.wait(lambda: len(world.sessions()) == 1, "a session")
    world.inject_messages(job_message(90, [], assigned=assigned, running=0))
    await world.wait(lambda: assigned in _replicas(world), f"scaled for {assigned} jobs")
    return len(world.ers_patches())


async def test_L7_failed_polls_never_hold_back_queued_jobs(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:
        # three runners started for the backlog; GitHub is about to fail, so they never connect
        await _idle_runners(world, 3)
        running = world.start()
        try:
            seen = await _scaled_for(world, 3)
            outage = world.fake.control.faults.fail_next(
                None, 503, surface=Surface.MESSAGE_QUEUE, method="GET"
            )
            began = world.clock.monotonic()
            await world.wait(
                lambda: world.clock.monotonic() >= began + 2 * WINDOW,
                "an outage twice the stale window",
                within=4 * WINDOW,
            )
            during = _replicas(world, seen)
            assert len(during) >= 5  # every failed poll patched again ...
            assert set(during) == {3}  # ... and never held the queued jobs back
            assert world.counter("scaleset_listener_stale_assigned_jobs") == 0
            world.fake.control.faults.remove(outage)
        finally:
            await running.stop()


async def test_L7_a_held_back_surplus_comes_back_when_the_idle_runners_are_gone(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:
        await _idle_runners(world, 3)
        running = world.start()
        try:
            seen = await _scaled_for(world, 5)
            world.clock.advance(WINDOW + 1)
            await world.wait(lambda: 2 in _replicas(world, seen), "the stale part held back")
            assert world.counter("scaleset_listener_stale_assigned_jobs") == 3

            # the idle runners are scaled away: the evidence is gone, the jobs count again
            await _idle_runners(world, 0)
            seen = len(world.ers_patches())
            await world.wait(lambda: 5 in _replicas(world, seen), "the 5 jobs counted again")
            assert world.counter("scaleset_listener_stale_assigned_jobs") == 0
        finally:
            await running.stop()
