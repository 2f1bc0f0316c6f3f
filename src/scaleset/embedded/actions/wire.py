"""JSON shapes the fake sends, built as plain dicts from its records (spec §2.4, §4.2, §4.5).

Written independently of ``scaleset.github``'s models on purpose: the client and the fake are two
readings of the same spec and check each other.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from scaleset.embedded.actions.errors import ActionsError, GitHubApiError
from scaleset.embedded.actions.model import (
    JobEvent,
    JobEventKind,
    Label,
    Message,
    Runner,
    RunnerGroup,
    ScaleSet,
    ScaleSetSession,
)
from scaleset.embedded.actions.rules import Statistics

GO_ZERO_TIME = "0001-01-01T00:00:00Z"
"""What Go emits for an unset ``time.Time`` (spec §2.4, §4.5)."""
MESSAGE_TYPE = "RunnerScaleSetJobMessages"
GITHUB_DOCS_URL = "https://docs.github.com/rest"


def rfc3339(timestamp: float | None) -> str:
    """RFC 3339 UTC with a ``Z``; Go's zero time when unset."""
    if timestamp is None:
        return GO_ZERO_TIME
    moment = dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def statistics_json(stats: Statistics) -> dict[str, int]:
    return {
        "totalAvailableJobs": stats.total_available_jobs,
        "totalAcquiredJobs": stats.total_acquired_jobs,
        "totalAssignedJobs": stats.total_assigned_jobs,
        "totalRunningJobs": stats.total_running_jobs,
        "totalRegisteredRunners": stats.total_registered_runners,
        "totalBusyRunners": stats.total_busy_runners,
        "totalIdleRunners": stats.total_idle_runners,
    }


def labels_json(labels: list[Label]) -> list[dict[str, str]]:
    return [{"type": label.type, "name": label.name} for label in labels]


def scale_set_json(
    scale_set: ScaleSet, group: RunnerGroup, tenant_url: str, stats: Statistics
) -> dict[str, Any]:
    return {
        "id": scale_set.id,
        "name": scale_set.name,
        "runnerGroupId": group.id,
        "runnerGroupName": group.name,
        "labels": labels_json(scale_set.labels),
        "RunnerSetting": dict(scale_set.runner_setting),
        "createdOn": rfc3339(scale_set.created_on),
        "runnerJitConfigUrl": (
            f"{tenant_url}_apis/runtime/runnerscalesets/{scale_set.id}/generatejitconfig"
        ),
        "statistics": statistics_json(stats),
    }


def runner_group_json(group: RunnerGroup, size: int) -> dict[str, Any]:
    return {"id": group.id, "name": group.name, "size": size, "isDefaultGroup": group.is_default}


def runner_reference_json(runner: Runner) -> dict[str, Any]:
    return {"id": runner.id, "name": runner.name, "runnerScaleSetId": runner.scale_set_id}


def session_json(
    session: ScaleSetSession,
    scale_set: dict[str, Any],
    message_queue_url: str,
    stats: Statistics,
) -> dict[str, Any]:
    return {
        "sessionId": session.id,
        "ownerName": session.owner_name,
        "runnerScaleSet": scale_set,
        "messageQueueUrl": message_queue_url,
        "messageQueueAccessToken": session.mq_token,
        "statistics": statistics_json(stats),
    }


def job_event_json(event: JobEvent) -> dict[str, Any]:
    body: dict[str, Any] = {
        "messageType": event.kind.value,
        "runnerRequestId": event.runner_request_id,
        "repositoryName": event.repository,
        "ownerName": event.owner,
        "jobId": event.job_id,
        "jobWorkflowRef": event.workflow_ref,
        "jobDisplayName": event.display_name,
        "workflowRunId": event.workflow_run_id,
        "eventName": event.event_name,
        "requestLabels": list(event.labels),
        "queueTime": rfc3339(event.queue_time),
        "scaleSetAssignTime": rfc3339(event.scale_set_assign_time),
        "runnerAssignTime": rfc3339(event.runner_assign_time),
        "finishTime": rfc3339(event.finish_time),
    }
    if event.kind is JobEventKind.AVAILABLE:
        body["acquireJobUrl"] = f"_apis/runtime/runnerscalesets/{event.scale_set_id}/acquirejobs"
    if event.kind in (JobEventKind.STARTED, JobEventKind.COMPLETED):
        body["runnerId"] = event.runner_id
        body["runnerName"] = event.runner_name
    if event.kind is JobEventKind.COMPLETED:
        body["result"] = event.result
    return body


def message_body(message: Message) -> str:
    """The double-encoded ``body``: a string holding the JSON array of job messages."""
    return json.dumps([job_event_json(event) for event in message.events])


def message_json(message: Message, stats: Statistics) -> dict[str, Any]:
    return {
        "messageId": message.id,
        "messageType": MESSAGE_TYPE,
        "body": message_body(message),
        "statistics": statistics_json(stats),
    }


def rest_runner_json(
    runner: Runner, scale_set: ScaleSet | None, group_id: int, label_ids: dict[str, int]
) -> dict[str, Any]:
    """A runner as GitHub's public REST API lists it (``GET /orgs/{org}/actions/runners``)."""
    labels = scale_set.labels if scale_set is not None else []
    return {
        "id": runner.id,
        "name": runner.name,
        "os": "Linux",
        "status": "online" if runner.session is not None else "offline",
        "busy": runner.busy,
        "ephemeral": True,
        "runner_group_id": group_id,
        "labels": [
            {"id": label_ids[label.name.casefold()], "name": label.name, "type": "read-only"}
            for label in labels
        ],
    }


def actions_error_json(error: ActionsError) -> dict[str, Any]:
    return {
        "$id": "1",
        "innerException": None,
        "message": error.message,
        "typeName": error.type_name,
        "typeKey": error.type_name.rsplit(".", 1)[-1],
        "errorCode": 0,
        "eventId": 3000,
    }


def github_error_json(error: GitHubApiError) -> dict[str, Any]:
    return {"message": error.message, "documentation_url": GITHUB_DOCS_URL}
