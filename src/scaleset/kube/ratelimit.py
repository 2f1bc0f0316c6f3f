"""A token bucket on an injected clock: client-side QPS/burst and the work queue's global limit.

``rate`` tokens per second refill up to ``burst``. ``try_take()`` takes a token or says how long
to wait for one; ``take()`` waits that long. A rate of ``math.inf`` never limits.
"""

from __future__ import annotations

import math

from scaleset.clock import Clock, SystemClock


class TokenBucket:
    """Refills continuously at ``rate`` per second, holds at most ``burst`` tokens."""

    def __init__(self, rate: float, burst: int, clock: Clock | None = None) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive (math.inf for no limit)")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock or SystemClock()
        self._tokens = float(burst)
        self._stamp = self._clock.monotonic()

    @property
    def unlimited(self) -> bool:
        return math.isinf(self.rate)

    def _refill(self) -> None:
        now = self._clock.monotonic()
        elapsed = max(0.0, now - self._stamp)
        self._stamp = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.rate)

    def available(self) -> float:
        """Tokens available now (fractional)."""
        if self.unlimited:
            return math.inf
        self._refill()
        return self._tokens

    def try_take(self) -> float:
        """Take a token and return 0.0, or take nothing and return the seconds until one exists."""
        if self.unlimited:
            return 0.0
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate

    def reserve(self) -> float:
        """Take a token now, into debt if need be (client-go's ``Reserve``), and return the
        seconds until it is covered (0 within the burst): the work queue's re-add rate."""
        if self.unlimited:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        return max(0.0, -self._tokens / self.rate)

    async def take(self) -> None:
        """Wait (on the clock) until a token is available, then take it."""
        while True:
            wait = self.try_take()
            if wait <= 0.0:
                return
            await self._clock.sleep(wait)
