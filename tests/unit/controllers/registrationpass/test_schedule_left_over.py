"""A pass that reached its deletion cap is followed ``min_gap`` later, not an interval later:
the cap bounds how fast passes delete, not how long a leak found may stay (L6)."""

from __future__ import annotations

from tests.unit.controllers.registrationpass.test_schedule import (
    AGREE,
    EARLY,
    INTERVAL,
    after_first_pass,
)

from scaleset.controllers.registrationpass.schedule import RunPass, WaitFor, decide, left_over


def test_the_pass_after_one_that_reached_its_cap_comes_min_gap_later() -> None:
    watch = left_over(after_first_pass())
    watch, decision = decide(watch, AGREE, EARLY.min_gap - 1.0, INTERVAL, EARLY)
    assert decision == WaitFor(1.0)
    watch, decision = decide(watch, AGREE, EARLY.min_gap, INTERVAL, EARLY)
    assert decision == RunPass(early=True, left_over=True)
    assert not watch.left_over
    assert watch.streak == 0  # not a disagreement's early pass: no back-off for the next one
    _, decision = decide(watch, AGREE, 2 * EARLY.min_gap, INTERVAL, EARLY)
    assert isinstance(decision, WaitFor)  # one that did not reach its cap: the interval again
    assert decision.seconds == INTERVAL - EARLY.min_gap


def test_without_a_cap_reached_the_next_pass_is_an_interval_later() -> None:
    _, decision = decide(after_first_pass(), AGREE, EARLY.min_gap, INTERVAL, EARLY)
    assert decision == WaitFor(INTERVAL - EARLY.min_gap)
