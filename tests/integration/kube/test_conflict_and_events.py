"""retry_on_conflict against a deterministic race (lifecycle.md L2), and the Events recorder:
aggregation, rate limit, and a failed post (403) that never fails the caller."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from prometheus_client import CollectorRegistry
from tests.integration.kube.conftest import make_client
from tests.integration.kube.test_client import ephemeral_runner
from tests.plugins.kube_backends import KubeBackend

from scaleset.clock import ManualClock
from scaleset.devtools.transports import RequestHook, ServiceAccountRef
from scaleset.kube.client import KubeClient
from scaleset.kube.conflict import retry_on_conflict
from scaleset.kube.errors import ConflictRetriesExhausted
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER, EVENT
from scaleset.runtime.events import EventRecorder

pytestmark = pytest.mark.usefixtures("actions_crds")

TERMINAL = ("Failed", "Succeeded", "Outdated")


def promote_to_running(ours: KubeClient, key: ObjectKey, reads: list[str]) -> Any:
    """The listener's L1 write: read, decide (never resurrect a terminal runner), write locked."""

    async def attempt() -> KubeObject:
        runner = await ours.get(EPHEMERAL_RUNNER, key)
        reads.append(runner.resource_version)
        if runner.status.get("phase") in TERMINAL:
            return runner
        return await ours.patch_with_lock(
            runner, {"status": {"phase": "Running", "jobId": "42"}}, status=True
        )

    return attempt


async def test_a_racing_write_is_answered_by_reading_and_deciding_again(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))

    async def rival(_request: httpx2.Request) -> None:
        await client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"status": {"ready": True}}, status=True
        )

    hook = RequestHook("PATCH", r"/ephemeralrunners/r1/status$", rival, times=1)
    metrics = RuntimeMetrics(CollectorRegistry())
    reads: list[str] = []
    async with make_client(kube_backend, hooks=[hook]) as ours:
        result = await retry_on_conflict(
            promote_to_running(ours, runner.key, reads), operation="phase", metrics=metrics
        )
    assert hook.fired == 1
    assert len(reads) == 2  # one conflicting attempt, one after re-reading
    assert result.status.get("phase") == "Running"
    assert result.status.get("ready") is True  # the rival's write survived
    assert (
        metrics.registry.get_sample_value("scaleset_conflict_retries_total", {"operation": "phase"})
        == 1
    )


async def test_L2_a_race_that_ends_the_runner_is_never_undone(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))

    async def fail_it(_request: httpx2.Request) -> None:
        await client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"status": {"phase": "Failed"}}, status=True
        )

    hook = RequestHook("PATCH", r"/ephemeralrunners/r1/status$", fail_it, times=1)
    reads: list[str] = []
    async with make_client(kube_backend, hooks=[hook]) as ours:
        result = await retry_on_conflict(
            promote_to_running(ours, runner.key, reads),
            operation="phase",
            metrics=RuntimeMetrics(CollectorRegistry()),
        )
    assert result.status.get("phase") == "Failed"
    assert (await client.get(EPHEMERAL_RUNNER, runner.key)).status.get("phase") == "Failed"


async def test_exhaustion_is_reported_and_nothing_is_written(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    bumps = 0

    async def rival(_request: httpx2.Request) -> None:
        nonlocal bumps
        bumps += 1
        await client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"metadata": {"labels": {"bump": str(bumps)}}}
        )

    hook = RequestHook("PATCH", r"/ephemeralrunners/r1/status$", rival, times=5)
    metrics = RuntimeMetrics(CollectorRegistry())
    reads: list[str] = []
    async with make_client(kube_backend, hooks=[hook]) as ours:
        with pytest.raises(ConflictRetriesExhausted) as caught:
            await retry_on_conflict(
                promote_to_running(ours, runner.key, reads), operation="phase", metrics=metrics
            )
    assert caught.value.attempts == 5
    assert len(reads) == 5
    assert (
        metrics.registry.get_sample_value(
            "scaleset_conflict_retries_exhausted_total", {"operation": "phase"}
        )
        == 1
    )
    assert (await client.get(EPHEMERAL_RUNNER, runner.key)).status.get("phase") is None


# ------------------------------------------------------------------------------ events


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
    import asyncio
    import contextlib

    task = asyncio.ensure_future(recorder.run())
    try:
        await recorder.flush()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
