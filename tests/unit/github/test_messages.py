"""Message decoding: double-encoded bodies, unknown and malformed entries skipped (§4.2, §4.5)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest

from scaleset.github.messages import decode_job_batch, decode_message
from scaleset.github.models import (
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobStarted,
    RawMessage,
)

STATS = {
    "totalAvailableJobs": 0,
    "totalAcquiredJobs": 1,
    "totalAssignedJobs": 2,
    "totalRunningJobs": 1,
    "totalRegisteredRunners": 2,
    "totalBusyRunners": 1,
    "totalIdleRunners": 1,
}
BASE = {
    "runnerRequestId": 101,
    "repositoryName": "widgets",
    "ownerName": "acme",
    "jobId": "5c4a9b5e-0000-4000-8000-000000000001",
    "jobWorkflowRef": "acme/widgets/.github/workflows/ci.yml@refs/heads/main",
    "jobDisplayName": "build",
    "workflowRunId": 9,
    "eventName": "push",
    "requestLabels": ["self-hosted", "arc"],
    "queueTime": "2026-01-02T03:04:05Z",
    "scaleSetAssignTime": "0001-01-01T00:00:00Z",
}


def raw(body: object, message_type: str = "RunnerScaleSetJobMessages") -> RawMessage:
    encoded = body if isinstance(body, str) else json.dumps(body)
    return RawMessage.model_validate_json(
        json.dumps(
            {"messageId": 17, "messageType": message_type, "body": encoded, "statistics": STATS}
        )
    )


def test_double_encoded_batch_of_every_type_keeps_order() -> None:
    batch = [
        {**BASE, "messageType": "JobAvailable", "acquireJobUrl": "https://x/acquire"},
        {**BASE, "messageType": "JobAssigned"},
        {**BASE, "messageType": "JobStarted", "runnerId": 3, "runnerName": "arc-runner-x"},
        {
            **BASE,
            "messageType": "JobCompleted",
            "result": "success",
            "runnerId": 3,
            "runnerName": "arc-runner-x",
        },
    ]
    message = decode_message(raw(batch))
    assert message.message_id == 17
    assert message.statistics is not None
    assert message.statistics.total_assigned_jobs == 2
    assert [type(job) for job in message.jobs] == [
        JobAvailable,
        JobAssigned,
        JobStarted,
        JobCompleted,
    ]
    assert message.job_available[0].acquire_job_url == "https://x/acquire"
    started = message.job_started[0]
    assert (started.runner_id, started.runner_name, started.runner_request_id) == (
        3,
        "arc-runner-x",
        101,
    )
    assert message.job_completed[0].result == "success"
    assert started.request_labels == ("self-hosted", "arc")
    assert started.queue_time == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert started.scale_set_assign_time is None  # Go's zero time means unset
    assert (message.unknown, message.malformed) == (0, 0)


@pytest.mark.parametrize("body", ["", None])
def test_empty_body_means_no_jobs(body: str | None) -> None:
    message = decode_message(
        RawMessage(message_id=3, message_type="RunnerScaleSetJobMessages", body=body)
    )
    assert message.jobs == ()
    assert (message.unknown, message.malformed) == (0, 0)


def test_unknown_job_types_are_counted_and_logged_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    batch = [{**BASE, "messageType": "JobTeleported", "secretish": "payload-not-logged"}]
    batch.append({**BASE, "messageType": "JobAssigned"})
    with caplog.at_level(logging.DEBUG, logger="scaleset.github.messages"):
        message = decode_message(raw(batch))
    assert [type(job) for job in message.jobs] == [JobAssigned]
    assert (message.unknown, message.malformed) == (1, 0)
    [record] = [r for r in caplog.records if "JobTeleported" in r.getMessage()]
    assert record.levelno == logging.DEBUG  # a new type is news, not trouble (L8)
    assert "payload-not-logged" not in caplog.text


def test_malformed_entries_are_skipped_without_quoting_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    batch: list[object] = [
        {**BASE, "messageType": "JobStarted", "runnerId": "not-a-number-secret"},
        "just a string",
        {"no": "type"},
        {**BASE, "messageType": "JobCompleted", "result": "failed"},
    ]
    with caplog.at_level(logging.DEBUG, logger="scaleset.github.messages"):
        message = decode_message(raw(batch))
    assert [type(job) for job in message.jobs] == [JobCompleted]
    assert (message.unknown, message.malformed) == (0, 3)
    assert "runnerId" in caplog.text
    assert "not-a-number-secret" not in caplog.text


@pytest.mark.parametrize("body", ["{not json", '{"an": "object"}'])
def test_undecodable_batch_yields_no_jobs_but_keeps_the_id(body: str) -> None:
    message = decode_message(raw(body))
    assert (message.message_id, message.jobs, message.malformed) == (17, (), 1)


def test_unsupported_outer_type_yields_an_empty_message(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scaleset.github.messages"):
        message = decode_message(raw([{**BASE, "messageType": "JobAssigned"}], "SomethingNew"))
    assert (message.message_id, message.message_type, message.jobs) == (17, "SomethingNew", ())
    assert "unsupported type" in caplog.text


def test_decode_job_batch_directly() -> None:
    jobs, unknown, malformed = decode_job_batch(json.dumps([{"messageType": "JobAssigned"}]))
    assert len(jobs) == 1
    assert (unknown, malformed) == (0, 0)
    assert jobs[0].runner_request_id == 0  # github.com sends 0; never assumed non-zero


def test_a_job_completed_with_null_members_is_delivered_not_skipped() -> None:
    """Go leaves the zero value for null: the completion is a job event, runner name ""."""
    batch = [
        {
            **BASE,
            "messageType": "JobCompleted",
            "runnerName": None,
            "runnerId": None,
            "result": "succeeded",
            "finishTime": None,
        }
    ]
    message = decode_message(raw(batch))
    assert (message.unknown, message.malformed) == (0, 0)
    (completed,) = message.job_completed
    assert (completed.runner_request_id, completed.runner_name, completed.runner_id) == (101, "", 0)
    assert (completed.result, completed.finish_time) == ("succeeded", None)
