"""Scheduled warm windows on the API server (both backends): ``spec.warmWindows`` is declared by
our CRD, so it is stored and read back unchanged (not pruned); a scale set whose windows overlap,
name an unknown time zone or ask for more than maxRunners gets ``Valid=False`` and an Event
naming the field, and the others are served. The window in force is in the status, with an
Event, and turns at the window's edge on the controller's clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.integration.controllers.autoscalingrunnerset.test_bad_input import condition, reported
from tests.integration.controllers.autoscalingrunnerset.world import World
from tests.support.waiting import eventually

OFFICE: dict[str, Any] = {
    "days": ["Mon-Fri"],
    "start": "08:00",
    "end": "18:00",
    "timeZone": "Europe/Berlin",
    "minRunners": 2,
}
NIGHT: dict[str, Any] = {"start": "22:00", "end": "06:00", "timeZone": "UTC", "minRunners": 0}


async def test_windows_are_stored_as_written(world: World) -> None:
    created = await world.create_scale_set("warm", warmWindows=[OFFICE, NIGHT], maxRunners=5)
    assert created.spec["warmWindows"] == [OFFICE, NIGHT]
    stored = await world.scale_set("warm")
    assert stored is not None
    assert stored.spec.warm_windows is not None
    assert [w.time_zone for w in stored.spec.warm_windows] == ["Europe/Berlin", "UTC"]


async def test_bad_windows_are_reported_naming_the_field(world: World) -> None:
    lunch = {**OFFICE, "days": ["Wed"], "start": "12:00", "end": "13:00"}
    await world.create_scale_set("overlap", warmWindows=[OFFICE, lunch], maxRunners=5)
    zone = {**OFFICE, "timeZone": "Europe/Atlantis"}
    await world.create_scale_set("bad-zone", warmWindows=[zone], maxRunners=5)
    await world.create_scale_set("above-max", warmWindows=[OFFICE], maxRunners=1)
    await world.create_scale_set("good", warmWindows=[OFFICE, NIGHT], maxRunners=5)
    async with world.controller():
        await world.ready("good")
        found = {
            name: await reported(world, name, "Valid", "InvalidSpec")
            for name in ("overlap", "bad-zone", "above-max")
        }
    for name, field in (
        ("overlap", "spec.warmWindows[1]"),
        ("bad-zone", "spec.warmWindows[0].timeZone"),
        ("above-max", "spec.warmWindows[0].minRunners"),
    ):
        cond = condition(found[name], "Valid")
        assert cond is not None
        assert cond[0] == "False"
        assert field in cond[2]
        events = await world.events(name)
        assert [reason for reason, _ in events] == ["InvalidSpec"]
        assert field in events[0][1]
    assert [rs.name for rs in await world.runner_sets()] == ["good"]


async def test_the_window_in_force_is_in_status_and_turns_at_its_edge(world: World) -> None:
    """The controller's clock starts Friday 2027-01-15 08:00 UTC; the window opens at 08:05.
    The status says no window first, then, at the edge and with nothing else happening (the
    clock is moved just past it: only the edge's requeue is due), the window with an Event; the
    listener carries the windows to the listener pod's config."""
    opens = datetime(2027, 1, 15, 8, 5, tzinfo=UTC)
    window = {"start": "08:05", "end": "09:00", "timeZone": "UTC", "minRunners": 3}
    await world.create_scale_set("warm", warmWindows=[window], minRunners=1, maxRunners=5)
    async with world.controller():
        await world.ready("warm")
        listener = await world.listener("warm")
        assert listener is not None
        assert listener.spec["warmWindows"] == [window]

        async def in_force(minimum: int) -> bool:
            current = await world.scale_set("warm")
            return current is not None and current.status.min_runners_in_force == minimum

        await eventually(lambda: in_force(1), what="minRunnersInForce 1 before the window")
        assert world.clock.now() < opens
        current = await world.scale_set("warm")
        assert current is not None
        assert current.status.warm_window is None

        world.clock.advance((opens - world.clock.now()).total_seconds() + 0.01)
        await eventually(lambda: in_force(3), what="minRunnersInForce 3 at the window's start")
        current = await world.scale_set("warm")
        assert current is not None
        assert current.status.warm_window == (
            "warmWindows[0] (daily 08:05-09:00 UTC, minRunners 3)"
        )

        async def announced() -> bool:
            return any(reason == "WarmWindowChanged" for reason, _ in await world.events("warm"))

        await eventually(announced, what="a WarmWindowChanged Event")
        messages = [m for r, m in await world.events("warm") if r == "WarmWindowChanged"]
        assert messages[-1].startswith("warmWindows[0] (daily 08:05-09:00 UTC, minRunners 3)")
