"""What a settled listener costs the API server: the periodic resync re-queues every listener
each minute, and for one with nothing to do it must not read what the controller watches (the
listener and its pod come from the caches); the objects it does not watch (ServiceAccount, Role,
RoleBinding, Secrets) are still read fresh, as that read is how a deleted one is put back."""

from __future__ import annotations

import dataclasses

from tests.integration.controllers.autoscalinglistener.world import World
from tests.support.kube import make_client
from tests.support.request_log import request_log
from tests.support.waiting import eventually

from scaleset.controllers.autoscalinglistener.apply import Applier
from scaleset.kube.resources import AUTOSCALING_LISTENER, POD


async def test_a_settled_listeners_reconcile_reads_neither_the_listener_nor_its_pod(
    world: World,
) -> None:
    requests: list[str] = []
    counted = make_client(world.backend, clock=world.clock, hooks=request_log(requests))
    try:
        async with world.kubelet(), world.controller() as controller:
            await world.create_listener()
            await world.running_pod()
            await world.condition_where(
                "ListenerRunning", lambda c: c["status"] == "True", "ListenerRunning=True"
            )
            listeners, pods = controller.reconciler.listeners, controller.reconciler.pods
            assert listeners is not None
            assert pods is not None

            async def caches_caught_up() -> bool:
                listener = await world.get(AUTOSCALING_LISTENER, world.key())
                pod = await world.get(POD, world.key())
                if listener is None or pod is None:
                    return False
                cached_listener, cached_pod = listeners.get(world.key()), pods.get(world.key())
                return (
                    cached_listener is not None
                    and cached_pod is not None
                    and cached_listener.resource_version == listener.resource_version
                    and cached_pod.resource_version == pod.resource_version
                )

            await eventually(caches_caught_up, within=30.0, what="caches caught up")
            # a reconcile as the resync queues it, on a client of its own that counts its reads
            resync = dataclasses.replace(
                controller.reconciler, kube=counted, applier=Applier(counted)
            )
            await resync.reconcile(world.key())
    finally:
        await counted.close()

    name = world.name
    assert f"GET autoscalinglisteners/{name}" not in requests, requests
    assert f"GET pods/{name}" not in requests, requests
    assert f"GET serviceaccounts/{name}" in requests, requests
