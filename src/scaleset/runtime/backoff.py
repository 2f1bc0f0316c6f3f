"""Exponential back-off with jitter, for loops that retry the API server (informers, supervisors).

``next()`` returns the delay before the next attempt and doubles the base up to ``maximum``;
``reset()`` after a success. Jitter spreads reconnecting clients so a restarted API server is not
hit by every informer in the same millisecond.
"""

from __future__ import annotations

import random


class Backoff:
    """``initial * factor**n`` capped at ``maximum``, plus up to ``jitter`` of it."""

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        *,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or maximum < initial or factor < 1.0:
            raise ValueError("need 0 < initial <= maximum and factor >= 1")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._current = initial
        self.failures = 0

    def next(self) -> float:
        """The delay to wait now; the following one will be longer (until ``maximum``)."""
        delay = self._current * (1.0 + self.jitter * self._rng.random())
        self._current = min(self.maximum, self._current * self.factor)
        self.failures += 1
        return min(delay, self.maximum * (1.0 + self.jitter))

    def reset(self) -> None:
        self._current = self.initial
        self.failures = 0
