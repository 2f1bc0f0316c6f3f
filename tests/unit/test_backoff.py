"""The one exponential back-off: its wait is capped for any count of failures, and grows."""

from __future__ import annotations

import math
import random

from hypothesis import given
from hypothesis import strategies as st

from scaleset.backoff import Backoff, capped_exponential

initials = st.floats(min_value=1e-3, max_value=1e3)
caps = st.floats(min_value=1e-3, max_value=1e6)
counts = st.integers(min_value=-3, max_value=10**7)


@given(initials, caps, counts)
def test_the_wait_is_between_the_first_one_and_the_cap_for_any_count(
    initial: float, cap: float, n: int
) -> None:
    maximum = max(initial, cap)
    wait = capped_exponential(initial, maximum, n)
    assert initial <= wait <= maximum


@given(initials, caps, counts)
def test_the_wait_never_shrinks_as_failures_grow(initial: float, cap: float, n: int) -> None:
    maximum = max(initial, cap)
    assert capped_exponential(initial, maximum, n) <= capped_exponential(initial, maximum, n + 1)


def test_the_wait_doubles_until_the_cap_and_stays_there_past_a_float() -> None:
    assert [capped_exponential(1.0, 8.0, n) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert capped_exponential(0.005, 1000.0, 1_024) == 1000.0
    assert capped_exponential(5.0, math.inf, 2_000) == math.inf
    assert capped_exponential(0.0, 30.0, 2_000) == 0.0, "no wait stays no wait"


def test_a_backoff_after_thousands_of_failures_waits_the_cap_with_its_jitter() -> None:
    backoff = Backoff(1.0, 8.0, jitter=0.5, rng=random.Random(0))
    delays = [backoff.next() for _ in range(2_000)]
    assert all(8.0 <= d < 12.0 for d in delays[3:])
    assert backoff.failures == 2_000
