"""Creation under expectations: the controller never over-creates from a cache that has not
shown its own creates, and a watch event that never arrives does not stall the next scale-up
(the runner the cache misses still counts; count-based expectations would block every scale-up
until they expire, then create one runner too many)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
from tests.integration.controllers.ephemeralrunnerset.world import Finalizers, World
from tests.support.watch_streams import restream_watch, watch_lines


class _DroppingStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, owner: DropAddedEvents) -> None:
        self._inner = inner
        self._owner = owner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for line in watch_lines(self._inner):
            if not self._owner.drops(line):
                yield line + b"\n"

    async def aclose(self) -> None:
        await self._inner.aclose()


class DropAddedEvents(httpx2.AsyncBaseTransport):
    """Loses the next ``count`` ADDED watch events of EphemeralRunners (the stream goes on)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, count: int = 0) -> None:
        self._inner = inner
        self.count = count
        self.dropped: list[str] = []

    def drops(self, line: bytes) -> bool:
        if self.count <= 0 or not line.strip():
            return False
        event = json.loads(line)
        if event.get("type") != "ADDED" or event["object"].get("kind") != "EphemeralRunner":
            return False
        self.count -= 1
        self.dropped.append(event["object"]["metadata"]["name"])
        return True

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        return restream_watch(
            request, response, "ephemeralrunners", lambda inner: _DroppingStream(inner, self)
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_L0_a_lost_watch_event_during_scale_up_does_not_stall_the_next_scale_up(
    world: World, finalizers: Finalizers
) -> None:
    lossy: list[DropAddedEvents] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        lossy.append(DropAddedEvents(inner))
        return lossy[0]

    await world.create_set(replicas=0, patch_id=1)
    async with world.controller(wrap=wrap) as controller:
        await world.status_where(lambda s: s.status.last_patch_id == 1, "set seen")
        lossy[0].count = 1
        await world.patch_replicas(3, 2)
        await world.count_is(3)
        await world.until(lambda: bool(lossy[0].dropped), "one ADDED event lost")
        await world.until(
            lambda: len(controller.reconciler.runners.list(world.namespace)) == 2,
            "the controller's cache holds the two runners it heard of",
        )
        await world.patch_replicas(5, 3)
        await world.count_is(5)
        # and it stays at 5: the missing runner keeps counting, later passes create nothing
        world.clock.advance(30.0)
        await world.patch_replicas(5, 4)
        await world.caught_up(controller, "patch 4 seen")
        assert len(await world.runners()) == 5
