"""What a registration pass costs the API server (L6): planned on the controller's caches, a pass
that finds nothing to do sends no request; a plan that would act is made again on fresh reads,
so a cache that is behind never decides a deletion (a runner it does not show yet would make
its registration look like an orphan)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.integration.controllers.registrationpass.world import PREFIX, World
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.request_log import request_log
from tests.support.waiting import eventually

from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.registrationpass import setup as registrationpass_setup
from scaleset.controllers.registrationpass.reconciler import PassReport
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.controllers.setup import ProcessContext
from scaleset.runtime.informer import Informer


@asynccontextmanager
async def caches(world: World) -> AsyncIterator[tuple[Informer, Informer]]:
    """The runner and runner-pod caches the manager gives the registration pass, synced; they
    stop (and keep what they hold) when the block ends."""
    own = make_client(world.backend, clock=world.clock)
    try:
        manager = manual_manager(own, world.namespace, "pass-cost", world.clock)
        options = ControllerOptions(controller_namespace=world.namespace, listener_image="x")
        context = ProcessContext(options, own, world.clock)
        # a day between passes: the manager's own first pass is the only one it runs
        _, built = registrationpass_setup.build(
            manager, context, settings=Settings(interval=86400.0), github=world.github
        )
        assert built.runners is not None
        assert built.pods is not None
        runners, pods = built.runners, built.pods
        async with running(manager):
            await eventually(lambda: runners.synced and pods.synced, what="caches synced")
            yield runners, pods
    finally:
        await own.close()


async def counted_pass(
    world: World, runners: Informer, pods: Informer, requests: list[str]
) -> PassReport:
    """One pass on the caches, by a pass whose own client logs every request it sends."""
    counted = make_client(
        world.backend,
        clock=world.clock,
        hooks=request_log(requests, methods=("GET", "POST", "PATCH", "PUT", "DELETE")),
    )
    registration_pass = world.registration_pass()
    registration_pass.kube = counted
    registration_pass.runners = runners
    registration_pass.pods = pods
    try:
        return await world.run_pass(registration_pass)
    finally:
        await counted.close()


async def test_L6_a_pass_with_nothing_to_do_sends_no_request(world: World) -> None:
    await world.create_set()
    ids = [await world.create_runner(f"{PREFIX}{i}") for i in range(3)]
    requests: list[str] = []
    async with caches(world) as (runners, pods):
        await eventually(lambda: len(runners.list(world.namespace)) == 3, what="runners cached")
        report = await counted_pass(world, runners, pods, requests)
    assert report.failed == ""
    assert report.actions == ()
    assert requests == [], "a settled set's pass reads the caches, not the API server"
    assert all(world.registered(runner_id) for runner_id in ids)


async def test_L6_a_plan_on_a_cache_that_is_behind_is_made_again_on_fresh_reads(
    world: World,
) -> None:
    await world.create_set()
    await world.create_runner(f"{PREFIX}0")
    requests: list[str] = []
    async with caches(world) as (runners, pods):
        await eventually(lambda: len(runners.list(world.namespace)) == 1, what="runner cached")
    # the caches have stopped: a runner created now, and registered, is not in them
    late = await world.create_runner(f"{PREFIX}late")
    report = await counted_pass(world, runners, pods, requests)
    assert report.failed == ""
    assert report.actions == (), "on fresh reads the registration has its EphemeralRunner"
    assert world.registered(late), "the registration of a runner the cache did not show yet"
    assert await world.runner_exists(f"{PREFIX}late")
    assert requests == [
        "GET ephemeralrunnersets/arc",
        "GET ephemeralrunners",
        "GET pods",
        "GET ephemeralrunners",
    ], "the plan that would act was made again on fresh reads"
