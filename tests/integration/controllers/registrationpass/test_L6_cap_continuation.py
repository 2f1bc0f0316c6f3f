"""L6: what a pass left at its deletion cap is taken up ``min_gap`` later by the next pass, not
a whole interval later (driven through ``reconcile``, the controller's entry, on the virtual
clock)."""

from __future__ import annotations

import asyncio

from tests.integration.controllers.registrationpass.world import PREFIX, SET, World
from tests.support.waiting import eventually

from scaleset.controllers.registrationpass.reconciler import RegistrationPass
from scaleset.controllers.registrationpass.schedule import EarlySettings
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.runtime.controller import Result


async def reconcile(world: World, registration_pass: RegistrationPass) -> Result:
    task = asyncio.ensure_future(registration_pass.reconcile(world.key(SET)))
    await eventually(task.done, clock=world.clock, within=60.0, what="reconcile", max_step=5.0)
    return task.result()


async def test_L6_a_pass_at_its_cap_is_followed_after_min_gap_by_one_that_goes_on(
    world: World,
) -> None:
    await world.create_set()
    orphans = [
        world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}orph{i}").id
        for i in range(3)
    ]
    registration_pass = world.registration_pass(Settings(interval=300.0, max_deletions=2))
    registration_pass.early = EarlySettings(min_gap=60.0)
    assert await reconcile(world, registration_pass) == Result(requeue_after=60.0)
    assert sum(world.registered(o) for o in orphans) == 1
    world.clock.advance(60.0)
    await reconcile(world, registration_pass)
    assert not any(world.registered(o) for o in orphans)
