"""Scheduled warm capacity: the minimum runner count in force at an instant, pure.

An AutoscalingRunnerSet may carry ``spec.warmWindows``, a list of weekly windows, each with
days of the week, a local start and end (``HH:MM``), an IANA time zone and the minimum number of
runners during the window; ``spec.minRunners`` applies outside every window. This module turns
that list into :class:`WarmWindow` values (``parse``, with problems naming the field), and
answers three questions on one UTC instant:

- ``minimum_at(windows, static_min, now)``: the minimum in force, and the window that sets it;
- ``next_edge(windows, now)``: the next instant, strictly after ``now``, at which that answer
  changes (so a listener can wake at the edge instead of waiting for its next message);
- ``find_overlap(windows, since)``: two windows in force at the same instant (refused).

Wall-clock rules (one per case, all tested):

- A window starts on each of its days at ``start`` local time and ends at ``end``; an ``end`` at
  or before ``start`` is on the next day (the window crosses midnight, and Sunday's window ends
  on Monday). ``24:00`` is the end of the day.
- A local time that happens twice (the hour repeated when clocks go back) means its first
  occurrence. A local time that does not exist (the hour skipped when clocks go forward) means
  the instant the clocks jump. Both keep the local-to-UTC mapping monotonic, so windows that do
  not overlap on the wall clock never overlap in real time; the price is that a window lying
  entirely inside the skipped hour does not happen on that day, and a window that starts or ends
  in it is shorter that day.
- Time zones come from the ``tzdata`` package (the IANA database it pins), not from the
  machine's ``/usr/share/zoneinfo``: the listener image may have none, and the controller, the
  listener and the tests then read the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cache, lru_cache
from importlib import resources
from zoneinfo import ZoneInfo

from tzdata import IANA_VERSION

from scaleset.api.autoscalingrunnerset import WarmWindowSpec

DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MAX_WINDOWS = 32
"""More windows than this are refused (the overlap check scans a year of occurrences)."""
OVERLAP_WEEKS = 53
"""The overlap check looks at every occurrence in this many weeks: every DST transition of a
year, for every zone, falls inside."""
OVERLAP_REFERENCE = datetime(2027, 1, 4, tzinfo=UTC)
"""Where the overlap check starts when the caller gives no time (a Monday; the year's DST
rules are today's for every zone)."""
EDGE_HORIZON = timedelta(days=9)
"""``next_edge`` looks this far ahead: every window recurs within a week and lasts at most a
day, plus an hour of DST."""
TZDATA_VERSION = IANA_VERSION
"""The IANA time zone database release the windows are read with."""

_TEXT = re.compile(
    r"^\s*(?:(?P<days>[A-Za-z,-]+)\s+)?(?P<start>\d{1,2}:\d{2})-(?P<end>\d{1,2}:\d{2})"
    r"\s+(?P<zone>\S+)\s+min=(?P<min>-?\d+)\s*$"
)
TEXT_FORM = "DAYS HH:MM-HH:MM ZONE min=N, e.g. 'Mon-Fri 08:00-18:00 Europe/Berlin min=4'"
"""The one-line form of a window the command-line tools take (days optional: every day)."""
_TIME = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$|^24:00$")
_DAY_RANGE = re.compile(r"^([A-Za-z]{3})-([A-Za-z]{3})$")
_DAY = timedelta(days=1)


@dataclass(frozen=True)
class WarmWindow:
    """One valid window. ``start``/``end`` are minutes after local midnight (``end`` up to
    1440); ``end <= start`` means the window ends on the next day. ``index`` is its position in
    ``spec.warmWindows`` (how status and Events name it)."""

    index: int
    days: frozenset[int]
    """Weekdays the window starts on, 0 = Monday."""
    start: int
    end: int
    zone: str
    min_runners: int

    @property
    def crosses_midnight(self) -> bool:
        return self.end <= self.start

    def describe(self) -> str:
        """``warmWindows[1] (Mon-Fri 08:00-18:00 Europe/Berlin, minRunners 5)``."""
        return (
            f"warmWindows[{self.index}] ({_days_text(self.days)} {_hhmm(self.start)}-"
            f"{_hhmm(self.end)} {self.zone}, minRunners {self.min_runners})"
        )


@dataclass(frozen=True)
class WindowProblem:
    """What is wrong with one window field: its JSON path and a message."""

    field: str
    message: str


@dataclass(frozen=True, order=True)
class Occurrence:
    """One window on one day, in UTC: ``start <= t < end``. Never empty."""

    start: datetime
    end: datetime
    window: WarmWindow


# --- zones -------------------------------------------------------------------------------------


@cache
def _zone_names() -> frozenset[str]:
    text = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(text.split())


def known_zone(name: str) -> bool:
    """Whether ``name`` is a zone of the IANA database in use (``Europe/Berlin``, ``UTC``)."""
    return name in _zone_names()


@cache
def zone(name: str) -> ZoneInfo:
    """The zone ``name`` from the ``tzdata`` package (``KeyError`` for an unknown name)."""
    if not known_zone(name):
        raise KeyError(name)
    source = resources.files("tzdata").joinpath("zoneinfo", *name.split("/"))
    with source.open("rb") as data:
        return ZoneInfo.from_file(data, key=name)


# --- parsing -----------------------------------------------------------------------------------


def parse(
    specs: Sequence[WarmWindowSpec], path: str, *, max_runners: int | None = None
) -> tuple[tuple[WarmWindow, ...], list[WindowProblem]]:
    """The valid windows of ``specs`` and the problems of the others (each naming its field,
    e.g. ``spec.warmWindows[2].timeZone``). Overlaps are checked by ``find_overlap``."""
    windows: list[WarmWindow] = []
    problems: list[WindowProblem] = []
    if len(specs) > MAX_WINDOWS:
        problems.append(WindowProblem(path, f"at most {MAX_WINDOWS} windows, got {len(specs)}"))
        return (), problems
    for index, spec in enumerate(specs):
        window = _window(spec, index, f"{path}[{index}]", max_runners)
        if isinstance(window, WarmWindow):
            windows.append(window)
        else:
            problems.extend(window)
    return tuple(windows), problems


def spec_from_text(text: str) -> WarmWindowSpec | None:
    """The window ``Mon-Fri 08:00-18:00 Europe/Berlin min=4`` as ``spec.warmWindows`` spells it
    (checked by ``parse`` like any other), or ``None`` when ``text`` is not of ``TEXT_FORM``."""
    match = _TEXT.match(text)
    if match is None:
        return None
    days = match.group("days")
    spec = WarmWindowSpec(
        start=match.group("start"),
        end=match.group("end"),
        time_zone=match.group("zone"),
        min_runners=int(match.group("min")),
    )
    # days left unset when omitted: the object then carries no ``days: null`` (the API server
    # refuses a null where the schema says array)
    return spec.model_copy(update={"days": days.split(",")}) if days else spec


def parse_texts(
    texts: Sequence[str], option: str, *, max_runners: int | None = None
) -> tuple[list[WarmWindowSpec], tuple[WarmWindow, ...], str | None]:
    """Command-line windows (``option`` repeated, each of ``TEXT_FORM``): their specs, the
    windows, and what is wrong with them in one line (``None``: nothing), checked as
    ``spec.warmWindows`` is (fields, ``max_runners``, overlaps)."""
    specs: list[WarmWindowSpec] = []
    for text in texts:
        spec = spec_from_text(text)
        if spec is None:
            return [], (), f"{option} {text!r}: expected {TEXT_FORM}"
        specs.append(spec)
    windows, problems = parse(specs, option, max_runners=max_runners)
    overlap = overlap_problem(windows, option)
    if overlap is not None:
        problems.append(overlap)
    if problems:
        return specs, windows, "; ".join(f"{p.field}: {p.message}" for p in problems)
    return specs, windows, None


def _window(
    spec: WarmWindowSpec, index: int, path: str, max_runners: int | None
) -> WarmWindow | list[WindowProblem]:
    """The window of one item, or what is wrong with it."""
    problems = list(_window_problems(spec, path, max_runners))
    start, end = _minutes(spec.start or ""), _minutes(spec.end or "")
    if problems or start is None or end is None or spec.min_runners is None:
        return problems
    return WarmWindow(
        index=index,
        days=_days(spec.days) or frozenset(range(7)),
        start=start,
        end=end,
        zone=spec.time_zone or "",
        min_runners=spec.min_runners,
    )


def _window_problems(
    spec: WarmWindowSpec, path: str, max_runners: int | None
) -> Iterator[WindowProblem]:
    if spec.days is not None:
        if not spec.days:
            yield WindowProblem(f"{path}.days", "lists no day (omit it for every day)")
        for position, item in enumerate(spec.days):
            if _days([item]) is None:
                yield WindowProblem(
                    f"{path}.days[{position}]",
                    "must be a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun) or a range like Mon-Fri",
                )
    start, end = None, None
    for name, value in (("start", spec.start), ("end", spec.end)):
        if value is None:
            yield WindowProblem(f"{path}.{name}", "is required (HH:MM, local time)")
            continue
        minutes = _minutes(value)
        if minutes is None or (name == "start" and minutes == 1440):
            yield WindowProblem(f"{path}.{name}", "must be a local time HH:MM (00:00 to 23:59)")
            continue
        start, end = (minutes, end) if name == "start" else (start, minutes)
    if start is not None and end is not None and start == end:
        yield WindowProblem(
            f"{path}.end",
            "equals start: a window needs a length (00:00 to 24:00 for a whole day)",
        )
    if not spec.time_zone:
        yield WindowProblem(f"{path}.timeZone", "is required (an IANA zone like Europe/Berlin)")
    elif not known_zone(spec.time_zone):
        yield WindowProblem(
            f"{path}.timeZone",
            f"unknown time zone (not in the IANA database {TZDATA_VERSION}; "
            "an IANA name like Europe/Berlin or UTC)",
        )
    if spec.min_runners is None:
        yield WindowProblem(f"{path}.minRunners", "is required")
    elif spec.min_runners < 0:
        yield WindowProblem(f"{path}.minRunners", f"must be 0 or more, got {spec.min_runners}")
    elif max_runners is not None and max_runners >= 0 and spec.min_runners > max_runners:
        yield WindowProblem(
            f"{path}.minRunners",
            f"must not be greater than spec.maxRunners ({spec.min_runners} > {max_runners})",
        )


def _minutes(text: str) -> int | None:
    match = _TIME.match(text)
    if match is None:
        return None
    if text == "24:00":
        return 1440
    return int(match.group(1)) * 60 + int(match.group(2))


def _day_index(name: str) -> int | None:
    title = name[:1].upper() + name[1:].lower()
    return DAY_NAMES.index(title) if title in DAY_NAMES else None


def _days(items: Sequence[str] | None) -> frozenset[int] | None:
    """Weekday numbers of ``Mon``/``Mon-Fri`` items (a range may wrap: ``Sat-Mon``); None when
    an item is neither, or when there are none."""
    if not items:
        return None
    days: set[int] = set()
    for item in items:
        ranged = _DAY_RANGE.match(item)
        if ranged is None:
            single = _day_index(item)
            if single is None:
                return None
            days.add(single)
            continue
        first, last = _day_index(ranged.group(1)), _day_index(ranged.group(2))
        if first is None or last is None:
            return None
        days.update((first + step) % 7 for step in range((last - first) % 7 + 1))
    return frozenset(days)


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _days_text(days: frozenset[int]) -> str:
    if len(days) == 7:
        return "daily"
    return ",".join(DAY_NAMES[day] for day in sorted(days))


# --- wall clock to instant ---------------------------------------------------------------------


def local_to_utc(local: datetime, zone_name: str) -> datetime:
    """The UTC instant of a naive local wall-clock time in ``zone_name``: the first occurrence
    of a repeated time, the instant of the jump for a skipped one (monotonic in ``local``)."""
    tz = zone(zone_name)
    first = local.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if first.astimezone(tz).replace(tzinfo=None) == local:
        return first
    # skipped: fold=0 read it with the offset before the jump (an instant after the jump),
    # fold=1 with the offset after it (an instant before the jump); find the jump between them
    before = local.replace(tzinfo=tz, fold=1).astimezone(UTC)
    low, high = min(before, first), max(before, first)
    offset = low.astimezone(tz).utcoffset()
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(tz).utcoffset() == offset:
            low = middle
        else:
            high = middle
    return high.replace(microsecond=0) if high.microsecond else high


def occurrences(
    windows: Sequence[WarmWindow], since: datetime, until: datetime
) -> list[Occurrence]:
    """Every non-empty occurrence of ``windows`` that intersects ``[since, until)``, sorted."""
    found: list[Occurrence] = []
    for window in windows:
        tz = zone(window.zone)
        first_day = since.astimezone(tz).date() - _DAY
        last_day = until.astimezone(tz).date()
        day = first_day
        while day <= last_day:
            if day.weekday() in window.days:
                occurrence = _occurrence(window, day)
                if occurrence is not None and occurrence.end > since and occurrence.start < until:
                    found.append(occurrence)
            day += _DAY
    found.sort(key=lambda o: (o.start, o.end, o.window.index))
    return found


@lru_cache(maxsize=4096)
def _occurrence(window: WarmWindow, day: date) -> Occurrence | None:
    midnight = datetime(day.year, day.month, day.day)
    end_day = midnight + _DAY if window.crosses_midnight else midnight
    start = local_to_utc(midnight + timedelta(minutes=window.start), window.zone)
    end = local_to_utc(end_day + timedelta(minutes=window.end), window.zone)
    return Occurrence(start, end, window) if end > start else None


# --- the three questions -----------------------------------------------------------------------


def in_force(windows: Sequence[WarmWindow], now: datetime) -> list[WarmWindow]:
    """The windows in force at ``now`` (more than one only if they overlap)."""
    return [o.window for o in occurrences(windows, now, now + timedelta(microseconds=1))]


def minimum_at(
    windows: Sequence[WarmWindow], static_min: int, now: datetime
) -> tuple[int, WarmWindow | None]:
    """The minimum runner count in force at ``now`` and the window that sets it (``None``:
    outside every window, ``static_min``). Overlapping windows are refused by validation; if
    some are given anyway, the largest minimum wins (then the first window)."""
    current = in_force(windows, now)
    if not current:
        return static_min, None
    chosen = min(current, key=lambda w: (-w.min_runners, w.index))
    return chosen.min_runners, chosen


def next_edge(windows: Sequence[WarmWindow], now: datetime) -> datetime | None:
    """The first instant after ``now`` at which ``minimum_at`` answers differently (another
    minimum or another window); ``None`` when nothing changes within ``EDGE_HORIZON`` (no
    windows, or one window covering all time)."""
    if not windows:
        return None
    here = _answer(windows, now)
    edges = sorted(
        {
            instant
            for o in occurrences(windows, now, now + EDGE_HORIZON)
            for instant in (o.start, o.end)
            if instant > now
        }
    )
    for edge in edges:
        if _answer(windows, edge) != here:
            return edge
    return None


def _answer(windows: Sequence[WarmWindow], now: datetime) -> tuple[int, int | None]:
    minimum, window = minimum_at(windows, 0, now)
    return minimum, window.index if window is not None else None


def find_overlap(
    windows: Sequence[WarmWindow], since: datetime = OVERLAP_REFERENCE
) -> tuple[WarmWindow, WarmWindow, datetime] | None:
    """Two windows in force at one instant within ``OVERLAP_WEEKS`` weeks from ``since``: the
    earlier-listed one, the later-listed one, and the first such instant; ``None`` if none."""
    return _find_overlap(tuple(windows), since)


@lru_cache(maxsize=256)
def _find_overlap(
    windows: tuple[WarmWindow, ...], since: datetime
) -> tuple[WarmWindow, WarmWindow, datetime] | None:
    if len(windows) < 2:
        return None
    found = occurrences(windows, since, since + timedelta(weeks=OVERLAP_WEEKS))
    reach: Occurrence | None = None
    for occurrence in found:
        if reach is not None and occurrence.start < reach.end:
            first, second = sorted((reach.window, occurrence.window), key=lambda w: w.index)
            return first, second, occurrence.start
        if reach is None or occurrence.end > reach.end:
            reach = occurrence
    return None


def overlap_problem(
    windows: Sequence[WarmWindow], path: str, since: datetime = OVERLAP_REFERENCE
) -> WindowProblem | None:
    """The overlap of ``windows`` as a problem on the later-listed window, or ``None``."""
    overlap = find_overlap(windows, since)
    if overlap is None:
        return None
    first, second, instant = overlap
    return WindowProblem(
        f"{path}[{second.index}]",
        f"overlaps {path.rpartition('.')[2]}[{first.index}]: both are in force at "
        f"{instant.isoformat().replace('+00:00', 'Z')} (one minimum at a time)",
    )
