"""L2 for a runner new to the controller, which it plans on as its cache shows it (no GET): the
cache lags behind a deletion that came before the first reconcile. The registration made on
the stale copy is removed again, the write-ahead record is refused (its resourceVersion is
old), and no pod is ever created from that JIT config; the runner goes as a deleted runner
goes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx2
from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.watch_streams import LaggingWatch, watch_lines

from scaleset.devtools.transports import RequestHook
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.kube.resources import EPHEMERAL_RUNNER


class _AddedOnlyStream(httpx2.AsyncByteStream):
    """A watch stream's events line by line: all of them while ``open`` is set; while it is
    not, ADDED events once ``added`` is set, and nothing from the first other event on (the
    order is kept)."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, open_: asyncio.Event, added: asyncio.Event
    ) -> None:
        self._inner = inner
        self._open = open_
        self._added = added

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for line in watch_lines(self._inner):
            if not self._open.is_set() and line.strip():
                if json.loads(line).get("type") == "ADDED":
                    await asyncio.wait(
                        [asyncio.ensure_future(e.wait()) for e in (self._open, self._added)],
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                else:
                    await self._open.wait()
            yield line + b"\n"

    async def aclose(self) -> None:
        await self._inner.aclose()


class HeldRunnerWatch(LaggingWatch):
    """Holds the EphemeralRunner watch streams while ``hold()`` is on; ``let_added()`` lets
    the ADDED events through (the later ones stay held), ``release()`` everything."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        super().__init__(inner, "ephemeralrunners")
        self._added = asyncio.Event()

    def hold(self) -> None:
        self.lag()
        self._added.clear()

    def let_added(self) -> None:
        self._added.set()

    def release(self) -> None:
        self.catch_up()

    def _stream(self, inner: httpx2.AsyncByteStream) -> httpx2.AsyncByteStream:
        return _AddedOnlyStream(inner, self._open, self._added)


async def test_L2_a_new_runner_planned_on_a_cache_behind_its_deletion_gets_no_pod(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-deleted-unseen"
    pods_created: list[str] = []
    held: list[HeldRunnerWatch] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        held.append(HeldRunnerWatch(inner))
        return held[-1]

    async def record(request: httpx2.Request) -> None:
        if request.url.path.endswith("/pods"):
            pods_created.append(json.loads(request.content)["metadata"]["name"])

    hooks = [RequestHook("POST", ".*", record, times=10**9)]
    async with world.controller(hooks=hooks, wrap=wrap):
        [watch] = held
        watch.hold()
        await world.create_runner(name)
        await world.client.delete(EPHEMERAL_RUNNER, world.key(name))  # finalizers: it stays
        deleting = await world.runner(name)
        assert deleting is not None
        assert deleting.metadata.deletion_timestamp is not None
        watch.let_added()  # the cache shows the runner as created, not its deletion
        await world.gone(name)  # its registration removed first (rule 1), then its finalizers
        watch.release()
        assert await world.secret(name) is None
    # planned on the stale copy, the runner was registered (a fresh read would not have): that
    # registration is removed again, and its JIT config never reaches a pod
    assert not any(r.registered for r in world.registrations(name))
    assert pods_created == [], pods_created
    assert world.connections(name) == 0
