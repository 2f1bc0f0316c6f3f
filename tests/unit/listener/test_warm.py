"""The listener's minimum under scheduled warm windows (``scaleset.listener.warm``), pure:

- the minimum in force at the clock's instant, across midnight and on both DST days, and the
  wake-up that lands just past the next edge;
- moving the scaler's minimum keeps the patch sequence, the last target and a pending job
  event (hypothesis), so patch ids only grow across a window's edges.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.api.test_warm_windows_properties import instants, window_lists

from scaleset.api.autoscalingrunnerset import WarmWindowSpec
from scaleset.api.warm_windows import WarmWindow, parse
from scaleset.listener.scaler import Scaler, with_minimum
from scaleset.listener.warm import EDGE_MARGIN, WarmMinimum


def windows(*specs: dict[str, object]) -> tuple[WarmWindow, ...]:
    parsed, problems = parse([WarmWindowSpec.model_validate(s) for s in specs], "w")
    assert problems == []
    return parsed


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


NIGHT = {"start": "22:00", "end": "06:00", "timeZone": "Europe/Berlin", "minRunners": 3}


def test_a_window_crossing_midnight_is_in_force_on_both_days_and_wakes_at_its_edges() -> None:
    warm = WarmMinimum(windows(NIGHT), min_runners=1, max_runners=10)
    before = utc("2027-01-15T20:59:00")  # 21:59 in Berlin
    assert warm.at(before) == (1, None)
    wake = before + timedelta(seconds=warm.seconds_to_edge(before) or 0)
    assert wake == utc("2027-01-15T21:00:00") + timedelta(seconds=EDGE_MARGIN)
    minimum, window = warm.at(wake)
    assert (minimum, window and window.index) == (3, 0)
    assert warm.at(utc("2027-01-15T23:30:00"))[0] == 3, "after midnight in Berlin"
    assert warm.at(utc("2027-01-16T04:59:59"))[0] == 3
    assert warm.at(utc("2027-01-16T05:00:00")) == (1, None), "06:00 in Berlin"


@pytest.mark.parametrize(
    ("spec", "inside", "edge_after", "edge"),
    [
        # 2027-03-28: Berlin skips 02:00-03:00; a window ending in the gap ends at the jump
        (
            {"days": ["Sun"], "start": "01:30", "end": "02:30", "timeZone": "Europe/Berlin"},
            "2027-03-28T00:45:00",
            "2027-03-28T00:45:00",
            "2027-03-28T01:00:00",
        ),
        # 2027-10-31: Berlin repeats 02:00-03:00; 02:30 is its first occurrence, 03:30 after
        # the repeat: the window lasts two hours that night
        (
            {"days": ["Sun"], "start": "02:30", "end": "03:30", "timeZone": "Europe/Berlin"},
            "2027-10-31T01:45:00",
            "2027-10-31T00:00:00",
            "2027-10-31T00:30:00",
        ),
    ],
    ids=["clocks-forward", "clocks-back"],
)
def test_on_a_dst_day_the_minimum_follows_the_wall_clock_rules(
    spec: dict[str, object], inside: str, edge_after: str, edge: str
) -> None:
    warm = WarmMinimum(windows({**spec, "minRunners": 4}), min_runners=0, max_runners=10)
    assert warm.at(utc(inside))[0] == 4
    wait = warm.seconds_to_edge(utc(edge_after))
    assert wait is not None
    assert utc(edge_after) + timedelta(seconds=wait - EDGE_MARGIN) == utc(edge)


def test_the_minimum_is_clipped_to_max_runners_and_no_windows_means_no_edge() -> None:
    warm = WarmMinimum(windows(NIGHT), min_runners=0, max_runners=2)
    assert warm.at(utc("2027-01-15T23:00:00"))[0] == 2
    plain = WarmMinimum((), min_runners=1, max_runners=5)
    assert plain.at(utc("2027-01-15T23:00:00")) == (1, None)
    assert plain.seconds_to_edge(utc("2027-01-15T23:00:00")) is None


def test_a_window_opening_goes_on_from_the_sequence_and_closing_scales_down() -> None:
    warm = WarmMinimum(windows(NIGHT), min_runners=1, max_runners=10)
    scaler = warm.scaler_at(Scaler(1, 10), utc("2027-01-15T20:00:00"))
    first = scaler.desired(0)
    assert (first.target, first.patch_seq) == (1, 0)
    scaler = warm.scaler_at(scaler, utc("2027-01-15T21:00:01"))
    opened = scaler.desired(0)
    assert (opened.target, opened.patch_id, opened.patch_seq) == (3, 1, 1)
    scaler = warm.scaler_at(scaler, utc("2027-01-16T05:00:01"))
    closed = scaler.desired(0)
    assert (closed.target, closed.patch_id) == (1, 2), "a new target: an ordinary patch"
    again = scaler.desired(0)
    assert (again.target, again.patch_id) == (1, 0), "then ARC's force-state patch"


@settings(deadline=None, max_examples=60)
@given(window_lists(), instants, st.integers(0, 6))
def test_the_listener_wakes_just_past_the_edge_and_the_minimum_holds_until_then(
    listed: list[WarmWindow], now: datetime, static_min: int
) -> None:
    warm = WarmMinimum(listed, static_min, max_runners=10)
    here = warm.at(now)
    wait = warm.seconds_to_edge(now)
    if wait is None:
        return
    wake = now + timedelta(seconds=wait)
    assert warm.at(wake - timedelta(seconds=EDGE_MARGIN, microseconds=1)) == here
    assert warm.at(wake) != here, "the wake-up is past the edge"
    scaler = warm.scaler_at(Scaler(static_min, 10), now)
    assert scaler.min_runners == here[0]
    assert warm.changed(scaler, wake) == (warm.at(wake)[0] != here[0])


@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 15), st.booleans()), max_size=30))
def test_moving_the_minimum_keeps_the_sequence_growing_and_the_job_event(
    steps: list[tuple[int, int, bool]],
) -> None:
    scaler = Scaler(0, 8)
    previous = -1
    for minimum, assigned, job_event in steps:
        if job_event:
            scaler.job_event()
        moved = with_minimum(scaler, minimum)
        assert moved.min_runners == min(minimum, 8)
        assert (moved.patch_seq, moved.last_target, moved.dirty) == (
            scaler.patch_seq,
            scaler.last_target,
            scaler.dirty,
        )
        scaler = moved
        decision = scaler.desired(assigned)
        assert decision.patch_seq == previous + 1
        assert decision.target == min(scaler.min_runners + assigned, 8)
        if job_event:
            assert decision.patch_id == decision.patch_seq, "a job event is never forced"
        previous = decision.patch_seq
