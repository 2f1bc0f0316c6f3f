"""Per-credential request limiter: holds after a spent quota, an optional concurrency cap
and an optional token-bucket rate.

GitHub counts a credential's requests, not a call's: once an answer says the quota is spent
(`x-ratelimit-remaining: 0`), every call of that credential is refused until the reset it
names, and one that keeps sending meanwhile may get the credential blocked. So the engine that
met the answer *holds* the service it came from (`hold`), and every other call of the same
credentials to that service waits the hold out before it sends (`held_for`, read by the engine
within each call's time budget). All clients built from the same credentials share one
limiter (`CredentialLimiters`). Time is an injected `scaleset.clock.Clock` (its monotonic time
and sleep), so the rate logic is testable on a ManualClock without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager

from scaleset.clock import Clock, SystemClock


class RequestLimiter:
    """The holds of one credential per service and, when set, at most `max_concurrent` calls in
    flight (None: no cap) and a token bucket of `burst` tokens refilled at `rate_per_second`
    (one token per call)."""

    def __init__(
        self,
        *,
        max_concurrent: int | None = 16,
        rate_per_second: float | None = None,
        burst: int = 10,
        clock: Clock | None = None,
    ) -> None:
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        if rate_per_second is not None and rate_per_second <= 0:
            raise ValueError("rate_per_second must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.max_concurrent = max_concurrent
        self.rate_per_second = rate_per_second
        self.burst = burst
        self._clock: Clock = clock or SystemClock()
        self._slots: asyncio.Semaphore | contextlib.AbstractAsyncContextManager[object] = (
            asyncio.Semaphore(max_concurrent)
            if max_concurrent is not None
            else contextlib.nullcontext()
        )
        self._bucket_lock = asyncio.Lock()
        self._tokens = float(burst)
        self._refilled_at = self._clock.monotonic()
        self.in_flight = 0
        self._held_until: dict[str, float] = {}

    def hold(self, service: str, seconds: float) -> None:
        """A call to `service` was answered with a rate limit asking for `seconds`: no call to
        it starts before they pass. A shorter hold never cuts a longer one short."""
        until = self._clock.monotonic() + seconds
        if until > self._held_until.get(service, -math.inf):
            self._held_until[service] = until

    def held_for(self, service: str) -> float:
        """Seconds left of `service`'s hold (0: none)."""
        until = self._held_until.get(service)
        if until is None:
            return 0.0
        left = until - self._clock.monotonic()
        if left <= 0:
            del self._held_until[service]
            return 0.0
        return left

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
    """One RequestLimiter per credential identity (see `Credentials.identity()`), kept while
    the owner says the identity is in use (`retain`)."""

    def __init__(self, factory: Callable[[], RequestLimiter] = RequestLimiter) -> None:
        self._factory = factory
        self._limiters: dict[str, RequestLimiter] = {}

    def for_identity(self, identity: str) -> RequestLimiter:
        limiter = self._limiters.get(identity)
        if limiter is None:
            limiter = self._limiters[identity] = self._factory()
        return limiter

    def retain(self, identities: Collection[str]) -> None:
        """Forget the limiters of every identity not in `identities` (no client uses them)."""
        for identity in [known for known in self._limiters if known not in identities]:
            del self._limiters[identity]

    def __len__(self) -> int:
        return len(self._limiters)
