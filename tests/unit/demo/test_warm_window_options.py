"""``scaleset demo --window``: windows are checked as ``spec.warmWindows`` is, named by the
option, carried to a seed's own process, and reach the demo's AutoscalingRunnerSet."""

from __future__ import annotations

import re

import pytest

from scaleset.api import to_json, warm_windows
from scaleset.demo.options import options_from_json, options_to_json
from scaleset.demo.run import demo_options

OFFICE = "Mon-Fri 08:00-18:00 Europe/Berlin min=4"


def test_windows_are_kept_and_survive_the_trip_to_a_seed_process() -> None:
    options = demo_options(windows=(OFFICE, "Sat 10:00-12:00 UTC min=1"))
    assert options.warm_windows == (OFFICE, "Sat 10:00-12:00 UTC min=1")
    assert options_from_json(options_to_json(options)) == options
    assert options_from_json(options_to_json(demo_options())).warm_windows == ()


@pytest.mark.parametrize(
    ("window", "named"),
    [
        ("weekdays 8-18", "--window 'weekdays 8-18': expected DAYS HH:MM-HH:MM ZONE min=N"),
        ("08:00-18:00 Mars/Olympus min=1", "--window[0].timeZone: unknown time zone"),
        ("08:00-18:00 UTC min=11", "--window[0].minRunners: must not be greater"),
    ],
)
def test_a_bad_window_is_refused_naming_the_option(window: str, named: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(named)}"):
        demo_options(windows=(window,), runners="0:10")


def test_the_text_form_is_what_spec_warm_windows_holds() -> None:
    specs, windows, problem = warm_windows.parse_texts([OFFICE], "--window")
    assert problem is None
    assert [to_json(spec) for spec in specs] == [
        {
            "days": ["Mon-Fri"],
            "start": "08:00",
            "end": "18:00",
            "timeZone": "Europe/Berlin",
            "minRunners": 4,
        }
    ]
    assert windows[0].min_runners == 4


def test_a_window_without_days_carries_no_days_key() -> None:
    """The API server refuses ``days: null`` (found by running ``scaleset demo --window``)."""
    spec = warm_windows.spec_from_text("00:00-24:00 UTC min=2")
    assert spec is not None
    assert "days" not in to_json(spec)
