"""Outage recovery (ARC #4395/#4396) and the optional maximum runner age (ARC #4100), on the
ManualClock: an idle runner whose pod runs while GitHub shows it offline past the bound is
replaced (also across controller restarts: the offline note is on the runner); an idle runner
past the maximum age is retired; a busy one is never touched."""

from __future__ import annotations

from tests.integration.controllers.registrationpass.world import PREFIX, World

from scaleset.api import keys, parse_kube_time
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.kube.resources import EPHEMERAL_RUNNER

IDLE = {"ready": True}
BUSY = {"ready": True, "phase": "Running", "jobRequestId": 3, "jobId": "j3"}


async def test_runner_offline_past_the_bound_with_its_pod_running_is_replaced(
    world: World,
) -> None:
    """The fake lists a registration with no connected runner process as offline."""
    await world.create_set()
    runner_id = await world.create_runner(f"{PREFIX}off1", status=IDLE)
    await world.running_pod(f"{PREFIX}off1")
    registration_pass = world.registration_pass(Settings(offline_bound=600.0))
    first = await world.run_pass(registration_pass)
    assert first.done == ()
    world.clock.advance(300.0)
    assert (await world.run_pass(registration_pass)).done == ()
    world.clock.advance(301.0)
    third = await world.run_pass(registration_pass)
    assert third.done == ("RunnerOffline",)
    assert not await world.runner_exists(f"{PREFIX}off1")
    assert not world.registered(runner_id)
    assert "RunnerOffline" in await world.event_reasons()


async def test_offline_runner_without_a_running_pod_is_left_to_the_runner_controller(
    world: World,
) -> None:
    await world.create_set()
    await world.create_runner(f"{PREFIX}off2", status=IDLE)
    registration_pass = world.registration_pass(Settings(offline_bound=60.0))
    await world.run_pass(registration_pass)
    world.clock.advance(120.0)
    assert (await world.run_pass(registration_pass)).done == ()
    assert await world.runner_exists(f"{PREFIX}off2")


async def test_offline_runner_with_a_job_is_never_replaced(world: World) -> None:
    await world.create_set()
    await world.create_runner(f"{PREFIX}off3", status=BUSY)
    await world.running_pod(f"{PREFIX}off3")
    registration_pass = world.registration_pass(Settings(offline_bound=60.0))
    await world.run_pass(registration_pass)
    world.clock.advance(120.0)
    assert (await world.run_pass(registration_pass)).done == ()
    assert await world.runner_exists(f"{PREFIX}off3")


async def test_idle_runner_past_the_maximum_age_is_retired_a_busy_one_is_kept(
    world: World,
) -> None:
    await world.create_set()
    idle = await world.create_runner(f"{PREFIX}old-idle", status=IDLE)
    busy = await world.create_runner(f"{PREFIX}old-busy", status=BUSY)
    for name in (f"{PREFIX}old-idle", f"{PREFIX}old-busy"):
        await world.running_pod(name)
    # offline bound far away: only the age rule may act
    settings = Settings(max_runner_age=3600.0, offline_bound=10**6)
    registration_pass = world.registration_pass(settings)
    assert (await world.run_pass(registration_pass)).done == ()
    world.clock.advance(3601.0)
    report = await world.run_pass(registration_pass)
    assert report.done == ("RunnerRetired",)
    assert not await world.runner_exists(f"{PREFIX}old-idle")
    assert not world.registered(idle)
    assert await world.runner_exists(f"{PREFIX}old-busy")
    assert world.registered(busy)
    assert "RunnerRetired" in await world.event_reasons()


async def test_maximum_age_is_off_by_default(world: World) -> None:
    await world.create_set()
    await world.create_runner(f"{PREFIX}old2", status=IDLE)
    registration_pass = world.registration_pass(Settings(offline_bound=10**6))
    world.clock.advance(30 * 86400.0)
    assert (await world.run_pass(registration_pass)).done == ()
    assert await world.runner_exists(f"{PREFIX}old2")


async def test_a_restart_in_the_offline_period_keeps_the_original_deadline(world: World) -> None:
    """When a pass first saw the runner offline is stored on the runner, so a restarted
    controller (a new pass object each time here) replaces it at the original deadline."""
    await world.create_set()
    name = f"{PREFIX}off4"
    await world.create_runner(name, status=IDLE)
    await world.running_pod(name)
    settings = Settings(offline_bound=600.0)
    noted_at = world.clock.time()
    assert (await world.run_pass(world.registration_pass(settings))).done == ()
    runner = await world.client.get(EPHEMERAL_RUNNER, world.key(name))
    stored = parse_kube_time(runner.annotations[keys.OFFLINE_SINCE_ANNOTATION]).timestamp()
    assert abs(stored - noted_at) < 1e-3
    world.clock.advance(300.0)
    assert (await world.run_pass(world.registration_pass(settings))).done == ()
    world.clock.advance(301.0)
    report = await world.run_pass(world.registration_pass(settings))
    assert report.done == ("RunnerOffline",)
    assert not await world.runner_exists(name)
