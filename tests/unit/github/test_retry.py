"""Retry decisions: counts, backoff, Retry-After, modes, transport errors."""

from __future__ import annotations

import ssl
from email.utils import formatdate

import httpx2
import pytest

from scaleset.github.retry import (
    RetryMode,
    RetryPolicy,
    TransportVerdict,
    classify_transport_error,
    is_retryable_reply,
    is_retryable_status,
    parse_retry_after,
)

NOW = 1_750_000_000.0
POLICY = RetryPolicy()


def test_defaults_match_retryablehttp() -> None:
    assert (POLICY.max_retries, POLICY.max_attempts, POLICY.wait_min, POLICY.wait_max) == (
        4,
        5,
        1.0,
        30.0,
    )
    assert [POLICY.backoff(i) for i in range(7)] == [1, 2, 4, 8, 16, 30, 30]


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (0, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (501, False),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (409, False),
        (200, False),
        (202, False),
    ],
)
def test_retryable_statuses(status: int, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable


def test_registration_mode_also_retries_401_and_403() -> None:
    assert is_retryable_status(401, RetryMode.REGISTRATION)
    assert is_retryable_status(403, RetryMode.REGISTRATION)
    assert not is_retryable_status(404, RetryMode.REGISTRATION)


def test_delays_until_the_bound_then_none() -> None:
    delays = [POLICY.delay_after_status(i, 503, None, NOW) for i in range(6)]
    assert delays == [1, 2, 4, 8, None, None]


def test_non_retryable_status_gets_no_delay() -> None:
    assert POLICY.delay_after_status(0, 400, None, NOW) is None


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_seconds_overrides_backoff(status: int) -> None:
    assert POLICY.delay_after_status(0, status, {"Retry-After": "7"}, NOW) == 7
    assert POLICY.delay_after_status(3, status, {"Retry-After": "0"}, NOW) == 0


def test_retry_after_is_ignored_on_other_5xx() -> None:
    assert POLICY.delay_after_status(0, 500, {"Retry-After": "7"}, NOW) == 1


def test_retry_after_http_date_uses_the_given_wall_time() -> None:
    header = formatdate(NOW + 12, usegmt=True)
    assert POLICY.delay_after_status(0, 429, {"Retry-After": header}, NOW) == 12
    assert parse_retry_after(formatdate(NOW - 5, usegmt=True), NOW) == 0


def test_retry_after_is_capped_and_garbage_falls_back_to_backoff() -> None:
    capped = RetryPolicy(retry_after_max=60)
    assert capped.delay_after_status(0, 429, {"Retry-After": "86400"}, NOW) == 60
    assert POLICY.delay_after_status(1, 429, {"Retry-After": "soon"}, NOW) == 2


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_with_retry_after_is_retried(status: int) -> None:
    """GitHub's secondary rate limits answer 403 (or 429) with Retry-After: wait that long."""
    assert is_retryable_reply(status, {"retry-after": "30"})
    assert POLICY.delay_after_status(0, status, {"Retry-After": "30"}, NOW) == 30
    assert POLICY.delay_after_status(4, status, {"Retry-After": "30"}, NOW) is None


def test_exhausted_primary_rate_limit_waits_until_the_reset() -> None:
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 42)}
    assert is_retryable_reply(403, headers)
    assert POLICY.delay_after_status(0, 403, headers, NOW) == 42
    assert POLICY.delay_after_status(0, 429, headers, NOW) == 42
    assert POLICY.delay_after_status(0, 403, {**headers, "X-RateLimit-Reset": "x"}, NOW) == 1


def test_a_plain_403_is_a_refusal_not_a_rate_limit() -> None:
    assert not is_retryable_reply(403, {})
    assert not is_retryable_reply(403, {"X-RateLimit-Remaining": "4999"})
    assert POLICY.delay_after_status(0, 403, {"X-RateLimit-Remaining": "4999"}, NOW) is None
    assert not is_retryable_reply(404, {"Retry-After": "5"})


def test_shrunk_policy_for_tests() -> None:
    policy = RetryPolicy(max_retries=1, wait_min=0.001, wait_max=0.001)
    assert policy.delay_after_status(0, 500, None, NOW) == 0.001
    assert policy.delay_after_status(1, 500, None, NOW) is None


def test_invalid_policy() -> None:
    with pytest.raises(ValueError, match="retry policy"):
        RetryPolicy(max_retries=-1)


REQUEST = httpx2.Request("POST", "https://x/")


def tls_failure() -> httpx2.ConnectError:
    error = httpx2.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    error.__cause__ = ssl.SSLCertVerificationError("certificate verify failed")
    return error


@pytest.mark.parametrize(
    ("error", "verdict"),
    [
        (httpx2.ConnectError("refused", request=REQUEST), TransportVerdict.RETRY),
        (httpx2.ConnectTimeout("slow", request=REQUEST), TransportVerdict.RETRY),
        (httpx2.PoolTimeout("pool", request=REQUEST), TransportVerdict.RETRY),
        (httpx2.ReadTimeout("read", request=REQUEST), TransportVerdict.LOST),
        (httpx2.RemoteProtocolError("dropped", request=REQUEST), TransportVerdict.LOST),
        (httpx2.ReadError("reset", request=REQUEST), TransportVerdict.LOST),
        (httpx2.WriteError("reset", request=REQUEST), TransportVerdict.LOST),
        (httpx2.UnsupportedProtocol("ftp", request=REQUEST), TransportVerdict.FAIL),
        (httpx2.LocalProtocolError("bad header", request=REQUEST), TransportVerdict.FAIL),
        (tls_failure(), TransportVerdict.FAIL),
    ],
)
def test_transport_error_verdicts(error: httpx2.TransportError, verdict: TransportVerdict) -> None:
    assert classify_transport_error(error) is verdict


def test_lost_response_is_retried_except_for_unsent_only_calls() -> None:
    lost = httpx2.ReadTimeout("read", request=REQUEST)
    assert POLICY.delay_after_transport_error(0, lost) == 1
    assert POLICY.delay_after_transport_error(0, lost, RetryMode.UNSENT_ONLY) is None
    unsent = httpx2.ConnectError("refused", request=REQUEST)
    assert POLICY.delay_after_transport_error(0, unsent, RetryMode.UNSENT_ONLY) == 1
    assert POLICY.delay_after_transport_error(4, unsent) is None


def test_tls_failures_are_never_retried() -> None:
    assert POLICY.delay_after_transport_error(0, tls_failure()) is None
