"""Properties of the window arithmetic on arbitrary windows, zones and instants (DST-heavy):

- ``next_edge`` is strictly in the future and ``minimum_at`` is constant from now up to it, and
  answers differently at it;
- away from a DST change, a window is in force exactly when the local wall clock says so;
- the local-to-UTC mapping never goes backwards (so wall-clock-disjoint windows stay disjoint);
- overlapping windows are always refused, with an instant at which both are in force, and
  windows that are not refused are never in force together.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scaleset.api.warm_windows import (
    OVERLAP_REFERENCE,
    OVERLAP_WEEKS,
    WarmWindow,
    find_overlap,
    in_force,
    local_to_utc,
    minimum_at,
    next_edge,
    zone,
)

ZONES = (
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # a 30-minute DST shift
    "Pacific/Chatham",  # +12:45 / +13:45
    "Asia/Kolkata",  # +05:30, no DST
    "America/Santiago",  # southern hemisphere, changes at midnight
)
YEAR_START = datetime(2027, 1, 1, tzinfo=UTC)
YEAR_END = datetime(2028, 1, 1, tzinfo=UTC)
SLOW = settings(deadline=None, max_examples=150)


def _transitions() -> list[datetime]:
    """Every UTC offset change of ``ZONES`` in 2027 (found hour by hour, then to the minute)."""
    found = []
    for name in ZONES:
        tz = zone(name)
        instant = YEAR_START
        while instant < YEAR_END:
            following = instant + timedelta(hours=1)
            if instant.astimezone(tz).utcoffset() != following.astimezone(tz).utcoffset():
                minute = instant
                while minute.astimezone(tz).utcoffset() == instant.astimezone(tz).utcoffset():
                    minute += timedelta(minutes=1)
                found.append(minute)
            instant = following
    return found


TRANSITIONS = _transitions()

instants = st.one_of(
    st.datetimes(
        min_value=YEAR_START.replace(tzinfo=None), max_value=YEAR_END.replace(tzinfo=None)
    ).map(lambda d: d.replace(microsecond=0, tzinfo=UTC)),
    st.builds(
        lambda at, seconds: at + timedelta(seconds=seconds),
        st.sampled_from(TRANSITIONS),
        st.integers(-2 * 86400, 2 * 86400),
    ),
)


@st.composite
def window_lists(draw: st.DrawFn, max_size: int = 4) -> list[WarmWindow]:
    count = draw(st.integers(1, max_size))
    result = []
    for index in range(count):
        start = draw(st.integers(0, 1439))
        end = draw(st.integers(1, 1440))
        if end == start:
            end = start + 1
        result.append(
            WarmWindow(
                index=index,
                days=frozenset(draw(st.sets(st.integers(0, 6), min_size=1))),
                start=start,
                end=end,
                zone=draw(st.sampled_from(ZONES)),
                min_runners=draw(st.integers(0, 6)),
            )
        )
    return result


@SLOW
@given(window_lists(), instants, st.floats(0.0, 1.0))
def test_the_minimum_is_constant_until_the_next_edge(
    windows: list[WarmWindow], now: datetime, fraction: float
) -> None:
    here = minimum_at(windows, 1, now)
    edge = next_edge(windows, now)
    if edge is None:
        later = now + timedelta(days=fraction * 8)
        assert minimum_at(windows, 1, later) == here
        return
    assert edge > now
    inside = now + (edge - now) * fraction
    if inside >= edge:
        inside = now
    assert minimum_at(windows, 1, inside) == here
    just_before = edge - timedelta(microseconds=1)
    assert minimum_at(windows, 1, just_before) == here
    assert minimum_at(windows, 1, edge) != here


def _wall_clock_in_force(window: WarmWindow, now: datetime) -> bool:
    local = now.astimezone(zone(window.zone))
    minute = local.hour * 60 + local.minute
    today, yesterday = local.weekday(), (local.weekday() - 1) % 7
    if not window.crosses_midnight:
        return today in window.days and window.start <= minute < window.end
    return (today in window.days and minute >= window.start) or (
        yesterday in window.days and minute < window.end
    )


@SLOW
@given(window_lists(max_size=1), instants)
def test_away_from_dst_a_window_is_in_force_when_the_wall_clock_says_so(
    windows: list[WarmWindow], now: datetime
) -> None:
    (window,) = windows
    tz = zone(window.zone)
    offsets = {(now + timedelta(hours=h)).astimezone(tz).utcoffset() for h in range(-50, 50)}
    assume(len(offsets) == 1)
    assert (in_force(windows, now) == [window]) == _wall_clock_in_force(window, now)


@SLOW
@given(
    st.sampled_from(ZONES),
    st.sampled_from(TRANSITIONS),
    st.integers(-3 * 3600, 3 * 3600),
    st.integers(0, 3 * 3600),
)
def test_local_to_utc_never_goes_backwards(
    zone_name: str, around: datetime, first: int, step: int
) -> None:
    base = around.astimezone(zone(zone_name)).replace(tzinfo=None, second=0)
    early = base + timedelta(seconds=first)
    late = early + timedelta(seconds=step)
    assert local_to_utc(early, zone_name) <= local_to_utc(late, zone_name)


@SLOW
@given(st.sampled_from(ZONES), instants)
def test_local_to_utc_gives_back_an_instant_read_on_the_wall_clock(
    zone_name: str, instant: datetime
) -> None:
    wall = instant.astimezone(zone(zone_name))
    back = local_to_utc(wall.replace(tzinfo=None, fold=0), zone_name)
    if wall.fold:  # the second time this wall-clock time happens: its first occurrence
        assert back < instant
    else:
        assert back == instant


@SLOW
@given(window_lists(), instants)
def test_a_refused_overlap_has_an_instant_with_both_in_force(
    windows: list[WarmWindow], probe: datetime
) -> None:
    overlap = find_overlap(windows)
    if overlap is None:
        span_end = OVERLAP_REFERENCE + timedelta(weeks=OVERLAP_WEEKS)
        assume(OVERLAP_REFERENCE <= probe < span_end)
        assert len(in_force(windows, probe)) <= 1
        return
    first, second, instant = overlap
    assert first.index < second.index
    assert {first, second} <= set(in_force(windows, instant))


@SLOW
@given(window_lists(max_size=3), instants, st.sampled_from(ZONES), st.integers(0, 6))
def test_a_window_added_over_an_instant_in_force_is_always_refused(
    windows: list[WarmWindow], probe: datetime, zone_name: str, minimum: int
) -> None:
    span_end = OVERLAP_REFERENCE + timedelta(weeks=OVERLAP_WEEKS, days=-2)
    assume(OVERLAP_REFERENCE + timedelta(days=2) <= probe < span_end)
    assume(in_force(windows, probe))
    local = probe.astimezone(zone(zone_name))
    start = local.hour * 60 + local.minute
    added = WarmWindow(
        index=len(windows),
        days=frozenset({local.weekday()}),
        start=start,
        end=(start + 180) % 1440 or 1440,
        zone=zone_name,
        min_runners=minimum,
    )
    assert added in in_force([*windows, added], probe)
    overlap = find_overlap([*windows, added])
    assert overlap is not None
