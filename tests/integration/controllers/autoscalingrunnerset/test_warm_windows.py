"""Scheduled warm windows on the API server (both backends): ``spec.warmWindows`` is declared by
our CRD, so it is stored and read back unchanged (not pruned); a scale set whose windows overlap,
name an unknown time zone or ask for more than maxRunners gets ``Valid=False`` and an Event
naming the field, and the others are served."""

from __future__ import annotations

from typing import Any

from tests.integration.controllers.autoscalingrunnerset.test_bad_input import condition, reported
from tests.integration.controllers.autoscalingrunnerset.world import World

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
