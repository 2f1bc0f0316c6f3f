"""JSON null over HTTP: the fake sends `null` where a Go or .NET service may, and the client
reads each as the field's zero value, as ARC's Go client does (issue 10 §3.1)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from tests.integration.github.harness import Harness

from scaleset.embedded.actions import Surface
from scaleset.github import ActionsClient, MessageSessionClient, RunnerScaleSet

COUNTERS = {"totalAssignedJobs", "totalIdleRunners", "totalRegisteredRunners"}


async def scale_set_id(client: ActionsClient) -> int:
    return (await client.create_runner_scale_set(RunnerScaleSet(name="arc", runner_group_id=1))).id


async def test_a_job_completed_with_a_null_runner_name_is_delivered(harness: Harness) -> None:
    """Not silently skipped: the completion of a job reaches the listener, runner name ""."""
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await MessageSessionClient.open(client, set_id, "pod")
    request_id = harness.fake.control.queue_job(["arc"])
    assigned = await session.get_message(0, 1)
    assert assigned is not None
    await session.delete_message(assigned.message_id)
    harness.fake.control.cancel_job(request_id)
    harness.fake.control.faults.send_nulls(
        {"runnerName", "runnerId", "finishTime"}, surface=Surface.MESSAGE_QUEUE
    )

    message = await session.get_message(assigned.message_id, 1)
    assert message is not None
    assert message.skipped == 0
    (completed,) = message.job_completed
    assert (completed.runner_request_id, completed.result) == (request_id, "canceled")
    assert (completed.runner_name, completed.runner_id, completed.finish_time) == ("", 0, None)

    # What the fake put on the wire: the same (unacknowledged) message, read raw.
    raw = await raw_poll(session, after=assigned.message_id)
    (entry,) = json.loads(raw["body"])
    assert (entry["messageType"], entry["runnerName"], entry["runnerId"]) == (
        "JobCompleted",
        None,
        None,
    )


async def test_null_group_name_and_counters_do_not_fail_the_call(harness: Harness) -> None:
    client = harness.client()
    set_id = await scale_set_id(client)
    harness.fake.control.faults.send_nulls({"runnerGroupName", "labels", *COUNTERS})

    by_id = await client.get_runner_scale_set_by_id(set_id)
    by_name = await client.get_runner_scale_set(1, "arc")
    for scale_set in (by_id, by_name):
        assert scale_set is not None
        assert (scale_set.id, scale_set.runner_group_id) == (set_id, 1)
        assert (scale_set.runner_group_name, scale_set.labels) == ("", ())
        assert scale_set.statistics is not None
        assert scale_set.statistics.total_assigned_jobs == 0

    session = await MessageSessionClient.open(client, set_id, "pod")
    assert session.session.statistics is not None
    assert session.session.statistics.total_idle_runners == 0
    assert session.session.runner_scale_set is not None
    assert session.session.runner_scale_set.runner_group_name == ""
    harness.fake.control.queue_job(["arc"])
    message = await session.get_message(0, 1)
    assert message is not None
    assert message.statistics is not None
    assert message.statistics.total_assigned_jobs == 0  # sent as null, though one is assigned
    assert len(message.job_assigned) == 1
    raw = await raw_poll(session, after=0)
    assert raw["statistics"]["totalAssignedJobs"] is None


async def test_a_null_statistics_object_reads_as_none(harness: Harness) -> None:
    client = harness.client()
    set_id = await scale_set_id(client)
    harness.fake.control.faults.send_nulls({"statistics", "RunnerSetting", "createdOn"})
    scale_set = await client.get_runner_scale_set_by_id(set_id)
    assert scale_set is not None
    assert (scale_set.statistics, scale_set.created_on) == (None, None)
    assert scale_set.runner_setting.disable_update is False


async def raw_poll(session: MessageSessionClient, *, after: int) -> dict[str, Any]:
    """The next message as the fake sends it (no client decoding)."""
    current = session.session
    params = {"lastMessageId": str(after)} if after else {}
    async with httpx2.AsyncClient(timeout=10.0) as http:
        response = await http.get(
            current.message_queue_url,
            params=params,
            headers={
                "Authorization": f"Bearer {current.message_queue_access_token.get_secret_value()}",
                "X-ScaleSetMaxCapacity": "1",
            },
        )
    assert response.status_code == 200
    decoded: dict[str, Any] = response.json()
    return decoded
