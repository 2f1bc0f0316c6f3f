"""Every answer is bounded in time and size: a server that drips bytes, or sends a body far
larger than any real answer, costs one bounded attempt, never a call held open for ever or a
body read whole into memory.

Over real HTTP against ``tests/support/misbehaving_http.py`` (raw asyncio streams). Retry waits
pass on the harness's wait-recording clock; the per-attempt deadline is real time, as the
per-read timeouts are, so tests set it short. No timing is asserted: the error type, the
attempts made and the memory the client kept.
"""

from __future__ import annotations

import asyncio
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from tests.integration.github.harness import PAT, WaitRecordingClock
from tests.support.misbehaving_http import Drip, Flood, MisbehavingServer

from scaleset.github import (
    ActionsClient,
    CallKind,
    GitHubApiMetrics,
    PersonalAccessToken,
    ProxyConfig,
    RetriesExhausted,
    RetryPolicy,
    RunnerScaleSetSession,
    Timeouts,
)
from scaleset.github.errors import ResponseTooLarge

BOUND = 60.0
"""How long a call may take before the test calls it hung (real seconds; never reached when
the client bounds its attempts)."""
SHORT = 0.3
"""The per-attempt deadline the tests set (real seconds)."""
CAP = 64 * 1024
"""The body cap the tests set."""

Call = Callable[[ActionsClient, MisbehavingServer], Awaitable[object]]


def client_for(server: MisbehavingServer, **options: Any) -> ActionsClient:
    options.setdefault("retry", RetryPolicy(max_retries=1))
    return ActionsClient(
        f"{server.url}/acme",
        PersonalAccessToken(token=SecretStr(PAT)),
        proxy=ProxyConfig(),
        environ={},
        clock=WaitRecordingClock(),
        metrics=GitHubApiMetrics(CollectorRegistry()),
        **options,
    )


def session_at(server: MisbehavingServer) -> RunnerScaleSetSession:
    return RunnerScaleSetSession(
        session_id=uuid.uuid4(),
        message_queue_url=f"{server.url}/queue/1",
        message_queue_access_token=SecretStr("queue-token-0123456789"),
    )


async def list_runners(client: ActionsClient, server: MisbehavingServer) -> object:
    return await client.list_runners()


async def long_poll(client: ActionsClient, server: MisbehavingServer) -> object:
    return await client.get_message(session_at(server), 0, 10)


CALLS: dict[CallKind, Call] = {
    CallKind.GITHUB_API: list_runners,  # the REST runner list: PAT only, no token exchange
    CallKind.LONG_POLL: long_poll,  # the session's queue URL: no admin call either
}


@pytest.fixture
async def dripping(request: pytest.FixtureRequest) -> AsyncIterator[MisbehavingServer]:
    async with MisbehavingServer(Drip(where=request.param)) as server:
        yield server


@pytest.mark.parametrize("dripping", ["head", "body"], indirect=True)
@pytest.mark.parametrize("kind", list(CALLS))
async def test_a_server_that_drips_bytes_costs_one_bounded_attempt_per_try(
    dripping: MisbehavingServer, kind: CallKind
) -> None:
    """A byte every 20 ms never trips a 10 s read timeout; the attempt's deadline ends it, as
    a lost answer (retried: these calls are safe to repeat)."""
    timeouts = Timeouts().with_attempt_deadline(kind, SHORT)
    async with client_for(dripping, timeouts=timeouts) as client:
        with pytest.raises(RetriesExhausted) as caught:
            await asyncio.wait_for(CALLS[kind](client, dripping), BOUND)
    assert caught.value.attempts == 2
    assert caught.value.last_status is None
    assert f"no complete answer within the {SHORT:g} s deadline of one" in str(caught.value)
    assert dripping.requests == 2


async def test_the_long_poll_has_a_longer_attempt_deadline_than_admin_calls() -> None:
    timeouts = Timeouts()
    poll = timeouts.attempt_deadline_for(CallKind.LONG_POLL)
    admin = timeouts.attempt_deadline_for(CallKind.ADMIN)
    # the service holds an empty poll ~50 s: the poll's attempt outlasts that, an admin call's
    # is connect + read, and every default budget still fits all five attempts
    assert poll > 50 > admin
    for kind in CallKind:
        budget = timeouts.budget_for(kind)
        assert budget is not None
        assert budget >= 5 * timeouts.attempt_deadline_for(kind)


@pytest.mark.parametrize("announce", [True, False], ids=["content-length", "until-close"])
@pytest.mark.parametrize("kind", list(CALLS))
async def test_an_answer_larger_than_the_cap_is_refused_without_being_read_whole(
    kind: CallKind, announce: bool
) -> None:
    """16 MiB against a 64 KiB cap: a typed error, not retried (the same server would send it
    again), and the client never holds the body: the traced peak stays far below it."""
    total = 16 * 1024 * 1024
    async with (
        MisbehavingServer(Flood(total, announce=announce)) as server,
        client_for(server, max_body_bytes=CAP) as client,
    ):
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLarge) as caught:
                await asyncio.wait_for(CALLS[kind](client, server), BOUND)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 2 * 1024 * 1024, f"the client held {peak} bytes"
    assert server.requests == 1
    assert server.sent < total
    error = caught.value
    assert error.limit == CAP
    assert f"larger than the {CAP} byte limit" in str(error)
    assert PAT not in str(error)


async def test_the_default_cap_is_well_above_real_answers() -> None:
    """The largest real answers (a 100-runner REST page, a long poll with a big job batch)
    are well under a megabyte; the cap is 16 MiB."""
    async with ActionsClient(
        "https://github.com/acme", PersonalAccessToken(token=SecretStr(PAT)), environ={}
    ) as client:
        assert client.engine.max_body_bytes == 16 * 1024 * 1024
