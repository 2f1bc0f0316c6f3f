"""Per-call time budgets over HTTP against the fake, on its ManualClock: retry waits move the
clock (`sleeps_advance_clock`), so a budget runs out exactly as it would in real time."""

from __future__ import annotations

from typing import Any

import pytest
from tests.integration.github.conftest import PAT, Harness
from tests.plugins.secret_guard import SecretRegistry

from scaleset.embedded.actions import Surface
from scaleset.github import (
    ActionsClient,
    CallKind,
    DeadlineExceeded,
    MessageSessionClient,
    ResponseLost,
    RetriesExhausted,
    RunnerScaleSet,
    Timeouts,
    TransportFailure,
)


async def authenticated(harness: Harness, **options: Any) -> tuple[ActionsClient, int]:
    """A client holding an admin token and one scale set; waits advance the clock from here."""
    client = harness.client(**options)
    created = await client.create_runner_scale_set(RunnerScaleSet(name="arc", runner_group_id=1))
    harness.fake.control.clear_requests()
    harness.sleeps_advance_clock = True
    return client, created.id


async def test_budget_stops_retries_the_attempt_count_would_still_allow(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    client, set_id = await authenticated(harness)
    started = harness.clock()
    harness.fake.control.faults.unavailable(None, path_contains="/runnerscalesets/")
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    error = caught.value
    assert isinstance(error, RetriesExhausted)
    assert isinstance(error, TransportFailure)
    # 1 + 2 + 4 s of waits fit in the 12 s admin budget; the 8 s wait would not (7 + 8 > 12),
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
    assert "the 12 s budget of admin calls" in str(error)
    assert "last status 503" in str(error)
    assert harness.clock() - started == 7  # gave up without sleeping the 8 s
    assert PAT not in str(error)
    secret_guard.assert_clean(error)


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_longer_than_the_budget_fails_at_once(
    harness: Harness, status: int
) -> None:
    client, set_id = await authenticated(harness)
    faults = harness.fake.control.faults
    if status == 429:
        faults.rate_limit(1, retry_after_seconds=60, path_contains="/runnerscalesets/")
    else:
        faults.unavailable(1, retry_after_seconds=60, path_contains="/runnerscalesets/")
    started = harness.clock()
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    assert harness.sleeps == []
    assert harness.clock() == started
    assert harness.requests("/runnerscalesets/") == [status]
    assert (caught.value.attempts, caught.value.last_status, caught.value.wait) == (1, status, 60)
    assert "a 60 s wait would outlast the 12 s budget of admin calls" in str(caught.value)


async def test_retry_after_within_the_budget_is_still_honoured(harness: Harness) -> None:
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.rate_limit(
        1, retry_after_seconds=11, path_contains="/runnerscalesets/"
    )
    assert await client.get_runner_scale_set_by_id(set_id) is not None
    assert harness.sleeps == [11]
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
    client, set_id = await authenticated(harness)
    harness.fake.control.faults.drop_responses(
        None, method="GET", path_contains="/runnerscalesets/"
    )
    with pytest.raises(DeadlineExceeded) as caught:
        await client.get_runner_scale_set_by_id(set_id)
    assert caught.value.last_status is None
    assert caught.value.last_error.startswith("RemoteProtocolError")
    assert "RemoteProtocolError" in str(caught.value)
    assert harness.sleeps == [1, 2, 4]


async def test_the_last_attempt_gets_only_what_is_left_of_the_budget(harness: Harness) -> None:
    """The attempt's httpx timeouts are cut to the budget left: a held answer ends the call
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


async def test_registration_retries_stop_at_the_github_api_budget(harness: Harness) -> None:
    harness.sleeps_advance_clock = True
    client = harness.client()
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
    # Acknowledging (message-queue kind, 30 s): a 40 s Retry-After is not waited for.
    faults.unavailable(1, retry_after_seconds=40, surface=Surface.MESSAGE_QUEUE, method="DELETE")
    with pytest.raises(DeadlineExceeded, match="30 s budget of message-queue calls"):
        await session.delete_message(1)
    assert harness.sleeps == []
    # The long poll (150 s) waits it out.
    faults.unavailable(1, retry_after_seconds=40, surface=Surface.MESSAGE_QUEUE, method="GET")
    harness.fake.control.queue_job(["arc"])
    message = await session.get_message(0, 1)
    assert message is not None
    assert harness.sleeps == [40]
    assert harness.requests("/mq/", "GET") == [503, 200]
