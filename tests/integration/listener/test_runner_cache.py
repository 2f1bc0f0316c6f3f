"""The listener's watch cache of runners as the first read of a JobStarted (L1, L2, L4), on both
backends.

A JobStarted on a runner the cache holds at its current version is one request: the locked
status patch under the cached resourceVersion, no GET. A cache that is behind costs a 409 and
then the normal path (GET, decide, locked patch), so a stale cached view never decides a write:
the seed race (a runner that ended after the cache saw it) and a JobStarted after its own
JobCompleted in the same message both end without Running, in any version a watch records.

The stale cache is built directly (``JobEventHandler(cached=...)`` with a dict of old versions):
with a live watch the lag between a write and its event cannot be held open on purpose. The loop
tests use the real listener and its real watch.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from tests.integration.listener.runners import SentRequests, drive, make_runner
from tests.integration.listener.world import (
    World,
    completed_job,
    job_message,
    started_job,
    world_on,
)
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client

from scaleset.clock import ManualClock
from scaleset.github import JobStarted
from scaleset.kube import KubeClient, KubeObject, ObjectKey, RuntimeMetrics
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.listener.handlers import JOB_STARTED_OPERATION, JobEventHandler, JobMessageOutcome

pytestmark = pytest.mark.usefixtures("actions_crds")


def job(runner_name: str, request_id: int = 11) -> JobStarted:
    return JobStarted.model_validate(started_job(runner_name, request_id))


FIELDS_11 = {
    "jobRequestId": 11,
    "jobRepositoryName": "acme/app",
    "jobId": "job-11",
    "workflowRunId": 9011,
    "jobDisplayName": "build",
}


class CachedSide:
    """A handler whose cache is a dict of runner versions the test chose."""

    def __init__(self, backend: KubeBackend, namespace: str) -> None:
        self.sent = SentRequests()
        self.clock = ManualClock()
        self.metrics = RuntimeMetrics(CollectorRegistry())
        self.client = make_client(backend, wrap=self.sent.wrap, clock=self.clock)
        self.cache: dict[ObjectKey, KubeObject] = {}
        self.handler = JobEventHandler(
            self.client,
            namespace,
            clock=self.clock,
            runtime_metrics=self.metrics,
            cached=self.cache.get,
        )

    def requests(self, path_suffix: str) -> list[tuple[str, dict[str, Any]]]:
        return [(m, b) for m, p, b in self.sent.bodies if p.endswith(path_suffix)]

    def conflict_retries(self) -> float:
        value = self.metrics.registry.get_sample_value(
            "scaleset_conflict_retries_total", {"operation": JOB_STARTED_OPERATION}
        )
        return value or 0.0


@asynccontextmanager
async def cached_side(backend: KubeBackend, namespace: str) -> AsyncIterator[CachedSide]:
    side = CachedSide(backend, namespace)
    try:
        yield side
    finally:
        await side.client.close()


# --- the handler with a cache ------------------------------------------------------------------


async def test_L1_a_current_cached_runner_is_promoted_with_one_request(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Pending"})
    async with cached_side(kube_backend, namespace) as side:
        side.cache[runner.key] = runner
        outcome = await drive(side.clock, side.handler.job_started(job("r1")))
    assert outcome is JobMessageOutcome.PROMOTED
    [(method, patch)] = side.requests("/ephemeralrunners/r1/status") + side.requests(
        "/ephemeralrunners/r1"
    )
    assert method == "PATCH"
    assert patch["metadata"] == {"resourceVersion": runner.resource_version}
    assert patch["status"] == {**FIELDS_11, "phase": "Running"}
    stored = await client.get(EPHEMERAL_RUNNER, runner.key)
    assert stored.status.get("phase") == "Running"


async def test_L2_a_stale_cached_runner_costs_a_409_then_a_fresh_read_lands_it(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    old = await make_runner(client, namespace, "r1", {"phase": "Pending"})
    current = await client.patch_merge(
        EPHEMERAL_RUNNER, old.key, {"status": {"ready": True}}, status=True
    )
    async with cached_side(kube_backend, namespace) as side:
        side.cache[old.key] = old  # the watch has not delivered the ready write yet
        outcome = await drive(side.clock, side.handler.job_started(job("r1")))
    assert outcome is JobMessageOutcome.PROMOTED
    assert [m for m, _ in side.requests("/ephemeralrunners/r1")] == ["GET"]
    first, second = side.sent.patches("/ephemeralrunners/r1/status")
    assert first["metadata"] == {"resourceVersion": old.resource_version}  # refused: 409
    assert second["metadata"] == {"resourceVersion": current.resource_version}
    assert side.conflict_retries() == 1
    stored = await client.get(EPHEMERAL_RUNNER, old.key)
    assert stored.status.get("phase") == "Running"
    assert stored.status.get("ready") is True
    assert {key: stored.status.get(key) for key in FIELDS_11} == FIELDS_11


@pytest.mark.parametrize("ending", ["Failed", "deleting"])
async def test_L2_a_runner_that_ended_after_the_cache_saw_it_is_never_running(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, ending: str
) -> None:
    seen = await make_runner(client, namespace, "r1", {"phase": "Pending"})
    if ending == "deleting":
        await client.patch_merge(
            EPHEMERAL_RUNNER, seen.key, {"metadata": {"finalizers": ["test/hold"]}}
        )
        await client.delete(EPHEMERAL_RUNNER, seen.key)
    else:
        await client.patch_merge(
            EPHEMERAL_RUNNER, seen.key, {"status": {"phase": ending}}, status=True
        )
    async with cached_side(kube_backend, namespace) as side:
        side.cache[seen.key] = seen  # the cache still shows it Pending
        outcome = await drive(side.clock, side.handler.job_started(job("r1")))
    assert outcome is JobMessageOutcome.FIELDS_ONLY
    stored = await client.get(EPHEMERAL_RUNNER, seen.key)
    assert stored.status.get("phase") != "Running"
    assert {key: stored.status.get(key) for key in FIELDS_11} == FIELDS_11
    first, second = side.sent.patches("/ephemeralrunners/r1/status")
    assert first["metadata"] == {"resourceVersion": seen.resource_version}  # refused: 409
    assert "metadata" not in second  # decided on the fresh read: job fields only
    if ending == "deleting":
        await client.patch_merge(EPHEMERAL_RUNNER, seen.key, {"metadata": {"finalizers": None}})


async def test_L2_a_cached_runner_that_must_not_run_is_decided_on_a_fresh_read(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Failed"})
    async with cached_side(kube_backend, namespace) as side:
        side.cache[runner.key] = runner
        outcome = await drive(side.clock, side.handler.job_started(job("r1")))
    assert outcome is JobMessageOutcome.FIELDS_ONLY
    methods = [m for m, _ in side.requests("/ephemeralrunners/r1")]
    assert methods == ["GET"]  # the unguarded write is never decided on the cache
    assert side.sent.patches("/ephemeralrunners/r1/status") == [{"status": FIELDS_11}]


async def test_a_runner_missing_from_the_cache_is_read(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    await make_runner(client, namespace, "r1", {"phase": "Pending"})
    async with cached_side(kube_backend, namespace) as side:
        outcome = await drive(side.clock, side.handler.job_started(job("r1")))
    assert outcome is JobMessageOutcome.PROMOTED
    assert [m for m, _ in side.requests("/ephemeralrunners/r1")] == ["GET"]


async def test_a_cached_runner_that_is_gone_is_not_found(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Pending"})
    await client.delete(EPHEMERAL_RUNNER, runner.key)
    async with cached_side(kube_backend, namespace) as side:
        side.cache[runner.key] = runner
        outcome = await drive(side.clock, side.handler.job_started(job("r1")))
    assert outcome is JobMessageOutcome.NOT_FOUND


# --- the listener and its watch ----------------------------------------------------------------


async def cached_at_current_version(world: World, listener: Any, names: list[str]) -> None:
    """Wait until the listener's watch holds every runner of ``names`` at its stored version."""

    async def current() -> bool:
        for name in names:
            stored = await world.runner(name)
            cached = listener.runners.get(ObjectKey(world.namespace, name))
            if cached is None or cached.resource_version != stored.resource_version:
                return False
        return True

    await world.wait(current, "the watch cache to hold every runner")


def runner_gets(world: World) -> list[str]:
    """Paths of single-runner GETs the listener sent (list/watch requests excluded)."""
    return [
        p
        for m, p, _ in world.sent.bodies
        if m == "GET" and "/ephemeralrunners/" in p and not p.endswith("/ephemeralrunners")
    ]


async def test_L1_a_batch_of_job_started_each_lands_exactly_once_with_one_request_each(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    names = [f"r{n:02d}" for n in range(30)]
    async with world_on(kube_backend, client, namespace) as world:
        for name in names:
            await world.add_runner(name)
        running = world.start()
        try:
            await cached_at_current_version(world, running.listener, names)
            before = len(world.sent.bodies)
            jobs = [started_job(name, request_id=100 + n) for n, name in enumerate(names)]
            world.inject_messages(job_message(41, jobs, assigned=30, running=30))

            async def all_running() -> bool:
                phases = [(await world.runner(name)).status.get("phase") for name in names]
                return phases == ["Running"] * len(names)

            await world.wait(all_running, "every runner Running")
            await world.wait(
                lambda: (
                    world.counter("scaleset_listener_messages_total", {"outcome": "handled"}) >= 1
                ),
                "the message acknowledged",
            )
            for n, name in enumerate(names):
                status = (await world.runner(name)).status
                assert status.get("jobRequestId") == 100 + n
                assert status.get("jobId") == f"job-{100 + n}"
            sent = world.sent.bodies[before:]
            for name in names:
                writes = [m for m, p, _ in sent if p.endswith(f"/ephemeralrunners/{name}/status")]
                assert writes == ["PATCH"], name
            assert runner_gets(world) == []  # every first read came from the cache
        finally:
            await running.stop()


async def test_L4_job_events_of_one_runner_keep_their_order_with_the_cache(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """r1: JobStarted then JobCompleted (Running, then the completion). r2: JobCompleted then
    JobStarted in one message — when the JobStarted is handled the cache may still show r2
    without its completion: the locked patch is then refused, and the fresh read writes the job
    fields but not Running (L4); r2 is never Running in any version."""
    async with world_on(kube_backend, client, namespace) as world:
        await world.add_runner("r1")
        await world.add_runner("r2")
        running = world.start()
        try:
            await cached_at_current_version(world, running.listener, ["r1", "r2"])
            r2_seen = (await world.runner("r2")).resource_version
            versions: list[tuple[str, Any]] = []

            async def watch_r2() -> None:
                async with client.watch(
                    EPHEMERAL_RUNNER, resource_version=r2_seen, namespace=namespace
                ) as events:
                    async for event in events:
                        if event.type != "BOOKMARK" and event.object.name == "r2":
                            versions.append(
                                (event.object.resource_version, event.object.status.get("phase"))
                            )

            watcher = asyncio.create_task(watch_r2())
            world.inject_messages(
                job_message(
                    51,
                    [
                        started_job("r1", request_id=21),
                        completed_job("r2", request_id=22),
                        completed_job("r1", request_id=21),
                        started_job("r2", request_id=22),
                    ],
                )
            )

            async def both_done() -> bool:
                r1 = (await world.runner("r1")).status
                r2 = (await world.runner("r2")).status
                return "jobCompletion" in r1 and r2.get("jobId") == "job-22"

            await world.wait(both_done, "both runners' events written")
            r1 = (await world.runner("r1")).status
            r2_final = await world.runner("r2")
            await world.wait(
                lambda: any(rv == r2_final.resource_version for rv, _ in versions),
                "the watch to see r2's final version",
            )
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            assert r1.get("phase") == "Running"
            assert r1["jobCompletion"]["jobId"] == "job-21"
            assert r2_final.status.get("phase") == "Pending"
            assert r2_final.status["jobCompletion"]["jobId"] == "job-22"
            assert "Running" not in [phase for _, phase in versions]
        finally:
            await running.stop()
