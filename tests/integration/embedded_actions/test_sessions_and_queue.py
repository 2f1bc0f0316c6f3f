"""Message sessions and the message queue of the fake (spec §4, §6.1)."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest
from tests.integration.embedded_actions.wire_client import ScaleSetClient

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, FakeSettings, JobDelivery, JobState

SETS = "_apis/runtime/runnerscalesets"


async def test_session_carries_everything_a_listener_needs(org: ScaleSetClient) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id, owner="listener-pod")
    body = session.body
    assert body["ownerName"] == "listener-pod"
    assert body["runnerScaleSet"]["id"] == scale_set_id
    assert body["runnerScaleSet"]["name"] == "arc"
    assert body["messageQueueAccessToken"]
    assert body["statistics"] == {
        "totalAvailableJobs": 0,
        "totalAcquiredJobs": 0,
        "totalAssignedJobs": 0,
        "totalRunningJobs": 0,
        "totalRegisteredRunners": 0,
        "totalBusyRunners": 0,
        "totalIdleRunners": 0,
    }
    assert "?sessionId=" in body["messageQueueUrl"]


async def test_zero_session_id_in_the_request_is_ignored(org: ScaleSetClient) -> None:
    scale_set_id = await org.create_scale_set("arc")
    response = await org.admin(
        "POST",
        f"{SETS}/{scale_set_id}/sessions",
        json={"sessionId": "00000000-0000-0000-0000-000000000000", "ownerName": "x"},
    )
    assert response.status_code == 200
    assert response.json()["sessionId"] != "00000000-0000-0000-0000-000000000000"


async def test_one_active_session_per_scale_set(org: ScaleSetClient) -> None:
    scale_set_id = await org.create_scale_set("arc")
    first = await org.open_session(scale_set_id)
    second = await org.admin("POST", f"{SETS}/{scale_set_id}/sessions", json={"ownerName": "b"})
    assert second.status_code == 409
    assert "RunnerScaleSetSessionConflictException" in second.json()["typeName"]
    assert (await first.close()).status_code == 204
    third = await org.admin("POST", f"{SETS}/{scale_set_id}/sessions", json={"ownerName": "c"})
    assert third.status_code == 200


async def test_session_for_unknown_scale_set_is_404(org: ScaleSetClient) -> None:
    response = await org.admin("POST", f"{SETS}/77/sessions", json={"ownerName": "x"})
    assert response.status_code == 404
    assert "RunnerScaleSetNotFoundException" in response.json()["typeName"]


async def test_delete_unknown_session_is_400_and_refresh_unknown_is_404(
    org: ScaleSetClient,
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    await session.close()
    again = await session.close()
    assert again.status_code == 400
    assert "RunnerScaleSetSessionExpiredException" in again.json()["typeName"]
    assert (await session.refresh()).status_code == 404


@pytest.mark.parametrize("settings", [FakeSettings(mq_token_ttl_seconds=100)])
async def test_mq_token_expiry_is_401_and_refresh_issues_a_new_one(
    org: ScaleSetClient, fake: FakeGitHub, clock: ManualClock
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    assert (await session.poll()).status_code == 202
    clock.advance(fake.settings.mq_token_ttl_seconds)
    old_token = session.token
    expired = await session.poll()
    assert expired.status_code == 401
    assert expired.content == b""
    assert (await session.acquire([1])).status_code == 401
    assert (await session.delete(1)).status_code == 401
    refreshed = await session.refresh()
    assert refreshed.status_code == 200
    assert refreshed.json()["sessionId"] == session.body["sessionId"]
    assert refreshed.json()["messageQueueUrl"] == session.queue_url
    assert session.token != old_token
    assert (await session.poll()).status_code == 202
    stale = await org.http.get(session.queue_url, headers={"Authorization": f"Bearer {old_token}"})
    assert stale.status_code == 401


async def test_control_can_expire_the_mq_token(org: ScaleSetClient, fake: FakeGitHub) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    assert fake.control.expire_message_queue_token(scale_set_id)
    assert (await session.poll()).status_code == 401
    await session.refresh()
    assert (await session.poll()).status_code == 202


async def test_admin_token_is_not_a_queue_token(org: ScaleSetClient) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    response = await org.http.get(
        session.queue_url, headers={"Authorization": f"Bearer {org.admin_token}"}
    )
    assert response.status_code == 401


async def test_expired_session_lets_a_new_listener_in(
    org: ScaleSetClient, fake: FakeGitHub, clock: ManualClock
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    old = await org.open_session(scale_set_id)
    blocked = await org.admin("POST", f"{SETS}/{scale_set_id}/sessions", json={"ownerName": "b"})
    assert blocked.status_code == 409
    clock.advance(fake.settings.session_idle_timeout_seconds + 1)
    fake.control.sweep()
    assert (await old.poll()).status_code == 401
    assert (await old.refresh()).status_code == 404
    new = await org.admin("POST", f"{SETS}/{scale_set_id}/sessions", json={"ownerName": "b"})
    assert new.status_code == 200


async def test_control_expire_session(org: ScaleSetClient, fake: FakeGitHub) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    assert fake.control.expire_session(scale_set_id)
    assert not fake.control.expire_session(scale_set_id)
    assert (await session.poll()).status_code == 401


async def test_queue_delivers_job_messages_double_encoded_with_statistics(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    request_id = fake.control.queue_job(["arc"], owner="acme", repository="app")
    response = await session.poll()
    assert response.status_code == 200
    message = response.json()
    assert message["messageType"] == "RunnerScaleSetJobMessages"
    assert isinstance(message["body"], str)
    (job,) = json.loads(message["body"])
    assert job["messageType"] == "JobAssigned"
    assert job["runnerRequestId"] == request_id
    assert job["ownerName"] == "acme"
    assert job["repositoryName"] == "app"
    assert job["requestLabels"] == ["arc"]
    assert job["runnerAssignTime"] == "0001-01-01T00:00:00Z"
    assert message["statistics"]["totalAssignedJobs"] == 1
    assert response.headers["ActivityId"]


async def test_poll_without_messages_is_202_after_the_hold(org: ScaleSetClient) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    response = await session.poll()
    assert response.status_code == 202
    assert response.content == b""


async def test_a_held_poll_returns_as_soon_as_a_message_exists(
    clock: ManualClock, http: httpx2.AsyncClient
) -> None:
    async with FakeGitHub(clock=clock, poll_hold_seconds=60.0) as fake:
        fake.add_pat("ghp_x")
        client = await ScaleSetClient.register(http, fake, fake.config_url("acme"), pat="ghp_x")
        session = await client.open_session(await client.create_scale_set("arc"))
        poll = asyncio.ensure_future(session.poll())
        await fake.control.wait_for(lambda truth: truth.sessions[0].polling, what="poll held")
        fake.control.queue_job(["arc"])
        response = await asyncio.wait_for(poll, timeout=30)
        assert response.status_code == 200


async def test_messages_are_redelivered_until_deleted(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    fake.control.queue_job(["arc"])
    first = (await session.poll(last_message_id=0)).json()
    again = (await session.poll(last_message_id=0)).json()
    assert again == first
    assert (await session.poll(last_message_id=first["messageId"])).status_code == 202
    assert (await session.delete(first["messageId"])).status_code == 204
    assert (await session.poll(last_message_id=0)).status_code == 202
    assert (await session.delete(first["messageId"])).status_code == 204


async def test_message_ids_increase_and_old_unacked_ones_come_first(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    fake.control.queue_job(["arc"])
    first = (await session.poll()).json()
    fake.control.queue_job(["arc"])
    second = (await session.poll(last_message_id=first["messageId"])).json()
    assert second["messageId"] > first["messageId"]
    assert (await session.poll(last_message_id=0)).json()["messageId"] == first["messageId"]
    await session.delete(first["messageId"])
    assert (await session.poll(last_message_id=0)).json()["messageId"] == second["messageId"]


async def test_at_most_50_job_messages_per_message(org: ScaleSetClient, fake: FakeGitHub) -> None:
    session = await org.open_session(await org.create_scale_set("arc"), owner="l")
    requests = [fake.control.queue_job(["arc"]) for _ in range(120)]
    sizes = []
    while len(session.seen) < 120:
        message, jobs = await session.next_batch(capacity=1000)
        sizes.append(len(jobs))
        assert message["statistics"]["totalAssignedJobs"] == 120
    assert sizes == [50, 50, 20]
    assert [job["runnerRequestId"] for job in session.seen] == requests


async def test_capacity_header_limits_assignment(org: ScaleSetClient, fake: FakeGitHub) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    assert (await session.poll(capacity=2)).status_code == 202
    for _ in range(5):
        fake.control.queue_job(["arc"])
    message, jobs = await session.next_batch(capacity=2)
    assert len(jobs) == 2
    assert message["statistics"]["totalAssignedJobs"] == 2
    assert len(fake.control.snapshot().jobs_in(JobState.QUEUED)) == 3
    message, jobs = await session.next_batch(capacity=4)
    assert len(jobs) == 2
    assert message["statistics"]["totalAssignedJobs"] == 4


@pytest.mark.parametrize("capacity", ["-1", "lots"])
async def test_bad_capacity_header_is_400(org: ScaleSetClient, capacity: str) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    response = await org.http.get(
        session.queue_url,
        headers={"Authorization": f"Bearer {session.token}", "X-ScaleSetMaxCapacity": capacity},
    )
    assert response.status_code == 400


async def test_jobs_are_matched_by_labels_and_scope(org: ScaleSetClient, fake: FakeGitHub) -> None:
    linux = await org.create_scale_set("linux", labels=["linux", "x64"])
    gpu = await org.create_scale_set("gpu", labels=["gpu"])
    both = fake.control.queue_job(["linux", "X64"])
    graphics = fake.control.queue_job(["gpu"])
    nowhere = fake.control.queue_job(["arm"])
    other_org = fake.control.queue_job(["gpu"], owner="someone-else")
    truth = fake.control.snapshot()
    assert truth.job(both).scale_set_id == linux
    assert truth.job(graphics).scale_set_id == gpu
    assert truth.job(nowhere).state is JobState.QUEUED
    assert truth.job(other_org).state is JobState.QUEUED


async def test_events_while_no_session_are_not_queued_but_counted(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    fake.control.queue_job(["arc"])
    session = await org.open_session(scale_set_id)
    assert session.body["statistics"]["totalAssignedJobs"] == 1
    assert (await session.poll()).status_code == 202


async def test_cancelling_a_waiting_job_completes_it(org: ScaleSetClient, fake: FakeGitHub) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    request_id = fake.control.queue_job(["arc"])
    fake.control.cancel_job(request_id)
    message, jobs = await session.next_batch()
    assert [j["messageType"] for j in jobs] == ["JobAssigned", "JobCompleted"]
    assert jobs[1]["result"] == "canceled"
    assert jobs[1]["runnerAssignTime"] == "0001-01-01T00:00:00Z"
    assert message["statistics"]["totalAssignedJobs"] == 0
    assert not fake.control.cancel_job(request_id)


@pytest.mark.parametrize("settings", [FakeSettings(job_delivery=JobDelivery.ACQUIRE)])
async def test_acquire_delivery(org: ScaleSetClient, fake: FakeGitHub) -> None:
    scale_set_id = await org.create_scale_set("arc")
    session = await org.open_session(scale_set_id)
    first = fake.control.queue_job(["arc"])
    second = fake.control.queue_job(["arc"])
    message, jobs = await session.next_batch()
    assert [j["messageType"] for j in jobs] == ["JobAvailable", "JobAvailable"]
    assert jobs[0]["acquireJobUrl"]
    assert message["statistics"]["totalAvailableJobs"] == 2
    assert message["statistics"]["totalAssignedJobs"] == 0
    acquired = await session.acquire([first, 999])
    assert acquired.status_code == 200
    assert acquired.json() == {"count": 1, "value": [first]}
    assert (await session.acquire([])).json() == {"count": 0, "value": []}
    message, jobs = await session.next_batch()
    assert [(j["messageType"], j["runnerRequestId"]) for j in jobs] == [("JobAssigned", first)]
    stats = message["statistics"]
    assert stats["totalAvailableJobs"] == 1
    assert stats["totalAcquiredJobs"] == 1
    assert stats["totalAssignedJobs"] == 1
    assert fake.control.snapshot().job(second).state is JobState.AVAILABLE


async def test_acquire_needs_the_sessions_own_scale_set(org: ScaleSetClient) -> None:
    first = await org.open_session(await org.create_scale_set("a"))
    other_set = await org.create_scale_set("b")
    response = await org.http.post(
        org.tenant_url + f"{SETS}/{other_set}/acquirejobs",
        params={"api-version": "6.0-preview"},
        headers={"Authorization": f"Bearer {first.token}"},
        json=[1],
    )
    assert response.status_code == 401


async def test_acquire_body_must_be_an_array_of_ids(org: ScaleSetClient) -> None:
    session = await org.open_session(await org.create_scale_set("a"))
    response = await org.http.post(
        org.tenant_url + f"{SETS}/{session.scale_set_id}/acquirejobs",
        params={"api-version": "6.0-preview"},
        headers={"Authorization": f"Bearer {session.token}"},
        json={"ids": [1]},
    )
    assert response.status_code == 400
