"""What a settled scale set costs the API server: the periodic resync re-queues every scale set
each minute, and for one with nothing to do the reconcile plans on the controller's cache and
reads nothing (a plan that would act is made again on a fresh GET first)."""

from __future__ import annotations

import copy

from tests.integration.controllers.autoscalingrunnerset.world import World
from tests.support.kube import make_client
from tests.support.request_log import request_log
from tests.support.waiting import eventually

from scaleset.controllers.autoscalingrunnerset.apply import Applier
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET


async def test_a_settled_scale_sets_reconcile_reads_nothing(world: World) -> None:
    requests: list[str] = []
    every_method = ("GET", "POST", "PUT", "PATCH", "DELETE")
    counted = make_client(
        world.backend, clock=world.clock, hooks=request_log(requests, every_method)
    )
    await world.create_scale_set("arc")
    try:
        async with world.controller() as controller:
            await world.ready("arc")
            scale_sets = controller.reconciler.scale_sets
            assert scale_sets is not None

            async def cache_caught_up() -> bool:
                current = await world.get(AUTOSCALING_RUNNER_SET, "arc")
                cached = scale_sets.get(world.key("arc"))
                return (
                    current is not None
                    and cached is not None
                    and cached.resource_version == current.resource_version
                )

            await eventually(cache_caught_up, within=30.0, what="cache caught up")
            # a reconcile as the resync queues it, on a client of its own that counts requests
            resync = copy.copy(controller.reconciler)
            resync.kube = counted
            resync.applier = Applier(counted, controller.github, world.clock)
            await resync.reconcile(world.key("arc"))
    finally:
        await counted.close()
    assert requests == [], requests
