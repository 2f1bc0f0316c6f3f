"""Status writes that only move counts are paced: however fast runners change, the set's status
costs at most one write per ``status_interval`` (1 s of the controller's clock), and the columns
are true again when it ends. Conditions and memory a restart must not lose are written at once.

The virtual clock stands still from the controller's start until the runners have changed
(each change is waited for with a real-time bound only), so every pass after the set's first
status write falls inside the interval that write opened."""

from __future__ import annotations

import httpx2
from tests.integration.controllers.ephemeralrunnerset.world import SET, Controller, World
from tests.support.waiting import eventually

from scaleset.controllers.ephemeralrunnerset.settings import Settings
from scaleset.devtools.transports import RequestHook


async def _nothing(request: httpx2.Request) -> None:
    return None


async def _first_write_done(world: World, controller: Controller, runners: int) -> None:
    """Wait, with the clock standing, until the set's first status write (the pass that
    creates its runners: ``ReplicasAccepted``, no runner counted yet) is stored, the ``runners``
    exist and the controller has nothing left to do."""

    async def holds() -> bool:
        current = await world.runner_set()
        queue = controller.runtime.queue
        return (
            current is not None
            and any(c.type == "ReplicasAccepted" for c in current.status.conditions)
            and len(await world.runners()) == runners
            and len(queue) == 0
            and not queue.processing()
        )

    await eventually(holds, within=20.0, what="the first status write")


def _status_writes() -> RequestHook:
    """Counts the controller's status writes of runner sets (``fired``)."""
    return RequestHook("PATCH", rf"/ephemeralrunnersets/{SET}/status$", _nothing, times=1_000_000)


async def test_L0_runners_changing_within_a_second_cost_one_status_write(world: World) -> None:
    await world.create_set(replicas=3, patch_id=1)
    writes = _status_writes()
    start = world.clock.monotonic()
    async with world.controller(hooks=[writes]) as controller:
        await _first_write_done(world, controller, runners=3)
        before = writes.fired
        names = await world.names()
        for name in names:  # three more column changes, each seen by a pass, the clock standing
            await world.register(name)

            async def seen(name: str = name) -> bool:
                view = controller.reconciler.runners.get(world.key(name))
                queue = controller.runtime.queue
                return (
                    view is not None
                    and view.status.get("ready") is True
                    and len(queue) == 0
                    and not queue.processing()
                )

            await eventually(seen, within=20.0, what=f"{name} seen idle")
        assert world.clock.monotonic() == start, "the virtual clock moved"
        assert writes.fired == before, "a status write inside the interval"
        current = await world.runner_set()
        assert current is not None
        # not yet: the runners' creation and their registration wait for the interval's end
        assert current.status.starting_ephemeral_runners == 0
        assert current.status.idle_ephemeral_runners == 0
        # the interval ends: one write shows all three
        shown = await world.status_where(lambda s: s.status.idle_ephemeral_runners == 3, "3 idle")
        assert shown.status.starting_ephemeral_runners == 0
        assert writes.fired == before + 1
        assert world.clock.monotonic() - start >= 1.0


async def test_L0_L3_a_terminal_runner_is_recorded_at_once_inside_the_interval(
    world: World,
) -> None:
    await world.create_set(replicas=2, patch_id=1)
    writes = _status_writes()
    start = world.clock.monotonic()
    async with world.controller(hooks=[writes]) as controller:
        await _first_write_done(world, controller, runners=2)
        before = writes.fired
        first = (await world.names())[0]
        await world.mark_terminal(first, reason="BackOff")

        async def recorded() -> bool:
            current = await world.runner_set()
            return current is not None and first in current.status.recorded_terminal_runners

        # a runner's change reaches the set after the runner-event delay, well inside the
        # status interval: the record is not paced
        await eventually(
            recorded,
            clock=world.clock,
            max_step=0.01,
            within=20.0,
            what="the terminal runner recorded",
        )
        settings = Settings()
        assert settings.runner_event_delay < settings.plan.status_interval
        assert world.clock.monotonic() - start < settings.plan.status_interval
        assert writes.fired > before
