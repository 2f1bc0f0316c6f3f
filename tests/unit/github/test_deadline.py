"""Per-call time budgets: the pure pieces (deadline arithmetic, budgets on Timeouts, the capped
attempt timeout, the error's text). The engine's use of them is tested over HTTP in
tests/integration/github/test_deadline.py."""

from __future__ import annotations

import math

import httpx2
import pytest

from scaleset.github import CallKind, DeadlineExceeded, RetriesExhausted, Timeouts
from scaleset.github.retry import Deadline, RetryPolicy
from scaleset.github.transport import capped_timeout

NOW = 1_750_000_000.0


def test_a_wait_is_allowed_only_if_it_ends_before_the_budget() -> None:
    deadline = Deadline.start(NOW, 12.0)
    assert deadline.remaining(NOW + 7) == 5
    assert deadline.allows_wait(NOW + 7, 4.9)
    assert not deadline.allows_wait(NOW + 7, 5)  # would leave no time for the attempt
    assert not deadline.allows_wait(NOW + 7, 8)
    assert deadline.remaining(NOW + 13) < 0


def test_a_tight_budget_stops_backoff_before_the_attempt_bound() -> None:
    """With instant failures, a 12 s budget allows the 1, 2 and 4 s waits only."""
    policy = RetryPolicy()
    deadline = Deadline.start(NOW, 12.0)
    now, taken = NOW, []
    for retry_index in range(policy.max_retries + 1):
        delay = policy.delay_after_status(retry_index, 503, None, now)
        if delay is None or not deadline.allows_wait(now, delay):
            break
        taken.append(delay)
        now += delay
    assert taken == [1, 2, 4]
    assert retry_index + 1 < policy.max_attempts


def test_retry_after_longer_than_what_is_left_is_not_waited_for() -> None:
    policy = RetryPolicy()
    deadline = Deadline.start(NOW, 12.0)
    delay = policy.delay_after_status(0, 429, {"Retry-After": "60"}, NOW)
    assert delay == 60
    assert not deadline.allows_wait(NOW, delay)
    short = policy.delay_after_status(0, 429, {"Retry-After": "11"}, NOW)
    assert deadline.allows_wait(NOW, short or 0)


def test_no_budget_never_ends() -> None:
    deadline = Deadline.start(NOW, None)
    assert deadline.remaining(NOW + 1e9) == math.inf
    assert deadline.allows_wait(NOW + 1e9, 300)


def test_default_budgets() -> None:
    timeouts = Timeouts()
    assert {kind: timeouts.budget_for(kind) for kind in CallKind} == {
        CallKind.GITHUB_API: 90.0,
        CallKind.ADMIN: 90.0,
        CallKind.LONG_POLL: 420.0,
        CallKind.MESSAGE_QUEUE: 120.0,
    }


@pytest.mark.parametrize("kind", list(CallKind))
def test_default_budgets_never_cut_the_retry_policy_short(kind: CallKind) -> None:
    """Budgets bound wall time, not patience: every kind's budget holds all 5 attempts, each
    running to its connect + read timeout, and the 1+2+4+8 s waits between them (ARC's
    go-retryablehttp defaults)."""
    policy, timeouts = RetryPolicy(), Timeouts()
    budget = timeouts.budget_for(kind)
    attempt = timeouts.for_kind(kind)
    assert budget is not None
    assert attempt.connect is not None
    assert attempt.read is not None
    waits = sum(policy.backoff(i) for i in range(policy.max_retries))
    assert waits == 15
    assert budget >= policy.max_attempts * (attempt.connect + attempt.read) + waits


def test_the_long_poll_budget_exceeds_its_read_timeout() -> None:
    timeouts = Timeouts()
    budget = timeouts.budget_for(CallKind.LONG_POLL)
    read = timeouts.for_kind(CallKind.LONG_POLL).read
    assert budget is not None
    assert read is not None
    assert budget > read


def test_budgets_are_overridden_per_kind_and_kept_by_replace() -> None:
    timeouts = Timeouts().with_budget(CallKind.ADMIN, 5.0).with_budget(CallKind.LONG_POLL, None)
    replaced = timeouts.replace(CallKind.ADMIN, httpx2.Timeout(1.0))
    assert replaced.budget_for(CallKind.ADMIN) == 5.0
    assert replaced.budget_for(CallKind.LONG_POLL) is None
    assert replaced.budget_for(CallKind.MESSAGE_QUEUE) == 120.0
    assert replaced.for_kind(CallKind.ADMIN) == httpx2.Timeout(1.0)
    assert Timeouts().budget_for(CallKind.ADMIN) == 90.0  # the default is not mutated


@pytest.mark.parametrize("budget", [0.0, -1.0])
def test_a_budget_must_be_positive(budget: float) -> None:
    with pytest.raises(ValueError, match="time budget of admin calls"):
        Timeouts().with_budget(CallKind.ADMIN, budget)


def test_the_attempt_timeout_is_capped_by_what_is_left() -> None:
    timeout = httpx2.Timeout(10.0, connect=5.0)
    assert capped_timeout(timeout, math.inf) == timeout
    assert capped_timeout(timeout, 20.0) == timeout
    capped = capped_timeout(timeout, 3.0)
    assert (capped.connect, capped.read, capped.write, capped.pool) == (3.0, 3.0, 3.0, 3.0)
    assert capped_timeout(httpx2.Timeout(None), 2.0) == httpx2.Timeout(2.0)


def test_the_error_names_the_kind_the_budget_and_the_last_status() -> None:
    error = DeadlineExceeded(
        "GET",
        "https://actions.example/_apis/runtime/runnerscalesets/1",
        kind="admin",
        budget=12.0,
        attempts=4,
        last_status=503,
        last_error="last status 503 Service Unavailable",
        wait=8.0,
        left=5.0,
    )
    assert isinstance(error, RetriesExhausted)
    assert (error.attempts, error.last_status, error.kind, error.budget) == (4, 503, "admin", 12)
    assert str(error) == (
        "request GET https://actions.example/_apis/runtime/runnerscalesets/1 failed: giving up "
        "after 4 attempt(s): a 8 s wait would outlast the 12 s budget of admin calls (5 s left); "
        "last status 503 Service Unavailable"
    )


def test_the_error_carries_the_last_body() -> None:
    error = RetriesExhausted(
        "GET",
        "https://actions.example/x",
        5,
        503,
        "last status 503 Service Unavailable",
        body="upstream down",
    )
    assert (error.attempts, error.last_status, error.body) == (5, 503, "upstream down")
    assert str(error).endswith(
        "giving up after 5 attempt(s): last status 503 Service Unavailable: upstream down"
    )
