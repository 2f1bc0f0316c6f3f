"""What a settled listener costs the API server: the periodic resync re-queues every listener
each minute, and for one with nothing to do it must not read what the controller watches (the
listener, its pod, ServiceAccount, Role, RoleBinding and config Secret come from the caches,
and the proxy Secret's absence too), nor the scale set's GitHub Secret, which is watched by name
(a rotation queues the listener on the watch's word). A watched object deleted behind the
controller's back is put back on the watch's word, with no resync."""

from __future__ import annotations

import dataclasses

import pytest
from tests.integration.controllers.autoscalinglistener.world import (
    GITHUB_SECRET,
    World,
)
from tests.support.kube import make_client
from tests.support.request_log import request_log

from scaleset.controllers.autoscalinglistener.apply import Applier
from scaleset.kube.resources import (
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    Kind,
)


async def test_a_settled_listeners_reconcile_reads_none_of_its_watched_objects(
    world: World,
) -> None:
    requests: list[str] = []
    counted = make_client(world.backend, clock=world.clock, hooks=request_log(requests))
    try:
        async with world.kubelet(), world.controller() as controller:
            await world.create_listener()
            await world.settled(controller)
            # a reconcile as the resync queues it, on a client of its own that counts its reads
            resync = dataclasses.replace(
                controller.reconciler, kube=counted, applier=Applier(counted)
            )
            await resync.reconcile(world.key())
    finally:
        await counted.close()

    name = world.name
    for read in ("autoscalinglisteners", "pods", "serviceaccounts", "roles", "rolebindings"):
        assert f"GET {read}/{name}" not in requests, requests
    assert f"GET secrets/{name}-config" not in requests, requests
    assert f"GET secrets/{name}-proxy" not in requests, requests
    assert f"GET secrets/{GITHUB_SECRET}" not in requests, requests
    assert requests == [], requests


@pytest.mark.parametrize(
    "kind", [SERVICE_ACCOUNT, ROLE, ROLE_BINDING, SECRET], ids=lambda k: k.kind
)
async def test_a_deleted_listener_object_is_put_back_on_the_watchs_word(
    world: World, kind: Kind
) -> None:
    """The clock stands still, so no resync and no requeue runs: only the watch of ``kind``
    can tell the controller that its object is gone."""
    keys = {SERVICE_ACCOUNT: world.key(), SECRET: world.config_secret_key()}
    key = keys.get(kind, world.rbac_key())
    async with world.kubelet(), world.controller() as controller:
        await world.create_listener()
        await world.settled(controller)
        first = await world.get(kind, key)
        assert first is not None
        await world.client.delete(kind, key)

        async def put_back() -> bool:
            again = await world.get(kind, key)
            return again is not None and again.uid != first.uid

        await world.until_still(put_back, f"the {kind.kind} put back")
