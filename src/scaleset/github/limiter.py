"""Per-credential request limiter: a concurrency cap plus an optional token-bucket rate.

All clients built from the same credentials should share one limiter (see CredentialLimiters),
so a burst of reconciles cannot exhaust one token's GitHub quota or open hundreds of connections.
Time is an injected `scaleset.clock.Clock` (its monotonic time and sleep), so the rate logic is
testable on a ManualClock without waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from scaleset.clock import Clock, SystemClock


class RequestLimiter:
    """At most `max_concurrent` calls in flight and, if `rate_per_second` is set, a token bucket
    of `burst` tokens refilled at that rate (one token per call)."""

    def __init__(
        self,
        *,
        max_concurrent: int = 16,
        rate_per_second: float | None = None,
        burst: int = 10,
        clock: Clock | None = None,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        if rate_per_second is not None and rate_per_second <= 0:
            raise ValueError("rate_per_second must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.max_concurrent = max_concurrent
        self.rate_per_second = rate_per_second
        self.burst = burst
        self._clock: Clock = clock or SystemClock()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._bucket_lock = asyncio.Lock()
        self._tokens = float(burst)
        self._refilled_at = self._clock.monotonic()
        self.in_flight = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one concurrency slot (and spend one rate token) for the duration of a call."""
        await self._take_token()
        async with self._slots:
            self.in_flight += 1
            try:
                yield
            finally:
                self.in_flight -= 1

    async def _take_token(self) -> None:
        rate = self.rate_per_second
        if rate is None:
            return
        async with self._bucket_lock:  # first come, first served
            while True:
                now = self._clock.monotonic()
                elapsed = max(0.0, now - self._refilled_at)
                self._tokens = min(float(self.burst), self._tokens + elapsed * rate)
                self._refilled_at = now
                if self._tokens >= 1.0:
                    self._tokens -= 1.0
                    return
                await self._clock.sleep((1.0 - self._tokens) / rate)


class CredentialLimiters:
    """One RequestLimiter per credential identity (see `Credentials.identity()`)."""

    def __init__(self, factory: Callable[[], RequestLimiter] = RequestLimiter) -> None:
        self._factory = factory
        self._limiters: dict[str, RequestLimiter] = {}

    def for_identity(self, identity: str) -> RequestLimiter:
        limiter = self._limiters.get(identity)
        if limiter is None:
            limiter = self._limiters[identity] = self._factory()
        return limiter
