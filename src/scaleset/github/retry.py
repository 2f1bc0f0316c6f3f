"""When to retry a call and how long to wait first — pure decisions.

Shaped like go-retryablehttp as both Go clients configure it: at most `max_retries` retries
(4, so 5 attempts); retry transport errors, 429, and 5xx except 501; wait `wait_min * 2**i`
capped at `wait_max` before retry i (1, 2, 4, 8 s), except that 429/503 with `Retry-After` wait
exactly that (capped at `retry_after_max`, a bound the Go client lacks). GitHub's rate limits
are retried too: a 403 or 429 carrying `Retry-After` (secondary rate limit) waits that long, one
with `x-ratelimit-remaining: 0` waits until `x-ratelimit-reset`; a 403 without either is a
refusal, not retried. Two variants:

* REGISTRATION — /actions/runner-registration also retries 401 and 403 (a fresh registration
  token can be rejected briefly);
* UNSENT_ONLY — message-session creation and JIT config generation: a transport error is
  retried only when the request certainly never reached the server; after a lost response (a
  read timeout, a cut connection) a repeat would meet our own session or runner (409), so the
  caller gets ResponseLost instead and recovers knowingly.

TLS verification failures, bad URLs and invalid headers are never retried.

On top of the attempt bound, each call has a time budget (`Deadline`, per kind of call, set on
`Timeouts`, measured on the clock's monotonic time): a wait that would not end before the budget
runs out is not taken, so the call fails at once instead of sleeping (a Retry-After longer than
what is left included). The default budgets leave room for every attempt and wait above.
"""

from __future__ import annotations

import enum
import math
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx2

from scaleset.backoff import capped_exponential


class RetryMode(enum.Enum):
    STANDARD = "standard"
    REGISTRATION = "registration"
    UNSENT_ONLY = "unsent-only"


class TransportVerdict(enum.Enum):
    """What a transport error allows."""

    RETRY = "retry"
    FAIL = "fail"  # permanent: TLS verification, bad URL, invalid header
    LOST = "lost"  # the request may have been processed; repeat only if the call is idempotent


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds and backoff of retries; tests shrink the waits (e.g. 1 ms)."""

    max_retries: int = 4
    wait_min: float = 1.0
    wait_max: float = 30.0
    retry_after_max: float = 300.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.wait_min < 0 or self.wait_max < self.wait_min:
            raise ValueError("retry policy needs max_retries >= 0 and 0 <= wait_min <= wait_max")

    @property
    def max_attempts(self) -> int:
        return self.max_retries + 1

    def backoff(self, retry_index: int) -> float:
        """Exponential wait before retry `retry_index` (0-based)."""
        return capped_exponential(self.wait_min, self.wait_max, retry_index)

    def delay_after_status(
        self,
        retry_index: int,
        status: int,
        headers: Mapping[str, str] | None,
        now: float,
        mode: RetryMode = RetryMode.STANDARD,
    ) -> float | None:
        """Seconds to wait before retrying after `status` (answer `headers`, wall time `now`),
        or None when it must not be retried."""
        if retry_index >= self.max_retries or not is_retryable_reply(status, headers, mode):
            return None
        if status in (403, 429, 503):
            seconds = server_requested_wait(headers, now)
            if seconds is not None:
                return min(seconds, self.retry_after_max)
        return self.backoff(retry_index)

    def delay_after_transport_error(
        self, retry_index: int, error: httpx2.TransportError, mode: RetryMode = RetryMode.STANDARD
    ) -> float | None:
        """Seconds to wait before retrying after `error`, or None when it must not be retried."""
        if retry_index >= self.max_retries:
            return None
        verdict = classify_transport_error(error)
        if verdict is TransportVerdict.RETRY:
            return self.backoff(retry_index)
        if verdict is TransportVerdict.LOST and mode is not RetryMode.UNSENT_ONLY:
            return self.backoff(retry_index)
        return None


@dataclass(frozen=True)
class Deadline:
    """When one call's time budget ends, on the client's clock; no budget: never."""

    budget: float | None
    ends_at: float

    @classmethod
    def start(cls, now: float, budget: float | None) -> Deadline:
        return cls(budget, math.inf if budget is None else now + budget)

    def remaining(self, now: float) -> float:
        """Seconds left at `now` (infinite without a budget; <= 0 once it has run out)."""
        return self.ends_at - now

    def allows_wait(self, now: float, delay: float) -> bool:
        """True when a wait of `delay` from `now` ends before the budget does, leaving time
        for another attempt."""
        return now + delay < self.ends_at


def is_retryable_status(status: int, mode: RetryMode = RetryMode.STANDARD) -> bool:
    """Retryable by status alone (see `is_retryable_reply` for rate-limited 403s)."""
    if status == 0 or status == 429 or (status >= 500 and status != 501):
        return True
    return mode is RetryMode.REGISTRATION and status in (401, 403)


def is_retryable_reply(
    status: int, headers: Mapping[str, str] | None, mode: RetryMode = RetryMode.STANDARD
) -> bool:
    """Retryable by status, or a 403 that GitHub marks as a rate limit."""
    return is_retryable_status(status, mode) or (status == 403 and is_rate_limited(headers))


def is_rate_limited(headers: Mapping[str, str] | None) -> bool:
    """The answer tells us to come back later: `Retry-After`, or no requests left."""
    return _header(headers, "retry-after") is not None or (
        _header(headers, "x-ratelimit-remaining") == "0"
        and _header(headers, "x-ratelimit-reset") is not None
    )


def server_requested_wait(headers: Mapping[str, str] | None, now: float) -> float | None:
    """The wait the answer asks for: `Retry-After`, else until `x-ratelimit-reset` (epoch
    seconds) when `x-ratelimit-remaining` is 0; None when it asks for none (or is unreadable)."""
    retry_after = _header(headers, "retry-after")
    if retry_after is not None:
        return parse_retry_after(retry_after, now)
    return quota_reset_wait(headers, now)


def quota_reset_wait(headers: Mapping[str, str] | None, now: float) -> float | None:
    """Seconds until the credential's quota resets when the answer says it is spent
    (`x-ratelimit-remaining: 0` and `x-ratelimit-reset`, epoch seconds); None otherwise."""
    reset = _header(headers, "x-ratelimit-reset")
    if _header(headers, "x-ratelimit-remaining") != "0" or reset is None:
        return None
    text = reset.strip()
    return max(0.0, float(text) - now) if text.isdigit() else None


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    """A header by case-insensitive name."""
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def classify_transport_error(error: httpx2.TransportError) -> TransportVerdict:
    """Permanent, safe to repeat (request never sent), or possibly processed."""
    if is_tls_verification_error(error):
        return TransportVerdict.FAIL
    if isinstance(error, httpx2.UnsupportedProtocol | httpx2.LocalProtocolError):
        return TransportVerdict.FAIL
    if isinstance(error, httpx2.ConnectError | httpx2.ConnectTimeout | httpx2.PoolTimeout):
        return TransportVerdict.RETRY
    if isinstance(error, httpx2.ProxyError):
        return TransportVerdict.RETRY
    return TransportVerdict.LOST


def is_tls_verification_error(error: BaseException) -> bool:
    """True when `error` (or its cause chain) is a certificate verification failure."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLCertVerificationError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return "CERTIFICATE_VERIFY_FAILED" in str(error)


def parse_retry_after(value: str, now: float) -> float | None:
    """`Retry-After` as seconds from `now` (delta-seconds or HTTP-date); None if unreadable."""
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now)
