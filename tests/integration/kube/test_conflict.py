"""retry_on_conflict against a deterministic race (lifecycle.md L2): read, decide again, write
with the lock; exhaustion is reported and nothing is written."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import ephemeral_runner, make_client

from scaleset.devtools.transports import RequestHook
from scaleset.kube.client import KubeClient
from scaleset.kube.conflict import retry_on_conflict
from scaleset.kube.errors import ConflictRetriesExhausted
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER

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
