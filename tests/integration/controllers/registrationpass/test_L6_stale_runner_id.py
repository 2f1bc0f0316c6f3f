"""L6: a registration left behind by a runner that records another, removed registration of its
name (soak seed 2: a JIT Secret that outlived its registration gave the runner that id) is
removed by the same pass that ends the runner — not left for a pass that may come minutes after
the runner is gone."""

from __future__ import annotations

from tests.integration.controllers.registrationpass.world import PREFIX, World


async def test_L6_a_runner_recording_a_removed_registration_goes_with_its_live_one(
    world: World,
) -> None:
    await world.create_set()
    name = f"{PREFIX}stale1"
    recorded = await world.create_runner(name)
    world.fake.control.delete_runner(recorded)
    live = world.fake.control.generate_jit_config(world.scale_set_id, name).id
    kept = await world.create_runner(f"{PREFIX}kept1")
    report = await world.run_pass(world.registration_pass())
    assert report.done == ("RegistrationMissing", "OrphanRegistration")
    assert not await world.runner_exists(name)
    assert not world.registered(live)
    assert world.registered(kept)
    assert await world.runner_exists(f"{PREFIX}kept1")
    assert (await world.run_pass(world.registration_pass())).done == ()
