"""JobStarted and JobCompleted against the API server, on both backends (L1, L2, L4).

The seed race is made deterministic with a request hook: between the listener's read of the
runner and its locked patch, another writer ends the runner. The locked patch is refused (409),
the listener reads again, decides again, and writes only the job fields — the runner stays
terminal and is never Running, not even for one resourceVersion (a watch records every version).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from prometheus_client import CollectorRegistry
from tests.integration.listener.runners import SentRequests, drive, make_runner, phase_of
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.devtools.transports import RequestHook
from scaleset.github import JobCompleted, JobStarted
from scaleset.kube import KubeClient, ObjectKey, RuntimeMetrics
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.listener.handlers import JOB_STARTED_OPERATION, JobEventHandler, JobMessageOutcome

pytestmark = pytest.mark.usefixtures("actions_crds")

STATUS_PATH = "/ephemeralrunners/r1/status"


def started(runner_name: str = "r1", **changes: Any) -> JobStarted:
    body: dict[str, Any] = {
        "messageType": "JobStarted",
        "runnerRequestId": 4711,
        "repositoryName": "app",
        "ownerName": "acme",
        "jobId": "5f0c6f0e-job",
        "jobWorkflowRef": "acme/app/.github/workflows/ci.yml@refs/heads/main",
        "jobDisplayName": "build",
        "workflowRunId": 9001,
        "eventName": "push",
        "runnerId": 7,
        "runnerName": runner_name,
    }
    body.update(changes)
    return JobStarted.model_validate(body)


def completed(runner_name: str = "r1", **changes: Any) -> JobCompleted:
    body: dict[str, Any] = {
        "messageType": "JobCompleted",
        "runnerRequestId": 4711,
        "repositoryName": "app",
        "ownerName": "acme",
        "jobId": "5f0c6f0e-job",
        "workflowRunId": 9001,
        "result": "succeeded",
        "runnerId": 7,
        "runnerName": runner_name,
        "finishTime": "2027-01-15T08:05:00Z",
    }
    body.update(changes)
    return JobCompleted.model_validate(body)


JOB_FIELDS = {
    "jobRequestId": 4711,
    "jobRepositoryName": "acme/app",
    "jobId": "5f0c6f0e-job",
    "workflowRunId": 9001,
    "jobWorkflowRef": "acme/app/.github/workflows/ci.yml@refs/heads/main",
    "jobDisplayName": "build",
}


class Setup:
    def __init__(self, backend: KubeBackend, namespace: str, hooks: list[RequestHook]) -> None:
        self.sent = SentRequests()
        self.clock = ManualClock()
        self.metrics = RuntimeMetrics(CollectorRegistry())
        self.client = make_client(backend, hooks=hooks, wrap=self.sent.wrap, clock=self.clock)
        self.handler = JobEventHandler(
            self.client, namespace, clock=self.clock, runtime_metrics=self.metrics
        )

    def counted(self, name: str) -> float:
        value = self.metrics.registry.get_sample_value(name, {"operation": JOB_STARTED_OPERATION})
        return value or 0.0


@asynccontextmanager
async def listener_side(
    backend: KubeBackend, namespace: str, *hooks: RequestHook
) -> AsyncIterator[Setup]:
    setup = Setup(backend, namespace, list(hooks))
    try:
        yield setup
    finally:
        await setup.client.close()


@asynccontextmanager
async def every_version(
    client: KubeClient, namespace: str, from_version: str
) -> AsyncIterator[list[tuple[str, Any]]]:
    """(resourceVersion, phase) of every version of the namespace's runners after ``from``."""
    seen: list[tuple[str, Any]] = []

    async def consume() -> None:
        async with client.watch(
            EPHEMERAL_RUNNER, resource_version=from_version, namespace=namespace
        ) as events:
            async for event in events:
                if event.type != "BOOKMARK":
                    seen.append((event.object.resource_version, event.object.status.get("phase")))

    task = asyncio.create_task(consume())
    try:
        yield seen
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# --- JobStarted --------------------------------------------------------------------------------


async def test_L1_job_started_promotes_with_the_job_fields_in_one_locked_patch(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Pending", "ready": True})
    async with listener_side(kube_backend, namespace) as side:
        outcome = await drive(side.clock, side.handler.job_started(started()))
    assert outcome is JobMessageOutcome.PROMOTED
    [patch] = side.sent.patches(STATUS_PATH)
    assert patch["metadata"] == {"resourceVersion": runner.resource_version}
    assert patch["status"] == {**JOB_FIELDS, "phase": "Running"}
    stored = await client.get(EPHEMERAL_RUNNER, runner.key)
    assert stored.status.get("phase") == "Running"
    assert stored.status.get("ready") is True
    assert {key: stored.status.get(key) for key in JOB_FIELDS} == JOB_FIELDS


@pytest.mark.parametrize("terminal", ["Failed", "Succeeded", "Outdated"])
async def test_L2_seed_race_a_runner_ended_between_read_and_patch_stays_terminal(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, terminal: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Pending"})

    async def end_it(_request: httpx2.Request) -> None:
        await client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"status": {"phase": terminal}}, status=True
        )

    race = RequestHook("PATCH", STATUS_PATH + "$", end_it, times=1)
    async with every_version(client, namespace, runner.resource_version) as versions:
        async with listener_side(kube_backend, namespace, race) as side:
            outcome = await drive(side.clock, side.handler.job_started(started()))
        final = await client.get(EPHEMERAL_RUNNER, runner.key)
        await eventually(
            lambda: any(rv == final.resource_version for rv, _ in versions),
            what="the watch to see the final version",
        )
    assert race.fired == 1
    assert outcome is JobMessageOutcome.FIELDS_ONLY
    assert final.status.get("phase") == terminal
    assert {key: final.status.get(key) for key in JOB_FIELDS} == JOB_FIELDS
    assert "Running" not in [phase for _, phase in versions]
    first, second = side.sent.patches(STATUS_PATH)
    assert first["metadata"] == {"resourceVersion": runner.resource_version}  # promoting: locked
    assert first["status"]["phase"] == "Running"
    assert "metadata" not in second  # not promoting: no precondition
    assert second["status"] == JOB_FIELDS
    assert side.counted("scaleset_conflict_retries_total") == 1


@pytest.mark.parametrize(
    "status",
    [
        {"phase": "Failed"},
        {"phase": "Succeeded"},
        {"phase": "Outdated"},
        {"phase": "Pending", "jobCompletion": {"result": "succeeded", "jobId": "5f0c6f0e-job"}},
    ],
    ids=["Failed", "Succeeded", "Outdated", "completed"],
)
async def test_L2_a_runner_that_must_not_run_gets_the_job_fields_without_a_precondition(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, status: dict[str, Any]
) -> None:
    runner = await make_runner(client, namespace, "r1", status)
    async with listener_side(kube_backend, namespace) as side:
        outcome = await drive(side.clock, side.handler.job_started(started()))
    assert outcome is JobMessageOutcome.FIELDS_ONLY
    [patch] = side.sent.patches(STATUS_PATH)
    assert patch == {"status": JOB_FIELDS}
    stored = await client.get(EPHEMERAL_RUNNER, runner.key)
    assert stored.status.get("phase") == status["phase"]


async def test_L1_a_runner_being_deleted_is_not_promoted(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Pending"})
    await client.patch_merge(
        EPHEMERAL_RUNNER, runner.key, {"metadata": {"finalizers": ["test/hold"]}}
    )
    await client.delete(EPHEMERAL_RUNNER, runner.key)
    try:
        async with listener_side(kube_backend, namespace) as side:
            outcome = await drive(side.clock, side.handler.job_started(started()))
        assert outcome is JobMessageOutcome.FIELDS_ONLY
        assert side.sent.patches(STATUS_PATH) == [{"status": JOB_FIELDS}]
        assert await phase_of(client, namespace, "r1") == "Pending"
    finally:
        await client.patch_merge(EPHEMERAL_RUNNER, runner.key, {"metadata": {"finalizers": None}})


async def test_L2_conflicts_that_never_end_defer_the_phase_and_write_the_job_fields(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Pending"})
    bumps = 0

    async def bump(_request: httpx2.Request) -> None:
        nonlocal bumps
        bumps += 1
        await client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"metadata": {"labels": {"bump": str(bumps)}}}
        )

    rival = RequestHook("PATCH", STATUS_PATH + "$", bump, times=5)
    async with listener_side(kube_backend, namespace, rival) as side:
        outcome = await drive(side.clock, side.handler.job_started(started()))
        assert outcome is JobMessageOutcome.DEFERRED
        assert rival.fired == 5
        assert side.counted("scaleset_conflict_retries_exhausted_total") == 1
        patches = side.sent.patches(STATUS_PATH)
        assert len(patches) == 6
        assert all(p["metadata"]["resourceVersion"] for p in patches[:5])
        assert patches[5] == {"status": JOB_FIELDS}  # unguarded, no phase
        stored = await client.get(EPHEMERAL_RUNNER, runner.key)
        assert stored.status.get("phase") == "Pending"
        assert stored.status.get("jobId") == JOB_FIELDS["jobId"]
        assert set(side.handler.deferred) == {"r1"}

        # later, with the rival gone, the phase is written
        retried = await drive(side.clock, side.handler.retry_deferred())
    assert retried == {"r1": JobMessageOutcome.PROMOTED}
    assert side.handler.deferred == {}
    assert await phase_of(client, namespace, "r1") == "Running"


async def test_a_deferred_phase_is_dropped_once_the_job_completed(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Pending"})

    bumps = iter(range(1, 100))

    async def bump(_request: httpx2.Request) -> None:
        await client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"metadata": {"labels": {"bump": str(next(bumps))}}}
        )

    rival = RequestHook("PATCH", STATUS_PATH + "$", bump, times=5)
    async with listener_side(kube_backend, namespace, rival) as side:
        assert (
            await drive(side.clock, side.handler.job_started(started()))
            is JobMessageOutcome.DEFERRED
        )
        assert await side.handler.job_completed(completed()) is JobMessageOutcome.RECORDED
        assert side.handler.deferred == {}
        assert await drive(side.clock, side.handler.retry_deferred()) == {}
    assert await phase_of(client, namespace, "r1") == "Pending"


async def test_job_started_for_a_missing_runner_is_harmless(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with listener_side(kube_backend, namespace) as side:
        outcome = await drive(side.clock, side.handler.job_started(started("gone")))
        skipped = await side.handler.job_started(started(""))
    assert outcome is JobMessageOutcome.NOT_FOUND
    assert skipped is JobMessageOutcome.SKIPPED
    assert [method for method, _, _ in side.sent.bodies] == ["GET"]  # the read; no write


async def test_a_repeated_job_started_writes_nothing(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    await make_runner(client, namespace, "r1", {"phase": "Pending"})
    async with listener_side(kube_backend, namespace) as side:
        first = await drive(side.clock, side.handler.job_started(started()))
        second = await drive(side.clock, side.handler.job_started(started()))
    assert (first, second) == (JobMessageOutcome.PROMOTED, JobMessageOutcome.UNCHANGED)
    assert len(side.sent.patches(STATUS_PATH)) == 1


# --- JobCompleted ------------------------------------------------------------------------------


async def test_L4_job_completed_is_recorded_on_the_exact_runner(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    runner = await make_runner(client, namespace, "r1", {"phase": "Running", "jobId": "x"})
    other = await make_runner(client, namespace, "r2", {"phase": "Pending"})
    async with listener_side(kube_backend, namespace) as side:
        assert await side.handler.job_completed(completed()) is JobMessageOutcome.RECORDED
        assert await side.handler.job_completed(completed()) is JobMessageOutcome.RECORDED  # repeat
    stored = await client.get(EPHEMERAL_RUNNER, runner.key)
    assert stored.status.get("jobCompletion") == {
        "result": "succeeded",
        "runnerId": 7,
        "runnerName": "r1",
        "jobId": "5f0c6f0e-job",
        "workflowRunId": 9001,
        "finishTime": "2027-01-15T08:05:00Z",
    }
    assert stored.status.get("phase") == "Running"
    assert "jobCompletion" not in (await client.get(EPHEMERAL_RUNNER, other.key)).status


async def test_L4_a_job_completed_without_a_result_is_recorded(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """An empty ``result`` (or job id) is left out of the patch: the real kube-apiserver refuses
    ``""`` in a custom resource's string field (422), and the completion would never land."""
    runner = await make_runner(client, namespace, "r1", {"phase": "Running", "jobId": "x"})
    async with listener_side(kube_backend, namespace) as side:
        outcome = await side.handler.job_completed(completed(result="", jobId=""))
        assert outcome is JobMessageOutcome.RECORDED
    stored = await client.get(EPHEMERAL_RUNNER, runner.key)
    assert stored.status.get("jobCompletion") == {
        "runnerId": 7,
        "runnerName": "r1",
        "workflowRunId": 9001,
        "finishTime": "2027-01-15T08:05:00Z",
    }


async def test_L4_a_reassigned_job_touches_no_runner(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    await make_runner(client, namespace, "r1", {"phase": "Pending"})
    async with listener_side(kube_backend, namespace) as side:
        for _ in range(3):  # assigned, cancelled with no runner, reassigned: up to 3 times
            outcome = await side.handler.job_completed(
                completed("", result="canceled", runnerId=0, finishTime=None)
            )
            assert outcome is JobMessageOutcome.SKIPPED
    assert side.sent.bodies == []
    runner = await client.get(EPHEMERAL_RUNNER, ObjectKey(namespace, "r1"))
    assert "jobCompletion" not in runner.status


async def test_L4_job_completed_for_a_missing_runner_is_harmless(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with listener_side(kube_backend, namespace) as side:
        assert await side.handler.job_completed(completed("gone")) is JobMessageOutcome.NOT_FOUND


async def test_L4_a_job_started_after_its_completion_writes_no_running(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    await make_runner(client, namespace, "r1", {"phase": "Pending"})
    async with listener_side(kube_backend, namespace) as side:
        assert await side.handler.job_completed(completed()) is JobMessageOutcome.RECORDED
        outcome = await drive(side.clock, side.handler.job_started(started()))
    assert outcome is JobMessageOutcome.FIELDS_ONLY
    assert await phase_of(client, namespace, "r1") == "Pending"
