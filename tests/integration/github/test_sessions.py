"""Message sessions and the queue against the fake (§4, §7 sessions/messages list)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from tests.integration.github.harness import Harness, start_harness
from tests.plugins.secret_guard import SecretRegistry

from scaleset.embedded.actions import FakeSettings, JobDelivery, Surface
from scaleset.github import (
    ActionsClient,
    ActionsServiceError,
    InvalidRequest,
    JobAssigned,
    JobAvailable,
    MessageQueueTokenExpired,
    MessageSessionClient,
    RunnerScaleSet,
    ScaleSetNotFound,
    SessionConflict,
    SessionNotFound,
)


async def scale_set_id(client: ActionsClient, name: str = "arc") -> int:
    return (await client.create_runner_scale_set(RunnerScaleSet(name=name, runner_group_id=1))).id


def queue_events(harness: Harness) -> list[tuple[str, int]]:
    """(method, status) of every message-queue and session request, in order."""
    return [
        (r.method, r.status)
        for r in harness.fake.control.requests
        if r.surface is Surface.MESSAGE_QUEUE or "/sessions" in r.path
    ]


async def test_session_create_refresh_delete(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await client.create_message_session(set_id, "listener-pod")
    assert session.owner_name == "listener-pod"
    assert session.runner_scale_set is not None
    assert session.runner_scale_set.id == set_id
    assert session.statistics is not None
    assert session.message_queue_url.startswith(harness.fake.base_url)
    secret_guard.assert_clean(session)

    with pytest.raises(SessionConflict) as conflict:
        await client.create_message_session(set_id, "second-pod")
    assert conflict.value.status == 409
    assert "already has an active session" in str(conflict.value)
    secret_guard.assert_clean(conflict.value)

    refreshed = await client.refresh_message_session(set_id, session.session_id)
    assert refreshed.session_id == session.session_id
    assert (
        refreshed.message_queue_access_token.get_secret_value()
        != session.message_queue_access_token.get_secret_value()
    )

    await client.delete_message_session(set_id, session.session_id)
    with pytest.raises(SessionNotFound) as gone:
        await client.delete_message_session(set_id, session.session_id)
    assert gone.value.status == 400
    with pytest.raises(SessionNotFound):
        await client.refresh_message_session(set_id, uuid.uuid4())


async def test_session_for_unknown_scale_set(harness: Harness) -> None:
    with pytest.raises(ScaleSetNotFound) as caught:
        await harness.client().create_message_session(999, "pod")
    assert caught.value.status == 404


async def test_messages_flow_and_acknowledgement(harness: Harness) -> None:
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await MessageSessionClient.open(client, set_id, "pod")
    assert await session.get_message(0, 10) is None  # held, then 202

    first_job = harness.fake.control.queue_job(["arc"], display_name="first")
    message = await session.get_message(0, 10)
    assert message is not None
    assert message.statistics is not None
    assert message.statistics.total_assigned_jobs == 1
    assert [type(job) for job in message.jobs] == [JobAssigned]
    assigned = message.job_assigned[0]
    assert (assigned.runner_request_id, assigned.job_display_name) == (first_job, "first")
    assert (assigned.owner_name, assigned.repository_name) == ("acme", "app")

    again = await session.get_message(0, 10)  # not deleted: delivered again
    assert again is not None
    assert again.message_id == message.message_id
    await session.delete_message(message.message_id)

    harness.fake.control.queue_job(["arc"], display_name="second")
    second = await session.get_message(message.message_id, 10)
    assert second is not None
    assert second.message_id > message.message_id
    await session.delete_message(second.message_id)

    polls = harness.fake.control.requests_to("/mq/", "GET")
    assert "lastMessageId" not in dict(polls[0].query)
    assert dict(polls[-1].query)["lastMessageId"] == str(message.message_id)
    assert {p.max_capacity for p in polls} == {"10"}
    assert all(p.accept == "application/json; api-version=6.0-preview" for p in polls)
    assert all("api-version" not in dict(p.query) for p in polls)
    deletes = harness.fake.control.requests_to("/mq/", "DELETE")
    assert [d.status for d in deletes] == [204, 204]
    assert all(d.path.endswith(f"/messages/{m}") for d, m in zip(deletes, [1, 2], strict=True))

    await session.close()
    await session.close()  # once only
    assert harness.fake.control.snapshot().session_of(set_id) is None


async def test_negative_capacity_is_refused_client_side(harness: Harness) -> None:
    client = harness.client()
    session = await MessageSessionClient.open(client, await scale_set_id(client), "pod")
    with pytest.raises(InvalidRequest):
        await session.get_message(0, -1)
    assert harness.fake.control.requests_to("/mq/") == []


async def test_expired_queue_token_is_refreshed_once_then_retried(harness: Harness) -> None:
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await MessageSessionClient.open(client, set_id, "pod")
    old_token = session.session.message_queue_access_token.get_secret_value()
    harness.fake.control.queue_job(["arc"])
    harness.fake.control.expire_message_queue_token(set_id)

    message = await session.get_message(0, 5)
    assert message is not None
    assert session.session.message_queue_access_token.get_secret_value() != old_token
    assert queue_events(harness) == [("POST", 200), ("GET", 401), ("PATCH", 200), ("GET", 200)]

    harness.fake.control.expire_message_queue_token(set_id)
    await session.delete_message(message.message_id)
    assert queue_events(harness)[-3:] == [("DELETE", 401), ("PATCH", 200), ("DELETE", 204)]


async def test_queue_token_expired_twice_is_an_error(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await MessageSessionClient.open(client, set_id, "pod")
    harness.fake.control.faults.fail_next(2, 401, surface=Surface.MESSAGE_QUEUE, method="GET")
    with pytest.raises(MessageQueueTokenExpired) as caught:
        await session.get_message(0, 5)
    assert queue_events(harness) == [("POST", 200), ("GET", 401), ("PATCH", 200), ("GET", 401)]
    secret_guard.assert_clean(caught.value)


async def test_failed_refresh_keeps_the_old_session(harness: Harness) -> None:
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await MessageSessionClient.open(client, set_id, "pod")
    before = session.session
    harness.fake.control.expire_message_queue_token(set_id)
    harness.fake.control.faults.fail_next(1, 400, body="refresh refused", method="PATCH")
    with pytest.raises(ActionsServiceError, match="refresh refused"):
        await session.get_message(0, 5)
    assert session.session is before


async def test_queue_errors_text_plain_and_empty_404(harness: Harness) -> None:
    client = harness.client()
    session = await MessageSessionClient.open(client, await scale_set_id(client), "pod")
    harness.fake.control.faults.fail_next(
        1, 400, body="plain queue failure", surface=Surface.MESSAGE_QUEUE
    )
    with pytest.raises(ActionsServiceError, match="plain queue failure") as plain:
        await session.get_message(0, 5)
    assert plain.value.status == 400

    harness.fake.control.faults.fail_next(1, 404, body=" ", surface=Surface.MESSAGE_QUEUE)
    with pytest.raises(ActionsServiceError) as empty:
        await session.get_message(0, 5)
    assert "404 Not Found" in str(empty.value)
    assert "unknown error" in str(empty.value)


async def test_acknowledging_with_a_non_204_is_an_error(harness: Harness) -> None:
    client = harness.client()
    session = await MessageSessionClient.open(client, await scale_set_id(client), "pod")
    harness.fake.control.faults.fail_next(1, 400, surface=Surface.MESSAGE_QUEUE, method="DELETE")
    with pytest.raises(ActionsServiceError, match="unexpected status code 400"):
        await session.delete_message(1)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"messageId": 1}', "application/json"),
        ("deleted", None),
        ("{}", "application/json; charset=utf-8"),
    ],
)
async def test_delete_message_answered_200_with_a_body_is_an_error(
    harness: Harness, body: str, content_type: str | None
) -> None:
    """§7 "DeleteMessage ... 200 with body -> unexpected status code"; §4.3: expect 204,
    anything else (even 200) is an error. Not a token problem (no refresh), not retried, and the
    message stays unacknowledged: the service delivers it again."""
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await MessageSessionClient.open(client, set_id, "pod")
    harness.fake.control.queue_job(["arc"])
    message = await session.get_message(0, 10)
    assert message is not None
    harness.fake.control.faults.fail_next(
        1,
        200,
        body=body,
        content_type=content_type,
        surface=Surface.MESSAGE_QUEUE,
        method="DELETE",
    )
    with pytest.raises(ActionsServiceError, match="unexpected status code 200") as caught:
        await session.delete_message(message.message_id)
    assert not isinstance(caught.value, MessageQueueTokenExpired)
    assert caught.value.status == 200
    assert harness.sleeps == []
    assert queue_events(harness)[-2:] == [("GET", 200), ("DELETE", 200)]

    again = await session.get_message(0, 10)
    assert again is not None
    assert again.message_id == message.message_id
    await session.delete_message(message.message_id)
    assert queue_events(harness)[-1] == ("DELETE", 204)
    truth = harness.fake.control.snapshot().session_of(set_id)
    assert truth is not None
    assert truth.deleted_messages == 1


@pytest.fixture
async def acquire_harness() -> AsyncIterator[Harness]:
    harness, fake = await start_harness(FakeSettings(job_delivery=JobDelivery.ACQUIRE))
    try:
        yield harness
    finally:
        for client in harness.clients:
            await client.aclose()
        await fake.stop()


async def test_job_available_then_acquire(acquire_harness: Harness) -> None:
    harness = acquire_harness
    client = harness.client()
    set_id = await scale_set_id(client)
    session = await MessageSessionClient.open(client, set_id, "pod")
    request_ids = [harness.fake.control.queue_job(["arc"]) for _ in range(2)]
    message = await session.get_message(0, 5)
    assert message is not None
    available = message.job_available
    assert [job.runner_request_id for job in available] == request_ids
    assert all(isinstance(job, JobAvailable) for job in available)

    acquired = await session.acquire_jobs([job.runner_request_id for job in available])
    assert acquired == tuple(request_ids)
    call = harness.fake.control.requests_to("acquirejobs")[-1]
    assert (call.method, call.status) == ("POST", 200)
    assert dict(call.query) == {"api-version": "6.0-preview"}
    assert await session.acquire_jobs([]) == ()

    harness.fake.control.expire_message_queue_token(set_id)
    assert await session.acquire_jobs(request_ids) == tuple(request_ids)
    assert harness.requests("acquirejobs") == [200, 200, 401, 200]
    assert harness.requests("/sessions/", "PATCH") == [200]
