"""A reconcile sends its requests in the client's lane of its controller and its object's
namespace (``scaleset.kube.throttle``), tasks it starts included: while requests wait for the
client's QPS, one scale set's burst does not hold back another controller's requests, nor
another namespace's (another tenant's)."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.kube.client import KubeClient
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP
from scaleset.kube.throttle import DEFAULT_LANE, current_lane


def labelled(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"lanes": "1"}}}


async def test_a_reconcile_sends_in_its_controllers_and_namespaces_lane(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    clock = ManualClock()
    seen: list[tuple[str, str]] = []

    async def reconcile(key: ObjectKey) -> None:
        async def started_by_the_reconcile() -> str:
            return current_lane()

        seen.append((current_lane(), await asyncio.create_task(started_by_the_reconcile())))

    async with make_client(kube_backend, clock=clock) as own:
        metrics = RuntimeMetrics(CollectorRegistry())
        manager = manual_manager(own, namespace, "lanes", clock, metrics=metrics)
        manager.controller(
            "lanes", for_kind=CONFIG_MAP, reconcile=reconcile, label_selector="lanes=1"
        )
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, labelled("c", namespace))
            await eventually(lambda: bool(seen), clock=clock, max_step=1.0, what="reconciled")
    assert seen[0] == (f"lanes/{namespace}", f"lanes/{namespace}")
    assert current_lane() == DEFAULT_LANE
