"""L3 reaping: a terminal runner's reason is recorded on the set before the runner is deleted;
the failure breaker; a lost runner is replaced at once while a finished one waits for the
listener's next patch (ARC #4642)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.integration.controllers.ephemeralrunnerset.world import Finalizers, World
from tests.support.waiting import eventually

from scaleset.api import EphemeralRunnerSet
from scaleset.controllers.ephemeralrunnerset.settings import PlanSettings, Settings
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.runtime.informer import Informer
from scaleset.runtime.store import InformerEvent


@asynccontextmanager
async def new_runners_failing(
    world: World, *, image: str | None = None
) -> AsyncIterator[list[str]]:
    """Plays the runner controller for a pod template the API server rejects: every new runner
    (only those of ``image``, when given) is marked Failed with InvalidPod. Yields the names of
    all new runners, in the order they appeared."""
    failing = Informer(world.client, EPHEMERAL_RUNNER, namespaces=[world.namespace])
    created: list[str] = []
    tasks: set[asyncio.Task[None]] = set()

    def fail(event: InformerEvent) -> None:
        if event.type != "ADDED" or event.obj.status.get("phase"):
            return
        created.append(event.obj.name)
        [container] = event.obj.spec["spec"]["containers"]
        if image is None or container["image"] == image:
            task = asyncio.ensure_future(
                world.mark_terminal(event.obj.name, "Failed", "InvalidPod")
            )
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    failing.add_handler(fail)
    informer_task = asyncio.ensure_future(failing.run())
    try:
        yield created
    finally:
        informer_task.cancel()
        await asyncio.gather(informer_task, *tasks, return_exceptions=True)


async def one_of_two_finishes_a_job(world: World) -> tuple[str, str]:
    """Of the set's two runners, the first takes a job and exits 0 after it (the runner
    controller deletes it); returns (that one, the other)."""
    await world.count_is(2)
    done, other = await world.names()
    await world.register(done)
    await world.job_started(done)
    await world.client.delete(EPHEMERAL_RUNNER, world.key(done))
    return done, other


def creation_paused(runner_set: EphemeralRunnerSet) -> bool:
    return any(
        c.type == "CreationPaused" and c.status == "True" for c in runner_set.status.conditions
    )


async def test_L3_a_terminal_runner_is_recorded_then_reaped_and_replaced(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=2, patch_id=1)
    async with world.controller() as controller:
        await world.count_is(2)
        failed, outdated = await world.names()
        await world.mark_terminal(failed, "Failed", "InvalidPod")
        await world.mark_terminal(outdated, "Outdated", "Outdated")

        async def replaced() -> bool:
            names = await world.names()
            return len(names) == 2 and failed not in names and outdated not in names

        await world.until(replaced, "terminal runners reaped and replaced")
        status = (
            await world.status_where(lambda s: bool(s.status.terminal_reasons), "recorded")
        ).status
        assert status.terminal_reasons == {"InvalidPod": 1, "Outdated": 1}
        assert status.phase == "Outdated", "Outdated stays visible until the runner spec changes"
        condition = next(c for c in status.conditions if c.type == "TerminalRunners")
        assert condition.status == "True"
        await world.event_posted("ReapedTerminalRunner", name=failed)
        await world.until(
            lambda: (
                controller.counted(
                    "scaleset_runner_set_terminal_runners_total",
                    namespace=world.namespace,
                    name="arc",
                    reason="InvalidPod",
                )
                == 1
            ),
            "the terminal reason counted once",
        )


async def test_L3_the_breaker_stops_a_template_that_always_fails(
    world: World, finalizers: Finalizers
) -> None:
    """Every new runner fails with InvalidPod (as the runner controller marks a pod template the
    API server rejects): after 3 in a row, creation pauses; after the back-off, one more try."""
    settings = Settings(plan=PlanSettings(breaker_threshold=3, breaker_backoff=(300.0,)))
    async with new_runners_failing(world) as created:
        await world.create_set(replicas=1, patch_id=1)
        async with world.controller(settings=settings) as controller:
            paused = await world.status_where(creation_paused, "creation paused")
            assert paused.status.failure_streak is not None
            assert paused.status.failure_streak.reason == "InvalidPod"
            assert len(created) == 3
            await world.event_posted("CreationPaused", kind="EphemeralRunnerSet")
            await world.count_is(0)
            world.clock.advance(200.0)  # still paused: nothing is created
            await world.patch_replicas(1, 2)
            await world.caught_up(controller, "patch 2 seen")
            assert len(created) == 3
            world.clock.advance(101.0)  # the back-off is over: one more try, which fails too

            async def retried() -> bool:
                return len(created) == 4

            await world.until(retried, "one more runner after the back-off")


async def test_L3_an_evicted_idle_runner_is_replaced_without_a_new_patch(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=2, patch_id=1)
    async with world.controller():
        await world.count_is(2)
        lost, _ = await world.names()
        await world.register(lost)
        # its pod was evicted: the runner controller replaces it by deleting the runner
        await world.client.delete(EPHEMERAL_RUNNER, world.key(lost))

        async def replaced() -> bool:
            names = await world.names()
            return len(names) == 2 and lost not in names

        await world.until(replaced, "a replacement, still at patch 1")


async def test_L3_a_finished_runner_is_not_replaced_until_a_new_patch(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=2, patch_id=1)
    async with world.controller():
        done, other = await one_of_two_finishes_a_job(world)
        await world.count_is(1)
        await world.status_where(
            lambda s: [f.name for f in s.status.finished_runners] == [done], "slot held"
        )
        assert await world.names() == [other], "not replaced while patch 1 stands"
        await world.patch_replicas(2, 2)  # the listener still wants 2 after the job
        await world.count_is(2)


async def test_L3_a_runner_whose_end_the_listeners_patch_counted_is_replaced_at_once(
    world: World, finalizers: Finalizers
) -> None:
    """Our listener records JobCompleted with the id of the patch that follows it (here 2, the
    listener still wanting 2 for the jobs queued), then sends that patch; the runner exits after
    both. Under patch 2 its job is already counted out: it is replaced at once. It used to be
    held until patch 3 — the listener's next message, or the end of GitHub's 50 s long poll."""
    await world.create_set(replicas=2, patch_id=1)
    async with world.controller():
        await world.count_is(2)
        done, other = await world.names()
        runner = await world.register(done)
        await world.job_started(done)
        await world.patch_status(
            done,
            {
                "jobCompletion": {
                    "result": "succeeded",
                    "runnerId": runner.id,
                    "runnerName": done,
                    "jobId": "job-1",
                    "patchId": 2,
                }
            },
        )
        await world.patch_replicas(2, 2)
        await world.client.delete(EPHEMERAL_RUNNER, world.key(done))

        async def replaced() -> bool:
            names = await world.names()
            return len(names) == 2 and done not in names and other in names

        await world.until(replaced, "a replacement, still at patch 2")
        current = await world.runner_set()
        assert current is not None
        assert current.spec.patch_id == 2


async def test_L3_a_runner_finished_under_a_force_state_patch_is_replaced(
    world: World, finalizers: Finalizers
) -> None:
    """The listener idles at minRunners and sends patch id 0 on every empty poll (in a min ==
    max pool, always between jobs): a runner first seen finished under it is replaced. Its slot
    used to stay held for as long as the patch id stayed 0, keeping the set below minRunners."""
    await world.create_set(replicas=2, patch_id=0)
    async with world.controller():
        done, other = await one_of_two_finishes_a_job(world)
        for _ in range(3):  # the listener's empty polls, all at patch id 0
            await world.patch_replicas(2, 0)

        async def replaced() -> bool:
            names = await world.names()
            return len(names) == 2 and done not in names and other in names

        await world.until(replaced, "a replacement while the patch id stays 0")
        # its entry goes with it (patch id 0 holds nothing, so nothing is kept for it)
        await world.status_where(lambda s: s.status.finished_runners == [], "no entry left")


async def test_L3_a_fixed_template_ends_the_breakers_pause_at_once(
    world: World, finalizers: Finalizers
) -> None:
    """Runners of a bad template fail (InvalidPod, as the runner controller marks a pod the
    API server rejects) until the breaker pauses creation; the user fixes the template, and a
    runner of the new one is created at once, not when the back-off ends (it used to wait up
    to 15 minutes)."""
    settings = Settings(plan=PlanSettings(breaker_threshold=3, breaker_backoff=(900.0,)))
    async with new_runners_failing(world, image="bad:image") as created:
        await world.create_set(replicas=1, patch_id=1, image="bad:image")
        async with world.controller(settings=settings):
            await world.status_where(creation_paused, "creation paused")
            await world.count_is(0)
            assert len(created) == 3
            await world.set_image("good:image")  # the virtual clock stands still from here
            await eventually(lambda: len(created) == 4, within=30.0, what="a runner at once")
            [runner] = await world.runners()
            assert runner.spec["spec"]["containers"][0]["image"] == "good:image"
            await world.status_where(lambda s: s.status.failure_streak is None, "streak ended")
            await world.event_posted("CreationResumed", kind="EphemeralRunnerSet")
