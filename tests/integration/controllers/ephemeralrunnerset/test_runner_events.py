"""A pass of the set walks every runner of the set, so runner changes are not each worth a pass
of their own: a change of a runner queues the set ``runner_event_delay`` later, and the changes
meanwhile come to one pass (at scale-up, one pass per runner change made the passes quadratic
in the runners: 967 passes for 1,000 runners)."""

from __future__ import annotations

from tests.integration.controllers.ephemeralrunnerset.world import Controller, World
from tests.support.waiting import eventually

from scaleset.kube.resources import EPHEMERAL_RUNNER


def _idle(controller: Controller) -> bool:
    queue = controller.runtime.queue
    return len(queue) == 0 and not queue.processing()


async def test_runner_changes_within_the_delay_come_to_one_pass_of_the_set(world: World) -> None:
    await world.create_set(replicas=3, patch_id=1)
    async with world.controller() as controller:
        await world.count_is(3)
        await world.until(
            lambda: _idle(controller) and not controller.runtime.queue.delayed(), "settled"
        )
        before = controller.passes()
        names = await world.names()
        # the clock stands still: each change is seen by the controller's cache, and the
        # controller has nothing queued, before the next one is made
        for index, name in enumerate(names):
            await world.client.patch_merge(
                EPHEMERAL_RUNNER,
                world.key(name),
                {"metadata": {"annotations": {"test/touched": str(index)}}},
            )

            def seen(name: str = name) -> bool:
                cached = controller.reconciler.runners.get(world.key(name))
                return cached is not None and "test/touched" in cached.annotations

            await eventually(seen, within=20.0, what=f"{name}'s change in the cache")
            await eventually(lambda: _idle(controller), within=20.0, what="nothing running")
        world.clock.advance(controller.reconciler.settings.runner_event_delay)
        await eventually(lambda: controller.passes() > before, within=20.0, what="a pass")
        await eventually(lambda: _idle(controller), within=20.0, what="the pass done")
        assert controller.passes() == before + 1
