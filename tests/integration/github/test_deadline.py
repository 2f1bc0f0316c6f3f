"""Per-call time budgets over HTTP against the fake, on its ManualClock: retry waits move the
clock, so a budget runs out exactly as it would in real time."""

from __future__ import annotations

from typing import Any

import pytest
from tests.integration.github.harness import PAT, Harness
from tests.plugins.secret_guard import SecretRegistry

from scaleset.embedded.actions import Surface
from scaleset.github import (
    ActionsClient,
    CallKind,
    DeadlineExceeded,
    GitHubApiError,
    MessageSessionClient,
    ResponseLost,
    RetriesExhausted,
    RunnerScaleSet,
    Timeouts,
    TransportFailure,
)


async def authenticated(harness: Harness, **options: Any) -> tuple[ActionsClient, int]:
    """A client holding an admin token and one scale set, with the request log cleared."""
    client = harness.client(**options)
    created = await client.create_runner_scale_set(RunnerScaleSet(name="arc", runner_group_id=1))
    harness.fake.control.clear_requests()
    return client, created.id


async def test_admin_calls_get_all_five_attempts_within_the_default_budget(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    """As patient as ARC (go-retryablehttp: 5 attempts, 1/2/4/8 s waits); the final error
    carries the last status and body."""
    client, set_id = await authenticated(harness)
    started = harness.clock.monotonic()
    harness.fake.control.faults.fail_next(
        None, 503, body="the service is down for maintenance", path_contains="/runnerscalesets/"
    )
    with pytest.raises(RetriesExhausted) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    error = caught.value
    assert not isinstance(error, DeadlineExceeded)
    assert harness.sleeps == [1, 2, 4, 8]
    assert harness.requests("/runnerscalesets/") == [503] * 5
    assert (error.attempts, error.last_status) == (5, 503)
    assert error.body == "the service is down for maintenance"
    assert str(error).endswith(
        "giving up after 5 attempt(s): last status 503 Service Unavailable: "
        "the service is down for maintenance"
    )
    assert harness.clock.monotonic() - started == 15
    secret_guard.assert_clean(error)


async def test_budget_stops_retries_the_attempt_count_would_still_allow(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    client, set_id = await authenticated(
        harness, timeouts=Timeouts().with_budget(CallKind.ADMIN, 12.0)
    )
    started = harness.clock.monotonic()
    harness.fake.control.faults.unavailable(None, path_contains="/runnerscalesets/")
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    error = caught.value
    assert isinstance(error, RetriesExhausted)
    assert isinstance(error, TransportFailure)
    # 1 + 2 + 4 s of waits fit in a 12 s budget; the 8 s wait would not (7 + 8 > 12),
    # although the attempt bound (5) would allow a fifth attempt.
    assert harness.sleeps == [1, 2, 4]
    assert harness.requests("/runnerscalesets/") == [503] * 4
    assert (error.attempts, error.last_status, error.kind, error.budget, error.wait) == (
        4,
        503,
        "admin",
        12.0,
        8,
    )
    assert error.last_error == "last status 503 Service Unavailable"
    assert error.body == "injected fault: status 503"
    assert "the 12 s budget of admin calls" in str(error)
    assert "last status 503" in str(error)
    assert harness.clock.monotonic() - started == 7  # gave up without sleeping the 8 s
    assert PAT not in str(error)
    secret_guard.assert_clean(error)


async def test_the_last_body_is_quoted_with_the_request_credentials_masked(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    """A proxy or server that echoes the request's Authorization header into its error page:
    the error keeps the status and the body, never the credential."""
    client = harness.client()
    harness.fake.control.faults.fail_next(
        None,
        502,
        body=f"bad gateway; request had Authorization: Bearer {PAT}; token={PAT}",
        path_contains="registration-token",
    )
    with pytest.raises(RetriesExhausted) as caught:
        await client.get_runner_scale_set(1, "arc")
    error = caught.value
    assert (error.attempts, error.last_status) == (5, 502)
    assert PAT not in error.body
    assert (
        error.body == "bad gateway; request had Authorization: Bearer [REDACTED]; token=[REDACTED]"
    )
    assert PAT not in str(error)
    secret_guard.assert_clean(error)


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_longer_than_the_budget_fails_at_once(
    harness: Harness, status: int
) -> None:
    client, set_id = await authenticated(harness)
    faults = harness.fake.control.faults
    if status == 429:
        faults.rate_limit(1, retry_after_seconds=120, path_contains="/runnerscalesets/")
    else:
        faults.unavailable(1, retry_after_seconds=120, path_contains="/runnerscalesets/")
    started = harness.clock.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    assert harness.sleeps == []
    assert harness.clock.monotonic() == started
    assert harness.requests("/runnerscalesets/") == [status]
    assert (caught.value.attempts, caught.value.last_status, caught.value.wait) == (1, status, 120)
    assert "a 120 s wait would outlast the 90 s budget of admin calls" in str(caught.value)


async def test_retry_after_within_the_budget_is_still_honoured(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.rate_limit(
        1, retry_after_seconds=60, path_contains="/runnerscalesets/"
    )
    assert await client.get_runner_scale_set_by_id(set_id) is not None
    assert harness.sleeps == [60]
    assert harness.requests("/runnerscalesets/") == [429, 200]


async def test_a_call_that_succeeds_within_its_budget_is_unaffected(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.fail_next(3, 500, path_contains="/runnerscalesets/")
    found = await client.get_runner_scale_set_by_id(set_id)
    assert found is not None
    assert found.id == set_id
    assert harness.sleeps == [1, 2, 4]
    assert harness.requests("/runnerscalesets/") == [500, 500, 500, 200]


async def test_the_budget_is_per_call_not_per_client(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    for _ in range(3):
        harness.fake.control.faults.fail_next(3, 500, path_contains="/runnerscalesets/")
        assert await client.get_runner_scale_set_by_id(set_id) is not None
    assert harness.sleeps == [1, 2, 4] * 3  # 21 s of waits in all, 7 s per call


async def test_callers_override_the_budget_per_client(harness: Harness) -> None:
    tight = Timeouts().with_budget(CallKind.ADMIN, 2.5)
    client, set_id = await authenticated(harness, timeouts=tight)
    harness.fake.control.faults.unavailable(None, path_contains="/runnerscalesets/")
    with pytest.raises(DeadlineExceeded, match=r"2\.5 s budget of admin calls") as caught:
        await client.get_runner_scale_set_by_id(set_id)
    assert caught.value.attempts == 2
    assert harness.sleeps == [1]

    unbounded = Timeouts().with_budget(CallKind.ADMIN, None)
    other = harness.client(timeouts=unbounded)
    harness.sleeps.clear()
    with pytest.raises(RetriesExhausted) as exhausted:
        await other.get_runner_scale_set_by_id(set_id)
    assert not isinstance(exhausted.value, DeadlineExceeded)
    assert exhausted.value.attempts == 5
    assert harness.sleeps == [1, 2, 4, 8]


async def test_the_last_transport_error_is_carried(harness: Harness) -> None:
    client, set_id = await authenticated(
        harness, timeouts=Timeouts().with_budget(CallKind.ADMIN, 12.0)
    )
    harness.fake.control.faults.drop_responses(
        None, method="GET", path_contains="/runnerscalesets/"
    )
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    assert caught.value.last_status is None
    assert caught.value.last_error.startswith("RemoteProtocolError")
    assert caught.value.body == ""
    assert "RemoteProtocolError" in str(caught.value)
    assert harness.sleeps == [1, 2, 4]

    harness.clock.sleeps.clear()
    other = harness.client()  # the default budget: every attempt
    with pytest.raises(RetriesExhausted) as exhausted:
        await other.get_runner_scale_set_by_id(set_id)
    assert not isinstance(exhausted.value, DeadlineExceeded)
    assert (exhausted.value.attempts, exhausted.value.last_status) == (5, None)
    assert "RemoteProtocolError" in str(exhausted.value)
    assert harness.sleeps == [1, 2, 4, 8]


async def test_the_last_attempt_gets_only_what_is_left_of_the_budget(harness: Harness) -> None:
    """The attempt's httpx2 timeouts are cut to the budget left: a held answer ends the call
    at the budget, not at the kind's 10 s read timeout."""
    _, set_id = await authenticated(harness)
    client = harness.client(timeouts=Timeouts().with_budget(CallKind.ADMIN, 0.3))
    await client.auth.admin()  # token calls are GITHUB_API, outside the tight ADMIN budget
    harness.fake.control.faults.add_latency(5.0, 1, method="GET", path_contains="/runnerscalesets/")
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    assert caught.value.last_status is None
    assert caught.value.last_error.startswith("ReadTimeout")
    assert harness.sleeps == []


async def test_session_creation_still_never_repeats_a_lost_request(harness: Harness) -> None:
    """Even when the budget would not allow a 1 s wait, a lost session creation is reported
    as ResponseLost (the retry policy forbids the repeat before the budget is consulted)."""
    _, set_id = await authenticated(harness)
    client = harness.client(timeouts=Timeouts().with_budget(CallKind.ADMIN, 1.0))
    harness.fake.control.faults.drop_responses(1, method="POST", path_contains="/sessions")
    with pytest.raises(ResponseLost, match="not repeated"):
        await client.create_message_session(set_id, "pod")
    assert harness.requests("/sessions", "POST") == [0]
    assert harness.sleeps == []


async def test_registration_401s_get_five_attempts_within_the_github_api_budget(
    harness: Harness,
) -> None:
    client = harness.client()
    harness.fake.control.faults.fail_next(
        None,
        401,
        body="token not yet valid",
        surface=Surface.GITHUB,
        path_contains="runner-registration",
    )
    with pytest.raises(GitHubApiError, match="token not yet valid") as caught:
        await client.get_runner_scale_set(1, "arc")
    assert (caught.value.status, caught.value.body) == (401, "token not yet valid")
    assert harness.requests("runner-registration") == [401] * 5
    assert harness.sleeps == [1, 2, 4, 8]


async def test_registration_retries_stop_at_a_tight_github_api_budget(harness: Harness) -> None:
    client = harness.client(timeouts=Timeouts().with_budget(CallKind.GITHUB_API, 12.0))
    harness.fake.control.faults.fail_next(
        None, 401, surface=Surface.GITHUB, path_contains="runner-registration"
    )
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set(1, "arc")
    assert (caught.value.kind, caught.value.last_status, caught.value.attempts) == (
        "github-api",
        401,
        4,
    )
    assert harness.requests("runner-registration") == [401] * 4
    assert harness.sleeps == [1, 2, 4]


async def test_queue_calls_have_their_own_budgets(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    session = await MessageSessionClient.open(client, set_id, "pod")
    faults = harness.fake.control.faults
    # Acknowledging (message-queue kind, 120 s): a 150 s Retry-After is not waited for.
    faults.unavailable(1, retry_after_seconds=150, surface=Surface.MESSAGE_QUEUE, method="DELETE")
    with pytest.raises(DeadlineExceeded, match="120 s budget of message-queue calls"):
        await session.delete_message(1)
    assert harness.sleeps == []
    # The long poll (420 s) waits it out.
    faults.unavailable(1, retry_after_seconds=150, surface=Surface.MESSAGE_QUEUE, method="GET")
    harness.fake.control.queue_job(["arc"])
    message = await session.get_message(0, 1)
    assert message is not None
    assert harness.sleeps == [150]
    assert harness.requests("/mq/", "GET") == [503, 200]
