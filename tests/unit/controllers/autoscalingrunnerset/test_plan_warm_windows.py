"""The AutoscalingRunnerSet says which warm window is in force (pure plan): ``status.warmWindow``
and ``status.minRunnersInForce``, a ``WarmWindowChanged`` Event when the window changes, and a
requeue just past the next edge; a scale set without windows gets neither field.

``NOW`` is Friday 2027-01-15 08:00 UTC (09:00 in Berlin)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.controllers.autoscalingrunnerset.builders import (
    NOW,
    plan_now,
    scale_set,
    status_write,
    steady,
    verified,
    wait_of,
)

from scaleset.controllers.autoscalingrunnerset.actions import WriteStatus
from scaleset.controllers.autoscalingrunnerset.plan import plan
from scaleset.controllers.autoscalingrunnerset.warm_status import EDGE_MARGIN, WARM_WINDOW_CHANGED

OFFICE = {
    "days": ["Mon-Fri"],
    "start": "08:00",
    "end": "18:00",
    "timeZone": "Europe/Berlin",
    "minRunners": 5,
}
OFFICE_TEXT = "warmWindows[0] (Mon,Tue,Wed,Thu,Fri 08:00-18:00 Europe/Berlin, minRunners 5)"


def warm_scale_set(status: dict[str, Any] | None = None, **spec: Any) -> Any:
    return scale_set(
        spec={"minRunners": 1, "maxRunners": 10, "warmWindows": [OFFICE], **spec}, status=status
    )


def at(later: timedelta, status: dict[str, Any] | None = None, **spec: Any) -> list[Any]:
    """The plan ``later`` after ``NOW`` for the warm scale set, verified just then."""
    o = steady(warm_scale_set(status, **spec), verified_as=verified(at=NOW + later))
    return plan(o, NOW + later)


def warm_events(actions: list[Any]) -> list[str]:
    return [
        note.message
        for action in actions
        if isinstance(action, WriteStatus)
        for note in action.notes
        if note.reason == WARM_WINDOW_CHANGED
    ]


def test_the_window_in_force_is_in_status_with_an_event_and_the_reconcile_wakes_at_its_end() -> (
    None
):
    actions = plan_now(steady(warm_scale_set()))
    changes = status_write(actions).changes
    assert (changes["warmWindow"], changes["minRunnersInForce"]) == (OFFICE_TEXT, 5)
    assert warm_events(actions) == [f"{OFFICE_TEXT} is in force: 5 runners kept without jobs"]
    assert wait_of(actions).seconds == 600, "the verification interval comes first"
    # 18:00 in Berlin is 17:00 UTC: five minutes before it, the reconcile wakes just past it
    before_end = at(timedelta(hours=8, minutes=55))
    assert wait_of(before_end).seconds == 300 + EDGE_MARGIN


def test_outside_every_window_spec_min_runners_is_in_force() -> None:
    evening = timedelta(hours=10)  # 19:00 in Berlin
    actions = at(evening, {"warmWindow": OFFICE_TEXT})
    changes = status_write(actions).changes
    assert (changes["warmWindow"], changes["minRunnersInForce"]) == (None, 1), "removed"
    assert warm_events(actions) == ["no warm window is in force: spec.minRunners (1) applies"]
    # Monday 08:00 in Berlin is 07:00 UTC: a minute before it, the reconcile wakes just past it
    sunday = NOW.replace(day=18, hour=6, minute=59) - NOW
    assert wait_of(at(sunday)).seconds == 60 + EDGE_MARGIN


def test_an_unchanged_window_writes_nothing_and_sends_no_event() -> None:
    status = {"warmWindow": OFFICE_TEXT, "minRunnersInForce": 5}
    actions = plan_now(steady(warm_scale_set(status=status)))
    assert all(
        "warmWindow" not in a.changes and "minRunnersInForce" not in a.changes
        for a in actions
        if isinstance(a, WriteStatus)
    )
    assert warm_events(actions) == []


def test_a_scale_set_without_windows_has_no_window_fields_and_removed_windows_clear_them() -> None:
    plain = plan_now(steady(scale_set()))
    assert all("warmWindow" not in a.changes for a in plain if isinstance(a, WriteStatus)), (
        "ARC's objects: status as ARC writes it"
    )
    assert wait_of(plain).seconds == 600, "no window: no earlier wake-up"
    cleared = plan_now(
        steady(scale_set(status={"warmWindow": OFFICE_TEXT, "minRunnersInForce": 5}))
    )
    changes = status_write(cleared).changes
    assert (changes["warmWindow"], changes["minRunnersInForce"]) == (None, None)


def test_the_minimum_in_force_is_clipped_to_max_runners() -> None:
    changes = status_write(plan_now(steady(warm_scale_set(maxRunners=5)))).changes
    assert changes["minRunnersInForce"] == 5


@settings(deadline=None, max_examples=40)
@given(st.integers(0, 14 * 24 * 3600))
def test_the_requeue_never_passes_an_edge(offset: int) -> None:
    """Planned at any instant, the status says the window in force then, and the next look is
    no later than just past the next change."""
    now = NOW + timedelta(seconds=offset)
    actions = at(now - NOW)
    local = now.astimezone(ZoneInfo("Europe/Berlin"))
    inside = local.weekday() < 5 and 8 <= local.hour < 18
    assert status_write(actions).changes["minRunnersInForce"] == (5 if inside else 1)
    seconds = wait_of(actions).seconds
    assert seconds is not None
    later = at(now - NOW + timedelta(seconds=seconds - 2 * EDGE_MARGIN))
    assert status_write(later).changes["minRunnersInForce"] == (5 if inside else 1)
