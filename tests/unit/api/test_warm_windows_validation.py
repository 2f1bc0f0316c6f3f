"""validate() on an AutoscalingRunnerSet with ``spec.warmWindows``: overlapping windows, unknown
time zones and a window minimum above maxRunners each name the field; a good list is valid and
round-trips unchanged (ARC's objects, without the field, stay as they were)."""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.api.arc_facts import FIXTURES, load_fixture

from scaleset.api import AutoscalingRunnerSet, load, to_json, validate

OFFICE = {
    "days": ["Mon-Fri"],
    "start": "08:00",
    "end": "18:00",
    "timeZone": "Europe/Berlin",
    "minRunners": 4,
}


def scale_set(*windows: dict[str, Any], max_runners: int = 10) -> dict[str, Any]:
    data = copy.deepcopy(load_fixture(FIXTURES / "autoscalingrunnerset-dind.yaml"))
    data["spec"]["maxRunners"] = max_runners
    data["spec"]["warmWindows"] = [dict(window) for window in windows]
    return data


def problems_of(data: dict[str, Any]) -> dict[str, str]:
    return {p.field: p.message for p in validate(load(data))}


def test_good_windows_are_valid_and_round_trip() -> None:
    night = {"days": ["Sun"], "start": "22:00", "end": "06:00", "timeZone": "UTC", "minRunners": 0}
    data = scale_set(OFFICE, night)
    assert problems_of(data) == {}
    obj = load(data)
    assert isinstance(obj, AutoscalingRunnerSet)
    assert obj.spec.warm_windows is not None
    assert obj.spec.warm_windows[0].time_zone == "Europe/Berlin"
    assert to_json(obj)["spec"]["warmWindows"] == data["spec"]["warmWindows"]


def test_arc_objects_without_the_field_are_unchanged() -> None:
    data = load_fixture(FIXTURES / "autoscalingrunnerset-dind.yaml")
    obj = load(copy.deepcopy(data))
    assert isinstance(obj, AutoscalingRunnerSet)
    assert obj.spec.warm_windows is None
    assert "warmWindows" not in to_json(obj)["spec"]


def test_overlapping_windows_name_the_later_window() -> None:
    lunch = {**OFFICE, "days": ["Wed"], "start": "12:00", "end": "13:00", "timeZone": "UTC"}
    assert problems_of(scale_set(OFFICE, lunch)) == {
        "spec.warmWindows[1]": (
            "overlaps warmWindows[0]: both are in force at 2027-01-06T12:00:00Z "
            "(one minimum at a time)"
        )
    }


def test_an_unknown_time_zone_names_the_field() -> None:
    problems = problems_of(scale_set({**OFFICE, "timeZone": "Europe/Atlantis"}))
    assert list(problems) == ["spec.warmWindows[0].timeZone"]
    assert problems["spec.warmWindows[0].timeZone"].startswith("unknown time zone")


def test_a_window_minimum_above_max_runners_names_the_field() -> None:
    assert problems_of(scale_set({**OFFICE, "minRunners": 12}, max_runners=10)) == {
        "spec.warmWindows[0].minRunners": "must not be greater than spec.maxRunners (12 > 10)"
    }


def test_a_wrong_type_is_reported_once() -> None:
    problems = problems_of(scale_set({**OFFICE, "start": 800}))
    assert list(problems) == ["spec.warmWindows[0].start"]
    assert problems["spec.warmWindows[0].start"].startswith("wrong type")


def test_a_bad_window_does_not_hide_an_overlap_of_the_good_ones() -> None:
    bad = {**OFFICE, "timeZone": "Nowhere/Here"}
    same = dict(OFFICE)
    problems = problems_of(scale_set(OFFICE, bad, same))
    assert set(problems) == {"spec.warmWindows[1].timeZone", "spec.warmWindows[2]"}


def test_a_listener_checks_its_windows_as_the_scale_set_does() -> None:
    data = copy.deepcopy(load_fixture(FIXTURES / "autoscalinglistener.yaml"))
    data["spec"]["maxRunners"] = 3
    data["spec"]["warmWindows"] = [
        OFFICE,
        {**OFFICE, "start": "17:00", "end": "20:00", "minRunners": 1},
    ]
    problems = problems_of(data)
    assert sorted(problems) == ["spec.warmWindows[0].minRunners"]
    assert "maxRunners" in problems["spec.warmWindows[0].minRunners"]
    data["spec"]["maxRunners"] = 10
    assert sorted(problems_of(data)) == ["spec.warmWindows[1]"], "the overlap"
