"""The Events recorder against a real server: aggregation, rate limit, and a failed post (403)
that never fails the caller."""

from __future__ import annotations

import asyncio
import contextlib

import httpx2
import pytest
from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import ephemeral_runner, make_client

from scaleset.clock import ManualClock
from scaleset.devtools.transports import ServiceAccountRef
from scaleset.kube.client import KubeClient
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER, EVENT
from scaleset.runtime.events import EventRecorder

pytestmark = pytest.mark.usefixtures("actions_crds")


async def events_about(client: KubeClient, namespace: str, name: str) -> list[KubeObject]:
    listed = await client.list(EVENT, namespace=namespace)
    return [e for e in listed.items if e.raw.get("involvedObject", {}).get("name") == name]


async def test_repeated_events_are_aggregated_into_one_with_a_count(
    client: KubeClient, namespace: str
) -> None:
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    metrics = RuntimeMetrics(CollectorRegistry())
    recorder = EventRecorder(client, metrics=metrics, clock=ManualClock())
    for _ in range(3):
        recorder.emit(runner, "Warning", "JobCompletedRunnerAlive", "pod still running")
    recorder.emit(runner, "Normal", "DemotedIdleRunner", "moved to Pending")
    await drain(recorder)
    events = await events_about(client, namespace, "r1")
    by_reason = {e.raw["reason"]: e.raw for e in events}
    assert len(events) == 2
    assert by_reason["JobCompletedRunnerAlive"]["count"] == 3
    assert by_reason["JobCompletedRunnerAlive"]["type"] == "Warning"
    assert by_reason["JobCompletedRunnerAlive"]["involvedObject"]["uid"] == runner.uid
    assert by_reason["DemotedIdleRunner"]["count"] == 1
    assert (
        metrics.registry.get_sample_value(
            "scaleset_kube_events_posted_total", {"action": "aggregated"}
        )
        == 2
    )


async def test_events_are_rate_limited_per_object(client: KubeClient, namespace: str) -> None:
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    metrics = RuntimeMetrics(CollectorRegistry())
    clock = ManualClock()
    recorder = EventRecorder(client, metrics=metrics, clock=clock, burst=2, refill_seconds=60)
    for index in range(5):
        recorder.emit(runner, "Normal", "Tick", f"message {index}")
    await drain(recorder)
    assert len(await events_about(client, namespace, "r1")) == 2
    assert (
        metrics.registry.get_sample_value(
            "scaleset_kube_events_dropped_total", {"cause": "rate_limited"}
        )
        == 3
    )
    clock.advance(60.0)
    recorder.emit(runner, "Normal", "Tick", "after refill")
    await drain(recorder)
    assert len(await events_about(client, namespace, "r1")) == 3


class ForbidEvents(httpx2.AsyncBaseTransport):
    """Answers every Event write with 403, as RBAC without ``events`` would."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if "/events" in request.url.path and request.method in ("POST", "PATCH"):
            body = (
                b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden",'
                b'"message":"events is forbidden","code":403}'
            )
            return httpx2.Response(403, content=body, request=request)  # no Content-Type
        return await self._inner.handle_async_request(request)


async def test_a_forbidden_event_post_is_counted_never_raised(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    metrics = RuntimeMetrics(CollectorRegistry())
    async with make_client(kube_backend, wrap=ForbidEvents) as forbidden:
        recorder = EventRecorder(forbidden, metrics=metrics, clock=ManualClock())
        recorder.emit(runner, "Warning", "PodLostAfterStart", "pod vanished")
        await drain(recorder)
    assert (
        metrics.registry.get_sample_value(
            "scaleset_kube_events_dropped_total", {"cause": "post_failed"}
        )
        == 1
    )
    assert await events_about(client, namespace, "r1") == []


async def test_rbac_without_events_is_tolerated(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    metrics = RuntimeMetrics(CollectorRegistry())
    account = ServiceAccountRef(namespace, "no-permissions")
    transport = kube_backend.transport(impersonate=account)
    async with KubeClient.from_config(
        kube_backend.config(), transport=transport, metrics=metrics
    ) as powerless:
        recorder = EventRecorder(powerless, metrics=metrics, clock=ManualClock())
        recorder.emit(runner, "Warning", "RegistrationMissing", "gone from GitHub")
        await drain(recorder)
    assert (
        metrics.registry.get_sample_value(
            "scaleset_kube_events_dropped_total", {"cause": "post_failed"}
        )
        == 1
    )


async def drain(recorder: EventRecorder) -> None:
    """Run the recorder until everything emitted so far is posted or dropped."""
    task = asyncio.ensure_future(recorder.run())
    try:
        await recorder.flush()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_two_recorders_at_the_same_instant_both_post(
    client: KubeClient, namespace: str
) -> None:
    """Event names are ``<object>.<clock nanos>``: a second recorder (another process, a restarted
    controller, the kubelet for a pod named like its runner) on the same clock instant takes a
    unique name instead of losing its Event to AlreadyExists."""
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    clock = ManualClock()
    first = EventRecorder(client, metrics=RuntimeMetrics(CollectorRegistry()), clock=clock)
    second = EventRecorder(client, metrics=RuntimeMetrics(CollectorRegistry()), clock=clock)
    first.emit(runner, "Normal", "RunnerStarted", "from the controller")
    await drain(first)
    second.emit(runner, "Normal", "Started", "from the node")
    await drain(second)
    reasons = sorted(e.raw["reason"] for e in await events_about(client, namespace, "r1"))
    assert reasons == ["RunnerStarted", "Started"]
