"""L3 scale-down on a force-state patch: idle runners go, busy ones stay — even when the phases
are stale (the listener is stopped and never wrote the job), because GitHub's JobStillRunning is
the authority; a job landing between the read and the delete keeps the runner; a runner whose id
was never recorded has its registration looked up by name; a removal failing unexpectedly takes
the others of its scale-down with it (none runs on detached)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx2
from tests.integration.controllers.ephemeralrunnerset.world import Finalizers, World
from tests.support.waiting import eventually

from scaleset.devtools.transports import RequestHook


async def test_L3_force_state_removes_pending_and_idle_and_github_saves_the_busy_one(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=3, patch_id=1)
    async with world.controller():
        await world.count_is(3)
        pending, idle, busy = await world.names()
        await world.register(pending, idle=False)
        await world.register(idle)
        await world.register(busy)  # looks idle: its JobStarted never reached the runner
        await world.start_job(busy)  # ... but GitHub gave it a job
        await world.patch_replicas(0, 0)

        async def only_busy_left() -> bool:
            return await world.names() == [busy]

        await world.until(only_busy_left, "pending and idle removed")
        assert not world.registered(pending)
        assert not world.registered(idle)
        assert world.registered(busy), "the busy runner keeps its registration"
        await world.event_posted("RunnerBusyOnGitHub", name=busy)
        await world.event_posted("ScaleDown", name=idle)


async def test_L3_scale_down_takes_starting_with_registration_first_then_oldest_idle(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=3, patch_id=1)
    async with world.controller():
        await world.count_is(3)
        runners = await world.runners()  # oldest first (creationTimestamp, then name)
        older, younger = runners[0].name, runners[1].name
        starting = runners[2].name  # the youngest, but starting: it goes first
        await world.register(older)
        await world.register(younger)
        await world.register(starting, idle=False)
        await world.patch_replicas(1, 0)

        async def two_removed() -> bool:
            return len(await world.names()) == 1

        await world.until(two_removed, "two runners removed")
        assert await world.names() == [younger], "starting first, then the oldest idle"


async def test_L3_a_job_landing_between_the_read_and_the_delete_keeps_the_runner(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=1, patch_id=1)
    landed: list[str] = []

    async def job_lands(request: httpx2.Request) -> None:
        name = request.url.path.rsplit("/", 1)[-1]
        await world.job_started(name)  # the listener's write, after our fresh GET
        landed.append(name)

    hook = RequestHook("DELETE", r"/ephemeralrunners/", job_lands)
    async with world.controller(hooks=[hook]):
        await world.count_is(1)
        (name,) = await world.names()
        await world.register(name)
        await world.patch_replicas(0, 0)
        await world.until(lambda: bool(landed), "the delete attempted")

        async def kept() -> bool:
            return "RunnerChangedDuringRemoval" in await world.events(name=name)

        await world.until(kept, "the runner kept with an Event")
        runner = await world.runner(name)
        assert runner is not None
        assert not runner.is_deleting
        assert runner.status.get("jobId") == "job-1"


async def test_L3_a_runner_whose_id_was_never_recorded_is_looked_up_by_name(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=1, patch_id=1)
    async with world.controller():
        await world.count_is(1)
        (name,) = await world.names()
        # registered on GitHub, but the runner id never made it into the runner's status
        world.fake.control.generate_jit_config(world.scale_set_id, name)
        await world.patch_status(name, {"ready": True})
        world.clock.advance(timedelta(minutes=3).total_seconds())
        await world.patch_replicas(0, 0)
        await world.count_is(0)
        assert not world.registered(name), "no registration leaks"


async def test_L3_a_removal_failing_unexpectedly_leaves_no_other_removal_running(
    world: World, finalizers: Finalizers
) -> None:
    """A scale-down runs its removals together. One raises something no removal expects (the
    reconcile fails, and is retried): the others are cancelled with it, not left running
    detached beside the retry (a second removal of the same runner, unseen by the ledger)."""
    armed = False
    reads: list[str] = []
    first_entered = asyncio.Event()
    release = asyncio.Event()
    first: list[str] = []

    async def removal_read(request: httpx2.Request) -> None:
        if not armed:
            return
        reads.append(request.url.path)
        if len(reads) == 1:  # the first removal's read waits
            first_entered.set()
            try:
                await release.wait()
            except asyncio.CancelledError:
                first.append("cancelled")
                raise
            first.append("went on")
        elif len(reads) == 2:  # the second one's fails, while the first waits
            await first_entered.wait()
            raise RuntimeError("an unexpected failure of one removal")

    hook = RequestHook("GET", r"/ephemeralrunners/[^/]+$", removal_read, times=1_000_000)
    await world.create_set(replicas=2, patch_id=1)
    try:
        async with world.controller(hooks=[hook]) as controller:
            await world.count_is(2)
            for name in await world.names():
                await world.register(name)
            await world.caught_up(controller, "both runners registered")
            armed = True
            await world.patch_replicas(0, 0)
            await eventually(lambda: len(reads) >= 2, within=30.0, what="two removals read")
            await eventually(lambda: bool(first), within=30.0, what="the first removal ended")
            assert first == ["cancelled"]
    finally:
        release.set()
