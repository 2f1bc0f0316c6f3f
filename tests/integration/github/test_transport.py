"""Retries, Retry-After, lost responses, pool timeouts, BOM, metrics and limiting over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest
from tests.integration.github.harness import Harness

from scaleset.embedded.actions import Surface
from scaleset.github import (
    ActionsClient,
    ActionsServiceError,
    CallKind,
    DeadlineExceeded,
    GitHubApiError,
    MessageSessionClient,
    RequestLimiter,
    ResponseLost,
    RetriesExhausted,
    RetryPolicy,
    RunnerExists,
    RunnerNotFound,
    RunnerScaleSet,
    SessionConflict,
    SessionNotFound,
    Timeouts,
)

SCALE_SETS = "_apis/runtime/runnerscalesets"


async def authenticated(harness: Harness, **options: Any) -> tuple[ActionsClient, int]:
    client = harness.client(**options)
    created = await client.create_runner_scale_set(RunnerScaleSet(name="arc", runner_group_id=1))
    harness.fake.control.clear_requests()
    return client, created.id


async def test_503_is_retried_max_retries_plus_one_times(harness: Harness) -> None:
    client = harness.client()
    await client.get_runner_scale_set(1, "warm-up")
    harness.fake.control.faults.unavailable(None, path_contains="runnerscalesets")
    with pytest.raises(RetriesExhausted) as caught:
        await client.get_runner_scale_set(1, "arc")
    assert caught.value.attempts == 5
    assert caught.value.last_status == 503
    assert "giving up after 5 attempt(s)" in str(caught.value)
    assert harness.requests("runnerscalesets", "GET") == [200] + [503] * 5
    assert harness.sleeps == [1, 2, 4, 8]
    assert harness.counted("GET", SCALE_SETS, "503") == 5
    assert harness.counted("GET", SCALE_SETS, "200") == 1


@pytest.mark.parametrize(
    ("method", "path", "call"),
    [
        ("GET", "/agents/", lambda c, s: c.get_runner(1)),
        ("GET", "/agents", lambda c, s: c.get_runner_by_name("x")),
        ("DELETE", "/agents/", lambda c, s: c.remove_runner(1)),
        ("GET", "/runnerscalesets/", lambda c, s: c.get_runner_scale_set_by_id(s)),
        ("POST", "/generatejitconfig", lambda c, s: c.generate_jit_runner_config(s, "r")),
        (
            "POST",
            "/runnerscalesets",
            lambda c, s: c.create_runner_scale_set(RunnerScaleSet(name="n")),
        ),
        ("POST", "/sessions", lambda c, s: c.create_message_session(s, "pod")),
        ("GET", "/runners", lambda c, s: c.list_runners()),
    ],
)
async def test_every_endpoint_retries_5xx(
    harness: Harness,
    method: str,
    path: str,
    call: Callable[[ActionsClient, int], Awaitable[object]],
) -> None:
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.fail_next(None, 500, method=method, path_contains=path)
    with pytest.raises(RetriesExhausted):
        await call(client, set_id)
    assert harness.requests(path, method) == [500] * 5


async def test_session_delete_and_refresh_retry_5xx(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    session = await client.create_message_session(set_id, "pod")
    harness.fake.control.faults.fail_next(None, 502, path_contains="/sessions/")
    with pytest.raises(RetriesExhausted):
        await client.refresh_message_session(set_id, session.session_id)
    with pytest.raises(RetriesExhausted):
        await client.delete_message_session(set_id, session.session_id)
    assert harness.requests("/sessions/", "PATCH") == [502] * 5
    assert harness.requests("/sessions/", "DELETE") == [502] * 5


async def test_recovers_after_a_burst(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.fail_next(3, 500, path_contains="/runnerscalesets/")
    found = await client.get_runner_scale_set_by_id(set_id)
    assert found is not None
    assert harness.requests("/runnerscalesets/") == [500, 500, 500, 200]


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_is_honoured(harness: Harness, status: int) -> None:
    client, set_id = await authenticated(harness)
    if status == 429:
        harness.fake.control.faults.rate_limit(
            2, retry_after_seconds=7, path_contains="/runnerscalesets/"
        )
    else:
        harness.fake.control.faults.unavailable(
            2, retry_after_seconds=7, path_contains="/runnerscalesets/"
        )
    assert await client.get_runner_scale_set_by_id(set_id) is not None
    assert harness.sleeps == [7, 7]
    assert harness.requests("/runnerscalesets/") == [status, status, 200]


@pytest.mark.parametrize("status", [501, 400, 404])
async def test_non_retryable_statuses_fail_at_once(harness: Harness, status: int) -> None:
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.fail_next(None, status, path_contains="/runnerscalesets/")
    with pytest.raises(ActionsServiceError) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    assert caught.value.status == status
    assert f"unexpected status code {status}" in str(caught.value)
    assert harness.requests("/runnerscalesets/") == [status]
    assert harness.sleeps == []


async def test_lost_session_creation_is_not_repeated(harness: Harness) -> None:
    short_admin = Timeouts().replace(CallKind.ADMIN, httpx2.Timeout(5.0, read=0.2))
    client, set_id = await authenticated(harness, timeouts=short_admin)
    harness.fake.control.faults.add_latency(1.0, 1, method="POST", path_contains="/sessions")
    with pytest.raises(ResponseLost, match="not repeated"):
        await client.create_message_session(set_id, "pod")
    assert harness.sleeps == []
    sessions = f"{SCALE_SETS}/{{id}}/sessions"
    assert harness.counted("POST", sessions, "error") == 1  # one attempt, no repeat
    # The caller decides what to do next; here the client gave up before the fake read the
    # request, so no session exists and a new try works.
    await harness.fake.control.wait_for(
        lambda _: bool(harness.fake.control.requests_to("/sessions", "POST")),
        within=5.0,
        what="the held request to end",
    )
    assert harness.fake.control.snapshot().sessions == ()
    assert await client.create_message_session(set_id, "pod") is not None
    assert harness.counted("POST", sessions, "200") == 1
    assert len(harness.fake.control.snapshot().sessions) == 1


async def test_session_created_but_its_answer_lost_is_not_repeated(harness: Harness) -> None:
    """§2.6/§4.1: the fake creates the session and cuts the connection before answering. The
    client must say so (ResponseLost) rather than repeat the create — a repeat would meet its
    own session — and the service keeps exactly one session, which a later create by the same
    owner conflicts with."""
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.drop_responses(1, method="POST", path_contains="/sessions")
    with pytest.raises(ResponseLost, match="not repeated") as lost:
        await client.create_message_session(set_id, "pod")
    assert "RemoteProtocolError" in str(lost.value)
    assert harness.sleeps == []
    sessions = f"{SCALE_SETS}/{{id}}/sessions"
    assert harness.counted("POST", sessions, "error") == 1
    (record,) = harness.fake.control.requests_to("/sessions", "POST")
    assert (record.status, record.unsent_status) == (0, 200)  # handled, never answered
    (created,) = harness.fake.control.snapshot().sessions
    assert (created.scale_set_id, created.owner_name) == (set_id, "pod")

    with pytest.raises(SessionConflict) as conflict:
        await client.create_message_session(set_id, "pod")
    assert conflict.value.status == 409
    assert harness.requests("/sessions", "POST") == [0, 409]
    assert harness.sleeps == []
    (still,) = harness.fake.control.snapshot().sessions
    assert still.session_id == created.session_id


async def recover_from_agent_exists(client: ActionsClient, set_id: int, name: str) -> int:
    """The caller's AgentExists recovery (§2.2, §2.5): look the name up, remove it if it is in
    this scale set, generate again. Returns the new runner's id."""
    with pytest.raises(RunnerExists) as exists:
        await client.generate_jit_runner_config(set_id, name)
    assert exists.value.status == 409
    found = await client.get_runner_by_name(name)
    assert found is not None
    assert found.runner_scale_set_id == set_id
    await client.remove_runner(found.id)
    fresh = await client.generate_jit_runner_config(set_id, name)
    return fresh.runner.id


async def test_jit_config_read_timeout_is_not_resent(harness: Harness) -> None:
    """The service registered the runner but its answer came after the client's read timeout:
    the client must not send generatejitconfig again blindly (that would meet AgentExists for a
    registration whose config nobody has); it reports ResponseLost, and the caller's AgentExists
    recovery removes the orphan and registers the runner anew."""
    short_admin = Timeouts().replace(CallKind.ADMIN, httpx2.Timeout(5.0, read=0.2))
    client, set_id = await authenticated(harness, timeouts=short_admin)
    harness.fake.control.faults.delay_answers(1.0, 1, method="POST", path_contains="/generatejit")
    with pytest.raises(ResponseLost, match="not repeated") as lost:
        await client.generate_jit_runner_config(set_id, "runner-1")
    assert "ReadTimeout" in str(lost.value)
    assert harness.sleeps == []
    assert harness.requests("/generatejitconfig", "POST") == [200]  # one attempt, processed
    (orphan,) = harness.fake.control.snapshot().registered_runners(set_id)
    assert orphan.name == "runner-1"

    fresh_id = await recover_from_agent_exists(client, set_id, "runner-1")
    (registered,) = harness.fake.control.snapshot().registered_runners(set_id)
    assert (registered.id, registered.name) == (fresh_id, "runner-1")
    assert registered.id != orphan.id
    assert harness.requests("/generatejitconfig", "POST") == [200, 409, 200]


async def test_jit_config_whose_answer_was_lost_is_not_resent(harness: Harness) -> None:
    """The same when the connection is cut after the service handled the request (§2.6)."""
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.drop_responses(1, method="POST", path_contains="/generatejitconfig")
    with pytest.raises(ResponseLost, match="not repeated") as lost:
        await client.generate_jit_runner_config(set_id, "runner-1")
    assert "RemoteProtocolError" in str(lost.value)
    assert harness.sleeps == []
    (record,) = harness.fake.control.requests_to("/generatejitconfig", "POST")
    assert (record.status, record.unsent_status) == (0, 200)
    (orphan,) = harness.fake.control.snapshot().registered_runners(set_id)

    fresh_id = await recover_from_agent_exists(client, set_id, "runner-1")
    (registered,) = harness.fake.control.snapshot().registered_runners(set_id)
    assert registered.id == fresh_id != orphan.id


async def test_jit_config_request_that_never_left_is_retried(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.unavailable(2, path_contains="/generatejitconfig")
    jit = await client.generate_jit_runner_config(set_id, "runner-1")
    assert jit.runner.name == "runner-1"
    assert harness.requests("/generatejitconfig", "POST") == [503, 503, 200]
    assert harness.sleeps == [1, 2]


async def test_other_writes_repeated_after_a_lost_answer_meet_their_first_attempt(
    harness: Harness,
) -> None:
    """The other non-idempotent admin calls are repeated after a lost response (§2.6) and the
    repeat reports the state the lost attempt made: the scale set exists (409), the runner is
    gone (RunnerNotFound), the session is gone (SessionNotFound). Never a duplicate; the
    callers read these as documented on each method. A lost DeleteMessage is harmless: the
    fake accepts a repeated acknowledgement (ledger A-DELETE-MESSAGE-IDEMPOTENT)."""
    client = harness.client()
    faults = harness.fake.control.faults
    faults.drop_responses(1, method="POST", path_contains="/runnerscalesets")
    with pytest.raises(ActionsServiceError, match="RunnerScaleSetExists") as exists:
        await client.create_runner_scale_set(RunnerScaleSet(name="arc", runner_group_id=1))
    assert exists.value.status == 409
    (scale_set,) = harness.fake.control.snapshot().scale_sets
    found = await client.get_runner_scale_set(1, "arc")
    assert found is not None
    assert found.id == scale_set.id

    jit = await client.generate_jit_runner_config(scale_set.id, "runner-1")
    faults.drop_responses(1, method="DELETE", path_contains="/agents/")
    with pytest.raises(RunnerNotFound):
        await client.remove_runner(jit.runner.id)
    assert harness.fake.control.snapshot().registered_runners() == []

    session = await MessageSessionClient.open(client, scale_set.id, "pod")
    harness.fake.control.queue_job(["arc"])
    message = await session.get_message(0, 1)
    assert message is not None
    faults.drop_responses(1, method="DELETE", path_contains="/mq/")
    await session.delete_message(message.message_id)
    assert harness.requests("/mq/", "DELETE") == [0, 204]

    faults.drop_responses(1, method="DELETE", path_contains="/sessions/")
    with pytest.raises(SessionNotFound):
        await session.close()
    assert harness.fake.control.snapshot().sessions == ()
    assert harness.requests("/sessions/", "DELETE") == [0, 400]


async def test_lost_idempotent_read_is_retried(harness: Harness) -> None:
    short_admin = Timeouts().replace(CallKind.ADMIN, httpx2.Timeout(5.0, read=0.2))
    client, set_id = await authenticated(harness, timeouts=short_admin)
    harness.fake.control.faults.add_latency(1.0, 1, method="GET", path_contains="/runnerscalesets/")
    assert await client.get_runner_scale_set_by_id(set_id) is not None
    assert harness.sleeps == [1]


async def test_pool_timeout_is_retried(harness: Harness) -> None:
    timeouts = Timeouts().replace(CallKind.ADMIN, httpx2.Timeout(5.0, pool=0.05))
    client, set_id = await authenticated(harness, timeouts=timeouts, max_connections=1)
    harness.fake.control.faults.add_latency(3.0, 1, method="GET", path_contains="/runnerscalesets/")
    blocker = asyncio.create_task(client.get_runner_scale_set_by_id(set_id))
    try:
        rule = harness.fake.control.faults.rules[0]
        await harness.fake.control.wait_for(
            lambda _: rule.hits > 0, within=5.0, what="the blocking call to hold the pool"
        )
        with pytest.raises(RetriesExhausted, match="PoolTimeout") as caught:
            await client.get_runner_by_name("x")
        assert caught.value.attempts == 5
        assert harness.sleeps == [1, 2, 4, 8]
        assert harness.counted("GET", "_apis/distributedtask/pools/0/agents", "error") == 5
    finally:
        blocker.cancel()


async def test_byte_order_marks_are_stripped(harness: Harness) -> None:
    harness.fake.control.faults.set_bom(True)
    client = harness.client()
    created = await client.create_runner_scale_set(RunnerScaleSet(name="arc", runner_group_id=1))
    session = await MessageSessionClient.open(client, created.id, "pod")
    harness.fake.control.queue_job(["arc"])
    message = await session.get_message(0, 1)
    assert message is not None
    assert len(message.jobs) == 1
    jit = await client.generate_jit_runner_config(created.id, "bom-runner")
    assert [r.name for r in await client.list_runners()] == ["bom-runner"]
    harness.fake.control.faults.fail_next(1, 400, surface=Surface.ACTIONS, path_contains="agents")
    with pytest.raises(ActionsServiceError, match="injected fault"):
        await client.get_runner(jit.runner.id)


async def test_limiter_is_applied_to_admin_calls_but_not_to_the_queue(harness: Harness) -> None:
    limiter = RequestLimiter(rate_per_second=0.5, burst=1, clock=harness.clock)
    client = harness.client(limiter=limiter)
    created = await client.create_runner_scale_set(RunnerScaleSet(name="arc", runner_group_id=1))
    session = await MessageSessionClient.open(client, created.id, "pod")
    admin_calls = len(harness.fake.control.requests)  # token, registration, create, session
    assert harness.sleeps == [2.0] * (admin_calls - 1)
    harness.fake.control.queue_job(["arc"])
    message = await session.get_message(0, 1)
    assert message is not None
    await session.delete_message(message.message_id)
    assert harness.sleeps == [2.0] * (admin_calls - 1)  # queue calls bypass the limiter


async def test_queue_calls_retry_5xx(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    session = await MessageSessionClient.open(client, set_id, "pod")
    harness.fake.control.faults.unavailable(None, surface=Surface.MESSAGE_QUEUE)
    with pytest.raises(RetriesExhausted) as caught:
        await session.get_message(0, 3)
    assert caught.value.last_status == 503
    with pytest.raises(RetriesExhausted):
        await session.delete_message(1)
    assert harness.requests("/mq/", "GET") == [503] * 5
    assert harness.requests("/mq/", "DELETE") == [503] * 5
    assert harness.requests("/sessions/", "PATCH") == []  # 5xx is not a token problem


async def test_secondary_rate_limit_403_with_retry_after_is_retried(harness: Harness) -> None:
    client = harness.client()
    harness.fake.control.faults.secondary_rate_limit(
        1, retry_after_seconds=30, path_contains="registration-token"
    )
    await client.get_runner_scale_set(1, "a")
    assert harness.requests("registration-token") == [403, 201]
    assert harness.sleeps == [30]
    harness.fake.control.faults.secondary_rate_limit(2, retry_after_seconds=5, method="GET")
    assert await client.list_runners() == ()
    assert harness.requests("/actions/runners", "GET") == [403, 403, 200]
    assert harness.sleeps == [30, 5, 5]


async def test_exhausted_primary_rate_limit_waits_for_the_reset(harness: Harness) -> None:
    client = harness.client()
    reset = int(harness.clock.time()) + 20
    harness.fake.control.faults.fail_next(
        1,
        403,
        body='{"message": "API rate limit exceeded"}',
        content_type="application/json",
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        method="GET",
        path_contains="/actions/runners",
    )
    assert await client.list_runners() == ()
    assert harness.requests("/actions/runners", "GET") == [403, 200]
    assert harness.sleeps == [20]


async def test_a_plain_403_is_not_retried(harness: Harness) -> None:
    client = harness.client()
    harness.fake.control.faults.fail_next(
        1,
        403,
        body='{"message": "Resource not accessible by integration"}',
        content_type="application/json",
        headers={"x-ratelimit-remaining": "4999"},
        method="GET",
        path_contains="/actions/runners",
    )
    with pytest.raises(GitHubApiError, match="Resource not accessible") as caught:
        await client.list_runners()
    assert caught.value.status == 403
    assert harness.requests("/actions/runners", "GET") == [403]
    assert harness.sleeps == []


def spent_quota(harness: Harness, reset_in: int, path_contains: str) -> None:
    """The next matching request is answered as a credential whose quota is spent."""
    reset = int(harness.clock.time()) + reset_in
    harness.fake.control.faults.fail_next(
        1,
        403,
        body='{"message": "API rate limit exceeded"}',
        content_type="application/json",
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        surface=None,
        path_contains=path_contains,
    )


async def test_a_spent_quota_holds_the_credentials_other_calls(harness: Harness) -> None:
    """GitHub counts the credential's requests, not a call's: once one call learns that the
    quota is spent, the other clients of the same credentials wait for its reset before they
    send to that service (the fake sees nothing from them meanwhile), while calls to the other
    service go on."""
    limiter = RequestLimiter(max_concurrent=None, clock=harness.clock)
    actions, _ = await authenticated(harness, limiter=limiter)
    once = harness.client(limiter=limiter, retry=RetryPolicy(max_retries=0))
    other = harness.client(limiter=limiter)
    spent_quota(harness, 30, "/actions/runners")
    with pytest.raises(RetriesExhausted):
        await once.list_runners()
    assert harness.sleeps == []
    assert await other.list_runners() == ()  # held 30 s, then its one request passes
    assert harness.sleeps == [30]
    assert harness.requests("/actions/runners", "GET") == [403, 200]
    spent_quota(harness, 30, "/actions/runners")
    with pytest.raises(RetriesExhausted):
        await once.list_runners()  # GitHub's REST API held again
    await actions.get_runner_scale_set(1, "a")  # the Actions service: not held
    assert harness.sleeps == [30]


async def test_a_secondary_rate_limit_is_the_refused_calls_own_wait(harness: Harness) -> None:
    """A secondary rate limit's Retry-After is waited by the call it refused, not by the
    credential's other calls: holding them all for it left the JIT ceiling idle."""
    limiter = RequestLimiter(max_concurrent=None, clock=harness.clock)
    once = harness.client(limiter=limiter, retry=RetryPolicy(max_retries=0))
    other = harness.client(limiter=limiter)
    harness.fake.control.faults.secondary_rate_limit(
        1, retry_after_seconds=30, method="GET", path_contains="/actions/runners"
    )
    with pytest.raises(RetriesExhausted):
        await once.list_runners()
    assert await other.list_runners() == ()
    assert harness.sleeps == []
    assert harness.requests("/actions/runners", "GET") == [403, 200]


async def test_a_hold_longer_than_the_budget_fails_the_call_at_once(harness: Harness) -> None:
    limiter = RequestLimiter(max_concurrent=None, clock=harness.clock)
    client = harness.client(
        limiter=limiter, timeouts=Timeouts().with_budget(CallKind.GITHUB_API, 60.0)
    )
    limiter.hold(CallKind.GITHUB_API.value, 120.0)
    with pytest.raises(DeadlineExceeded):
        await client.list_runners()
    assert harness.sleeps == []
    assert harness.requests("/actions/runners", "GET") == []
