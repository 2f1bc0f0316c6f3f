"""The request engine: one place that sends, retries, limits, times out, counts and reads.

Every GitHub and Actions call goes through `RequestEngine.send`: the per-credential limiter
(when the call is limited: an answer saying the credential's quota is spent holds the call's
service until the quota's reset for every client sharing the limiter, and a held call waits
within its time budget before it sends — or fails at once when the reset lies beyond it — so
the credential sends nothing GitHub would refuse), the per-kind timeout, the retry policy
(waits slept on the injected `scaleset.clock.Clock`), the per-kind time budget (measured on
its monotonic time), the metrics counter, a full body read with the UTF-8 BOM stripped. It
returns the final Reply whatever its status; callers decide what a status means.

Every answer is bounded: each attempt (connect, send, headers and the whole body) must end
within its kind's attempt deadline (`Timeouts.attempt_deadline_for`, real time like httpx2's
per-read timeouts, which a server dripping one byte at a time never trips) — past it the
attempt is a lost answer (`httpx2.ReadTimeout`), retried like one; and a body over
`max_body_bytes` is refused by its Content-Length or cut off when it passes the limit
(ResponseTooLarge, not retried), so no answer is ever held whole past the limit. The long poll
is bounded the same way with its own longer deadline.

The budget covers one `send` (all its attempts and waits), measured on the clock: a
retry wait that would not end before it runs out is not taken (DeadlineExceeded), and each
attempt's httpx2 timeouts are cut to what is left. A client method that first refreshes the
admin token makes those calls (GITHUB_API kind) as sends of their own, each with its budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx2

from scaleset.clock import Clock, SystemClock
from scaleset.github.error_parsing import quoted_body
from scaleset.github.errors import (
    DeadlineExceeded,
    ResponseLost,
    ResponseTooLarge,
    RetriesExhausted,
    TlsVerificationFailed,
    TransportFailure,
)
from scaleset.github.limiter import RequestLimiter
from scaleset.github.metrics import GitHubApiMetrics
from scaleset.github.reply import Reply, strip_bom
from scaleset.github.retry import (
    Deadline,
    RetryMode,
    RetryPolicy,
    TransportVerdict,
    classify_transport_error,
    is_retryable_reply,
    is_tls_verification_error,
    quota_reset_wait,
)
from scaleset.github.transport import MAX_BODY_BYTES, CallKind, Timeouts, capped_timeout
from scaleset.logs import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class Call:
    """One logical call; `endpoint` is the path template used as the metrics label.

    The repr leaves out headers and content: they carry credentials."""

    method: str
    url: str
    endpoint: str
    kind: CallKind
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # holds credentials
    content: bytes | None = field(default=None, repr=False)
    retry_mode: RetryMode = RetryMode.STANDARD
    limited: bool = True


class RequestEngine:
    """Sends Calls over one httpx2 client with the client's policies."""

    def __init__(
        self,
        http: httpx2.AsyncClient,
        *,
        user_agent: str,
        timeouts: Timeouts,
        retry: RetryPolicy,
        metrics: GitHubApiMetrics,
        limiter: RequestLimiter | None,
        clock: Clock | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.http = http
        self.user_agent = user_agent
        self.timeouts = timeouts
        self.retry = retry
        self.metrics = metrics
        self.limiter = limiter
        self.clock: Clock = clock or SystemClock()
        self.max_body_bytes = max_body_bytes

    async def send(self, call: Call) -> Reply:
        """The final reply of `call` after retries (a retryable status is returned only in
        REGISTRATION mode, so the caller can quote its body)."""
        deadline = Deadline.start(self.clock.monotonic(), self.timeouts.budget_for(call.kind))
        retry_index = 0
        last = _Outcome()
        while True:
            left = deadline.remaining(self.clock.monotonic())
            if left <= 0:  # only after a wait that overran its length
                raise self._deadline_exceeded(call, deadline, retry_index, last)
            held = self._held_for(call)
            if held > 0:
                now = self.clock.monotonic()
                if not deadline.allows_wait(now, held):
                    raise self._deadline_exceeded(call, deadline, retry_index, last, held, now)
                await self.clock.sleep(held)
                continue
            try:
                reply = await self._attempt(call, left)
            except httpx2.TransportError as error:
                self.metrics.record(call.method, call.endpoint, None)
                delay = self.retry.delay_after_transport_error(retry_index, error, call.retry_mode)
                if delay is None:
                    raise self._transport_failure(call, error, retry_index + 1) from None
                last = _Outcome(None, _described(error))
                after = type(error).__name__
            else:
                self.metrics.record(call.method, call.endpoint, reply.status)
                self._hold_after(call, reply)
                delay = self.retry.delay_after_status(
                    retry_index, reply.status, reply.headers, self.clock.time(), call.retry_mode
                )
                if delay is None:
                    if not is_retryable_reply(reply.status, reply.headers, call.retry_mode):
                        return reply
                    if call.retry_mode is RetryMode.REGISTRATION:
                        return reply
                    last = _Outcome.of(reply)
                    raise RetriesExhausted(
                        call.method,
                        call.url,
                        retry_index + 1,
                        last.status,
                        last.error,
                        body=last.body,
                    )
                last = _Outcome.of(reply)
                after = f"status {reply.status}"
            now = self.clock.monotonic()
            if not deadline.allows_wait(now, delay):
                raise self._deadline_exceeded(call, deadline, retry_index + 1, last, delay, now)
            log.info(
                "retrying GitHub call",
                method=call.method,
                endpoint=call.endpoint,
                delay_seconds=delay,
                after=after,
                attempt=retry_index + 1,
                max_attempts=self.retry.max_attempts,
            )
            await self.clock.sleep(delay)
            retry_index += 1

    def _held_for(self, call: Call) -> float:
        """Seconds the call's service is held for its credentials (0: send now)."""
        if not call.limited or self.limiter is None:
            return 0.0
        return self.limiter.held_for(call.kind.value)

    def _hold_after(self, call: Call, reply: Reply) -> None:
        """An answer saying the credential's quota is spent (403 or 429 with
        `x-ratelimit-remaining: 0`) holds the service until the quota's reset for every call
        of these credentials, not only for this one: each would be refused until then. A
        secondary rate limit's `Retry-After` is the refused call's own wait (GitHub: do not
        retry the request before it) and holds nobody else: holding every call for it left
        the JIT ceiling idle (bench/results/scaleup.md in git history, 2026-12-05)."""
        if not call.limited or self.limiter is None or reply.status not in (403, 429):
            return
        wait = quota_reset_wait(reply.headers, self.clock.time())
        if wait is None or wait <= 0:
            return
        seconds = min(wait, self.retry.retry_after_max)
        self.limiter.hold(call.kind.value, seconds)
        log.info(
            "GitHub quota spent: holding this credential's calls until its reset",
            service=call.kind.value,
            endpoint=call.endpoint,
            status=reply.status,
            hold_seconds=seconds,
        )

    async def _attempt(self, call: Call, left: float) -> Reply:
        """One request and its complete answer, within the attempt deadline of its kind (cut
        to what is left of the call's budget) and the body limit."""
        deadline = min(self.timeouts.attempt_deadline_for(call.kind), left)
        headers = {"User-Agent": self.user_agent, **call.headers}
        request = self.http.build_request(
            call.method,
            call.url,
            headers=headers,
            content=call.content,
            timeout=capped_timeout(self.timeouts.for_kind(call.kind), left),
        )
        slot = (
            self.limiter.slot()
            if call.limited and self.limiter is not None
            else contextlib.nullcontext()
        )
        async with slot:  # the wait for a slot is the limiter's, not the attempt's
            try:
                async with asyncio.timeout(None if math.isinf(deadline) else deadline):
                    response = await self.http.send(request, stream=True)
                    try:
                        body = await self._read_body(call, response)
                    finally:
                        await response.aclose()
            except TimeoutError:
                # httpx2's own timeouts raise httpx2 errors; this is the whole-attempt deadline.
                # The request may have been processed: a lost answer, like a read timeout.
                raise httpx2.ReadTimeout(
                    f"no complete answer within the {deadline:g} s deadline of one "
                    f"{call.kind.value} attempt",
                    request=request,
                ) from None
        return Reply(
            method=call.method,
            url=call.url,
            status=response.status_code,
            reason=response.reason_phrase,
            headers=response.headers,
            body=strip_bom(body),
            sent_secrets=_credentials_of(call.headers),
        )

    async def _read_body(self, call: Call, response: httpx2.Response) -> bytes:
        """The decoded body, refused unread when its Content-Length is over the limit and cut
        off as soon as it passes it (a body without a length included)."""
        limit = self.max_body_bytes
        announced = _content_length(response.headers)
        if announced is not None and announced > limit:
            raise self._too_large(call, response, announced)
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise self._too_large(call, response, None)
        return bytes(body)

    def _too_large(
        self, call: Call, response: httpx2.Response, announced: int | None
    ) -> ResponseTooLarge:
        self.metrics.record(call.method, call.endpoint, response.status_code)
        log.warning(
            "GitHub answer larger than the body limit; not read",
            method=call.method,
            endpoint=call.endpoint,
            status=response.status_code,
            announced_bytes=announced,
            limit_bytes=self.max_body_bytes,
        )
        return ResponseTooLarge(
            call.method, call.url, response.status_code, self.max_body_bytes, announced
        )

    def _deadline_exceeded(
        self,
        call: Call,
        deadline: Deadline,
        attempts: int,
        last: _Outcome,
        wait: float = 0.0,
        now: float | None = None,
    ) -> DeadlineExceeded:
        at = self.clock.monotonic() if now is None else now
        left = deadline.remaining(at)
        log.warning(
            "GitHub call ran out of its time budget",
            method=call.method,
            endpoint=call.endpoint,
            kind=call.kind.value,
            budget_seconds=deadline.budget,
            wait_seconds=wait,
            left_seconds=left,
            attempts=attempts,
            last_status=last.status,
        )
        return DeadlineExceeded(
            call.method,
            call.url,
            kind=call.kind.value,
            budget=deadline.budget if deadline.budget is not None else float("inf"),
            attempts=attempts,
            last_status=last.status,
            last_error=last.error or "no attempt was made",
            wait=wait,
            left=left,
            body=last.body,
        )

    def _transport_failure(
        self, call: Call, error: httpx2.TransportError, attempts: int
    ) -> TransportFailure:
        described = _described(error)
        if is_tls_verification_error(error):
            return TlsVerificationFailed(call.method, call.url, described)
        verdict = classify_transport_error(error)
        if verdict is TransportVerdict.FAIL:
            return TransportFailure(call.method, call.url, described)
        if verdict is TransportVerdict.LOST and call.retry_mode is RetryMode.UNSENT_ONLY:
            return ResponseLost(
                call.method,
                call.url,
                f"{described}; the server may have processed it, so it is not repeated",
            )
        return RetriesExhausted(call.method, call.url, attempts, None, described)


@dataclass(frozen=True)
class _Outcome:
    """What the last attempt of a call gave: a status and its (quoted, redacted) body, or a
    network error (status None)."""

    status: int | None = None
    error: str = ""
    body: str = ""

    @classmethod
    def of(cls, reply: Reply) -> _Outcome:
        return cls(reply.status, f"last status {reply.status} {reply.reason}", quoted_body(reply))


def _described(error: httpx2.TransportError) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _content_length(headers: httpx2.Headers) -> int | None:
    value = headers.get("Content-Length")
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip())


def _credentials_of(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The secret parts of a request's Authorization header (the value after the scheme)."""
    found = []
    for name, value in headers.items():
        if name.lower() == "authorization":
            found.append(value.partition(" ")[2] or value)
    return tuple(found)
