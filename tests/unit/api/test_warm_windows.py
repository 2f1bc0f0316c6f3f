"""The window arithmetic on worked examples: midnight, the week's wrap, both DST transitions,
parsing and the problems that name their field (scheduled warm capacity)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scaleset.api.autoscalingrunnerset import WarmWindowSpec
from scaleset.api.warm_windows import (
    WarmWindow,
    find_overlap,
    local_to_utc,
    minimum_at,
    next_edge,
    occurrences,
    overlap_problem,
    parse,
)

PATH = "spec.warmWindows"


def window(
    days: list[str] | None,
    start: str,
    end: str,
    zone: str = "UTC",
    minimum: int = 3,
) -> WarmWindowSpec:
    return WarmWindowSpec(days=days, start=start, end=end, time_zone=zone, min_runners=minimum)


def windows(*specs: WarmWindowSpec) -> tuple[WarmWindow, ...]:
    parsed, problems = parse(list(specs), PATH)
    assert problems == []
    return parsed


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# --- parsing -----------------------------------------------------------------------------------


def test_days_accept_names_and_ranges_and_default_to_every_day() -> None:
    (weekdays, weekend, every) = windows(
        window(["Mon-Fri"], "08:00", "18:00"),
        window(["sat", "SUN"], "08:00", "18:00"),
        window(None, "20:00", "21:00"),
    )
    assert weekdays.days == frozenset({0, 1, 2, 3, 4})
    assert weekend.days == frozenset({5, 6})
    assert every.days == frozenset(range(7))
    (wrapping,) = windows(window(["Sat-Mon"], "08:00", "09:00"))
    assert wrapping.days == frozenset({5, 6, 0})


@pytest.mark.parametrize(
    ("spec", "field", "text"),
    [
        (window(["Mon", "Funday"], "08:00", "18:00"), f"{PATH}[0].days[1]", "must be a day"),
        (window([], "08:00", "18:00"), f"{PATH}[0].days", "lists no day"),
        (window(None, "8:00", "18:00"), f"{PATH}[0].start", "HH:MM"),
        (window(None, "24:00", "18:00"), f"{PATH}[0].start", "HH:MM"),
        (window(None, "08:00", "24:01"), f"{PATH}[0].end", "HH:MM"),
        (window(None, "08:00", "08:00"), f"{PATH}[0].end", "needs a length"),
        (window(None, "08:00", "18:00", zone="Mars/Olympus"), f"{PATH}[0].timeZone", "unknown"),
        (window(None, "08:00", "18:00", zone="../../etc/passwd"), f"{PATH}[0].timeZone", "unknown"),
        (WarmWindowSpec(start="08:00", end="09:00", min_runners=1), f"{PATH}[0].timeZone", "req"),
        (WarmWindowSpec(start="08:00", end="09:00", time_zone="UTC"), f"{PATH}[0].minRunners", "r"),
        (window(None, "08:00", "18:00", minimum=-1), f"{PATH}[0].minRunners", "0 or more"),
    ],
)
def test_a_bad_window_names_its_field(spec: WarmWindowSpec, field: str, text: str) -> None:
    parsed, problems = parse([spec], PATH)
    assert parsed == ()
    assert [problem.field for problem in problems] == [field]
    assert text in problems[0].message


def test_a_window_minimum_above_max_runners_names_its_min_runners() -> None:
    _, problems = parse([window(None, "08:00", "18:00", minimum=9)], PATH, max_runners=4)
    assert [(p.field, p.message) for p in problems] == [
        (f"{PATH}[0].minRunners", "must not be greater than spec.maxRunners (9 > 4)")
    ]


def test_the_whole_day_is_00_00_to_24_00() -> None:
    (day,) = windows(window(["Tue"], "00:00", "24:00"))
    assert minimum_at([day], 0, utc(2027, 1, 5, 0, 0)) == (3, day)
    assert minimum_at([day], 0, utc(2027, 1, 5, 23, 59)) == (3, day)
    assert minimum_at([day], 0, utc(2027, 1, 6, 0, 0)) == (0, None)


# --- midnight and the week's wrap --------------------------------------------------------------


def test_a_window_crossing_midnight_ends_on_the_next_day() -> None:
    (night,) = windows(window(["Fri"], "22:00", "02:00", minimum=4))
    friday_late, saturday_early = utc(2027, 1, 8, 23, 0), utc(2027, 1, 9, 1, 59)
    assert minimum_at([night], 1, friday_late) == (4, night)
    assert minimum_at([night], 1, saturday_early) == (4, night)
    assert minimum_at([night], 1, utc(2027, 1, 9, 2, 0)) == (1, None)
    assert minimum_at([night], 1, utc(2027, 1, 9, 23, 0)) == (1, None), "Saturday is not a day"
    assert minimum_at([night], 1, utc(2027, 1, 8, 1, 0)) == (1, None), "Thursday is not a day"


def test_sunday_night_wraps_into_monday() -> None:
    (wrap,) = windows(window(["Sun"], "22:00", "03:00", minimum=2))
    sunday = utc(2027, 1, 10, 21, 0)
    assert minimum_at([wrap], 0, sunday) == (0, None)
    assert next_edge([wrap], sunday) == utc(2027, 1, 10, 22, 0)
    monday = utc(2027, 1, 11, 2, 30)
    assert monday.weekday() == 0
    assert minimum_at([wrap], 0, monday) == (2, wrap)
    assert next_edge([wrap], monday) == utc(2027, 1, 11, 3, 0)
    assert next_edge([wrap], utc(2027, 1, 11, 3, 0)) == utc(2027, 1, 17, 22, 0), "a week later"


def test_next_edge_is_the_window_edge_in_utc_for_a_zone() -> None:
    (office,) = windows(window(["Mon-Fri"], "08:00", "18:00", zone="Europe/Berlin", minimum=5))
    monday_early = utc(2027, 1, 4, 6, 0)  # 07:00 in Berlin (CET, +01:00)
    assert minimum_at([office], 1, monday_early) == (1, None)
    assert next_edge([office], monday_early) == utc(2027, 1, 4, 7, 0)
    assert next_edge([office], utc(2027, 1, 4, 7, 0)) == utc(2027, 1, 4, 17, 0)
    friday_evening = utc(2027, 1, 8, 17, 0)
    assert next_edge([office], friday_evening) == utc(2027, 1, 11, 7, 0), "over the weekend"


def test_adjacent_windows_are_two_edges_even_with_the_same_minimum() -> None:
    morning, afternoon = windows(
        window(None, "08:00", "12:00", minimum=3), window(None, "12:00", "17:00", minimum=3)
    )
    noon = utc(2027, 1, 4, 12, 0)
    assert next_edge([morning, afternoon], utc(2027, 1, 4, 9, 0)) == noon
    assert minimum_at([morning, afternoon], 0, noon) == (3, afternoon)
    assert find_overlap([morning, afternoon]) is None


def test_no_windows_no_edge_and_the_static_minimum() -> None:
    assert minimum_at([], 2, utc(2027, 1, 4)) == (2, None)
    assert next_edge([], utc(2027, 1, 4)) is None


def test_a_window_covering_all_time_has_no_edge() -> None:
    (always,) = windows(window(None, "00:00", "24:00"))
    assert next_edge([always], utc(2027, 1, 4, 12, 0)) is None
    assert minimum_at([always], 0, utc(2027, 1, 4, 12, 0)) == (3, always)


# --- DST ---------------------------------------------------------------------------------------
# Europe/Berlin 2027: clocks go forward on Sunday 28 March at 02:00 CET (01:00Z) to 03:00 CEST,
# and back on Sunday 31 October at 03:00 CEST (01:00Z) to 02:00 CET.


def test_a_skipped_local_time_is_the_instant_of_the_jump() -> None:
    jump = utc(2027, 3, 28, 1, 0)
    assert local_to_utc(datetime(2027, 3, 28, 2, 0), "Europe/Berlin") == jump
    assert local_to_utc(datetime(2027, 3, 28, 2, 30), "Europe/Berlin") == jump
    assert local_to_utc(datetime(2027, 3, 28, 3, 0), "Europe/Berlin") == jump
    assert local_to_utc(datetime(2027, 3, 28, 1, 59), "Europe/Berlin") == utc(2027, 3, 28, 0, 59)


def test_a_repeated_local_time_is_its_first_occurrence() -> None:
    assert local_to_utc(datetime(2027, 10, 31, 2, 30), "Europe/Berlin") == utc(2027, 10, 31, 0, 30)
    assert local_to_utc(datetime(2027, 10, 31, 3, 0), "Europe/Berlin") == utc(2027, 10, 31, 2, 0)


def test_spring_forward_a_window_into_the_skipped_hour_ends_at_the_jump() -> None:
    (night,) = windows(window(["Sun"], "01:30", "02:30", zone="Europe/Berlin", minimum=2))
    (occurrence,) = occurrences([night], utc(2027, 3, 28), utc(2027, 3, 29))
    assert (occurrence.start, occurrence.end) == (utc(2027, 3, 28, 0, 30), utc(2027, 3, 28, 1, 0))
    assert minimum_at([night], 0, utc(2027, 3, 28, 0, 45)) == (2, night)
    assert minimum_at([night], 0, utc(2027, 3, 28, 1, 0)) == (0, None)
    assert next_edge([night], utc(2027, 3, 28, 0, 45)) == utc(2027, 3, 28, 1, 0)
    (normal,) = occurrences([night], utc(2027, 4, 4), utc(2027, 4, 5))
    assert normal.end - normal.start == timedelta(hours=1), "a normal Sunday: one hour"


def test_spring_forward_a_window_inside_the_skipped_hour_does_not_happen() -> None:
    (gap,) = windows(window(["Sun"], "02:10", "02:50", zone="Europe/Berlin"))
    assert occurrences([gap], utc(2027, 3, 28), utc(2027, 3, 29)) == []
    assert next_edge([gap], utc(2027, 3, 27, 12, 0)) == utc(2027, 4, 4, 0, 10), "a week on"


def test_fall_back_a_window_over_the_repeated_hour_lasts_its_real_length() -> None:
    (night,) = windows(window(["Sun"], "01:30", "02:30", zone="Europe/Berlin", minimum=2))
    (occurrence,) = occurrences([night], utc(2027, 10, 30, 12), utc(2027, 11, 1))
    assert occurrence.start == utc(2027, 10, 30, 23, 30), "01:30 CEST"
    assert occurrence.end == utc(2027, 10, 31, 0, 30), "the first 02:30, still CEST"
    (late,) = windows(window(["Sun"], "02:30", "03:30", zone="Europe/Berlin", minimum=2))
    (long,) = occurrences([late], utc(2027, 10, 30, 12), utc(2027, 11, 1))
    assert long.end - long.start == timedelta(hours=2), "02:30 CEST to 03:30 CET"


def test_a_window_crossing_midnight_on_a_dst_night() -> None:
    (night,) = windows(window(["Sat"], "22:00", "06:00", zone="America/New_York", minimum=4))
    # New York 2027: forward on Sunday 14 March at 02:00 EST (07:00Z) to 03:00 EDT
    (occurrence,) = occurrences([night], utc(2027, 3, 13, 12), utc(2027, 3, 15))
    assert occurrence.start == utc(2027, 3, 14, 3, 0), "22:00 EST"
    assert occurrence.end == utc(2027, 3, 14, 10, 0), "06:00 EDT"
    assert occurrence.end - occurrence.start == timedelta(hours=7)


def test_windows_in_two_zones_overlap_only_in_the_weeks_their_dst_differs() -> None:
    berlin, new_york = windows(
        window(["Mon-Fri"], "08:00", "14:00", zone="Europe/Berlin"),
        window(["Mon-Fri"], "07:00", "12:00", zone="America/New_York"),
    )
    # 07:00 EST is 12:00Z, before Berlin's window ends (14:00 CET, 13:00Z): from the first day
    overlap = find_overlap([berlin, new_york])
    assert overlap is not None
    assert overlap[2] == utc(2027, 1, 4, 12, 0)
    apart = windows(
        window(["Mon-Fri"], "08:00", "13:00", zone="Europe/Berlin"),
        window(["Mon-Fri"], "07:00", "12:00", zone="America/New_York"),
    )
    # 13:00 CET = 12:00Z = 07:00 EST; in March New York is on EDT three weeks before Berlin
    # moves: 07:00 EDT = 11:00Z, inside Berlin's 07:00Z-12:00Z.
    found = find_overlap(apart)
    assert found is not None
    assert found[2] == utc(2027, 3, 15, 11, 0)


def test_overlap_problem_names_the_later_window() -> None:
    parsed = windows(window(["Mon"], "08:00", "12:00"), window(None, "11:00", "13:00"))
    problem = overlap_problem(parsed, PATH)
    assert problem is not None
    assert problem.field == f"{PATH}[1]"
    assert problem.message == (
        "overlaps warmWindows[0]: both are in force at 2027-01-04T11:00:00Z (one minimum at a time)"
    )
