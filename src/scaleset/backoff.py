"""Exponential back-off: the one formula every wait between retries in the product follows.

``capped_exponential(initial, maximum, n)`` is the pure wait after ``n`` doublings: plans take it
from a count of failures (the AutoscalingRunnerSet's GitHub problems, a listener's failed pods),
the work queue from a key's re-adds, the GitHub client from its retries. ``Backoff`` is the
stateful one with jitter, for loops that retry (informers, supervisors, the listener, retries on
a write Conflict): jitter spreads reconnecting clients, so a restarted server is not hit by every
one of them in the same millisecond.

A count of failures is not bounded (a key can fail for weeks, a status says what it says); the
wait is, and computing it never overflows: ``2.0 ** 1024`` does not fit a float, and a wait that
raised would fail every retry after it.
"""

from __future__ import annotations

import random


def capped_exponential(initial: float, maximum: float, n: int, *, factor: float = 2.0) -> float:
    """``initial * factor ** n``, at most ``maximum``; ``initial`` itself (capped) for ``n <= 0``,
    and ``maximum`` for any ``n`` too large to compute."""
    if n <= 0 or initial <= 0.0:
        return float(min(initial, maximum))
    try:
        grown = initial * factor**n
    except OverflowError:
        return float(maximum)
    return float(min(grown, maximum))


class Backoff:
    """``initial * factor**n`` capped at ``maximum``, plus up to ``jitter`` of it; ``n`` counts
    the ``next()`` calls since the last ``reset()``."""

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
        self.failures = 0

    def next(self) -> float:
        """The delay to wait now; the following one will be longer (until ``maximum``)."""
        base = capped_exponential(self.initial, self.maximum, self.failures, factor=self.factor)
        self.failures += 1
        return base * (1.0 + self.jitter * self._rng.random())

    def reset(self) -> None:
        self.failures = 0
