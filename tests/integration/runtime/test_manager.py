"""The manager: probes and metrics, graceful SIGTERM, supervision, and expectations holding an
owner back while its cache lags behind its own creates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from prometheus_client import CollectorRegistry
from tests.integration.runtime.replicator import CHILD, Replicator, parent_body
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import lease_record, manual_manager, new_manager, running
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.devtools.transports import RequestHook
from scaleset.kube.client import KubeClient
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP
from scaleset.runtime.controller import Controller, Reconcile, Result


async def children_of(client: KubeClient, namespace: str, parent: str) -> list[str]:
    listed = await client.list(CONFIG_MAP, namespace=namespace, label_selector=f"{CHILD}=true")
    return sorted(
        c.name
        for c in listed.items
        if not c.is_deleting and any(ref.name == parent for ref in c.owner_references)
    )


def labelled(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


async def get(url: str) -> httpx2.Response:
    async with httpx2.AsyncClient(trust_env=False) as http:
        return await http.get(url)


def url(manager: Any, path: str) -> str:
    server = manager.servers[0]
    return f"http://127.0.0.1:{server.bound_port}{path}"


async def test_a_leading_manager_reconciles_and_serves_probes_and_metrics(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    metrics = RuntimeMetrics(CollectorRegistry())
    async with make_client(kube_backend, metrics=metrics) as own:
        manager = new_manager(
            own, namespace, "solo", metrics=metrics, metrics_address="127.0.0.1:0",
            probe_address="127.0.0.1:0",
        )  # fmt: skip
        Replicator(manager)
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, parent_body("p", namespace, 3))

            async def three() -> bool:
                return len(await children_of(client, namespace, "p")) == 3

            await eventually(three, what="3 children")
            ready = await get(url(manager, "/readyz"))
            healthy = await get(url(manager, "/healthz"))
            scraped = (await get(url(manager, "/metrics"))).text
            assert (ready.status_code, ready.text.strip()) == (200, "ok")
            assert (healthy.status_code, healthy.text.strip()) == (200, "ok")
            assert 'workqueue_adds_total{name="replicator"}' in scraped
            assert 'leader_election_master_status{name="test-lease"} 1.0' in scraped
            assert 'controller_runtime_reconcile_total{controller="replicator"' in scraped
            assert "rest_client_requests_total" in scraped
        record = await lease_record(client, namespace, "test-lease")
        assert record is not None
        assert record.holder == ""  # released on stop


async def test_sigterm_lets_in_flight_work_finish_then_releases_the_lease(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    started = asyncio.Event()
    gate = asyncio.Event()
    timeline: list[str] = []

    async def slow(key: ObjectKey) -> Result | None:
        timeline.append(f"start {key.name}")
        started.set()
        try:
            await gate.wait()
        except asyncio.CancelledError:
            timeline.append("cancelled")
            raise
        timeline.append(f"finish {key.name}")
        return None

    async with make_client(kube_backend) as own:
        manager = new_manager(own, namespace, "graceful", graceful_shutdown=30.0)
        manager.controller("slow", for_kind=CONFIG_MAP, reconcile=slow, label_selector="slow=1")
        async with running(manager) as task:
            await client.create(CONFIG_MAP, labelled("s", namespace, slow="1"))
            await eventually(started.is_set, what="reconcile started")
            manager.stop()
            for _ in range(50):
                await asyncio.sleep(0)
            assert not task.done()  # waiting for the in-flight reconcile
            record = await lease_record(client, namespace, "test-lease")
            assert record is not None
            assert record.holder == "graceful"  # not released while work is in flight
            gate.set()
            await asyncio.wait_for(task, 30.0)
    assert timeline == ["start s", "finish s"]
    record = await lease_record(client, namespace, "test-lease")
    assert record is not None
    assert (record.holder, record.duration_seconds) == ("", 1)


async def test_a_crash_looping_task_is_restarted_and_fails_liveness(
    kube_backend: KubeBackend, namespace: str
) -> None:
    metrics = RuntimeMetrics(CollectorRegistry())
    runs = 0

    async def broken() -> None:
        nonlocal runs
        runs += 1
        raise RuntimeError("bug")

    async with make_client(kube_backend, metrics=metrics) as own:
        manager = new_manager(
            own, namespace, "crashy", metrics=metrics, probe_address="127.0.0.1:0",
            metrics_address="0", restart_backoff=(0.01, 0.02), max_restarts=3,
        )  # fmt: skip
        manager.add_task("broken", broken)
        async with running(manager):
            await eventually(lambda: not manager.health()[0], what="liveness fails")
            response = await get(url(manager, "/healthz"))
            assert response.status_code == 500
            assert "broken is crash-looping" in response.text
    assert runs > 3
    restarts = metrics.registry.get_sample_value(
        "scaleset_supervised_task_restarts_total", {"task": "broken"}
    )
    assert restarts is not None
    assert restarts >= 4


async def test_a_stalled_controller_fails_liveness(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    never = asyncio.Event()

    async def stuck(_key: ObjectKey) -> None:
        await never.wait()

    async with make_client(kube_backend) as own:
        manager = new_manager(
            own, namespace, "stuck", stall_seconds=0.5, graceful_shutdown=0.1,
            probe_address="127.0.0.1:0", metrics_address="0",
        )  # fmt: skip
        manager.controller("stuck", for_kind=CONFIG_MAP, reconcile=stuck, label_selector="s=1")
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            assert manager.health()[0]
            await client.create(CONFIG_MAP, labelled("x", namespace, s="1"))
            await eventually(lambda: not manager.health()[0], what="stall detected")
            response = await get(url(manager, "/healthz"))
            assert response.status_code == 500
            assert "controller stuck: no progress" in response.text


class DelayedChildWatch(httpx2.AsyncBaseTransport):
    """Delays every chunk of watch streams for child objects: a cache that lags its writes."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, delay: float) -> None:
        self._inner = inner
        self._delay = delay

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        params = request.url.params
        if params.get("watch") != "true" or CHILD not in (params.get("labelSelector") or ""):
            return response
        delay = self._delay
        stream = response.stream
        if not isinstance(stream, httpx2.AsyncByteStream):
            raise TypeError("an async transport answered with a sync stream")
        source: httpx2.AsyncByteStream = stream

        class Slow(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in source:
                    await asyncio.sleep(delay)
                    yield chunk

            async def aclose(self) -> None:
                await source.aclose()

        return httpx2.Response(
            response.status_code, headers=response.headers, stream=Slow(), request=request
        )


@pytest.mark.parametrize("bumps", [6])
async def test_expectations_prevent_over_creation_from_a_lagging_cache(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, bumps: int
) -> None:
    creates = RequestHook("POST", r"/configmaps$", _noop, times=10_000)

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        return DelayedChildWatch(inner, delay=0.3)

    async with make_client(kube_backend, hooks=[creates], wrap=wrap) as own:
        manager = new_manager(own, namespace, "lagging")
        replicator = Replicator(manager, workers=3)
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, parent_body("p", namespace, 3))
            for bump in range(bumps):  # each change wakes a reconcile before children show up
                await client.patch_merge(
                    CONFIG_MAP,
                    ObjectKey(namespace, "p"),
                    {"metadata": {"annotations": {"bump": str(bump)}}},
                )

            async def settled() -> bool:
                return (
                    len(await children_of(client, namespace, "p")) == 3
                    and len(
                        replicator.children.by_owner(
                            (await client.get(CONFIG_MAP, ObjectKey(namespace, "p"))).uid
                        )
                    )
                    == 3
                )

            await eventually(settled, within=30.0, what="3 children seen by the cache")
            # a child's event may have woken one more reconcile of the parent: let it finish,
            # then nothing it did may be a fourth child
            await eventually(
                lambda: not replicator.controller.queue.processing(),
                within=30.0,
                what="no reconcile in flight",
            )
    assert replicator.creates == 3
    assert creates.fired == 3
    assert replicator.deletes == 0


async def _noop(_request: httpx2.Request) -> None:
    return None


def idle(controller: Controller) -> bool:
    """Nothing queued, delayed or being reconciled."""
    queue = controller.queue
    return len(queue) == 0 and queue.delayed() == 0 and not queue.processing()


async def test_requeue_after_zero_means_no_requeue(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # controller-runtime: RequeueAfter 0 is "not set"; it must not requeue at once (a hot loop).
    clock = ManualClock()
    calls: list[str] = []

    async def reconcile(key: ObjectKey) -> Result:
        calls.append(key.name)
        return Result(requeue_after=0)

    await client.create(CONFIG_MAP, labelled("once", namespace, z="1"))
    async with make_client(kube_backend, clock=clock) as own:
        manager = manual_manager(own, namespace, "zero", clock)
        zero = manager.controller(
            "zero", for_kind=CONFIG_MAP, reconcile=reconcile, label_selector="z=1"
        )
        async with running(manager):
            await eventually(
                lambda: calls == ["once"] and idle(zero), within=10.0, what="one reconcile, idle"
            )
    assert calls == ["once"]


async def test_sync_period_requeues_unchanged_objects_and_zero_disables_it(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    clock = ManualClock()
    seen: dict[str, list[str]] = {"default": [], "disabled": []}

    def recorder(name: str) -> Reconcile:
        async def record(key: ObjectKey) -> None:
            seen[name].append(key.name)

        return record

    await client.create(CONFIG_MAP, labelled("steady", namespace, r="1"))
    async with make_client(kube_backend, clock=clock) as own:
        manager = manual_manager(own, namespace, "resync", clock, resync_period=30.0)
        for name, period in (("default", None), ("disabled", 0.0)):
            manager.controller(
                name,
                for_kind=CONFIG_MAP,
                reconcile=recorder(name),
                label_selector="r=1",
                resync_period=period,
            )
        async with running(manager):
            await eventually(lambda: seen["disabled"] == ["steady"], what="first reconcile")
            # two resyncs of the manager's period (30 s, +10% jitter) pass on the manual clock
            await eventually(
                lambda: len(seen["default"]) >= 3, clock=clock, what="two resyncs of 'default'"
            )
    assert set(seen["default"]) == {"steady"}
    assert seen["disabled"] == ["steady"]  # resync_period=0: never requeued by a resync
