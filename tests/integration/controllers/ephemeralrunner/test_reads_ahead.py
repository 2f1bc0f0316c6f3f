"""A reconcile that reads its runner fresh sends the reads the cached runner predicts beside
that GET, not after its answer (issue 28: independent calls at once). The start of a runner is
such a reconcile: the pod shows the runner container started, the plan made on the cached runner
has something to do, so it reads the runner fresh — and the JIT Secret, to delete it (L5)."""

from __future__ import annotations

import asyncio
import json

import httpx2
from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually

HOLD_SECONDS = 1.0
"""How long (real seconds, at most) the answer to a runner GET is held for a Secret GET sent
after it (so the order below does not hang on the event loop's scheduling): sent one after
another, no Secret GET comes while it is held, and the answer goes on."""


class Journal:
    """The controller's reads of runner ``name`` and its Secret, and its status writes, in order:
    ``("sent" | "answered", "runner" | "secret" | "status", details)``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: list[tuple[str, str, str]] = []
        self.changed = asyncio.Event()

    def add(self, what: str, kind: str, details: str = "") -> None:
        self.entries.append((what, kind, details))
        self.changed.set()

    async def secret_read_after(self, start: int) -> None:
        """Until a Secret GET is sent after entry ``start``, ``HOLD_SECONDS`` at most."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HOLD_SECONDS
        while ("sent", "secret", "") not in self.entries[start:] and loop.time() < deadline:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), deadline - loop.time())
            except TimeoutError:
                break

    def index(self, what: str, kind: str, details: str = "") -> int:
        return self.entries.index((what, kind, details))


class Journaled(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, journal: Journal) -> None:
        self._inner = inner
        self._journal = journal

    def _kind(self, request: httpx2.Request) -> str | None:
        path = request.url.path
        name = self._journal.name
        if request.method == "GET" and request.url.params.get("watch") is None:
            if path.endswith(f"/ephemeralrunners/{name}"):
                return "runner"
            if path.endswith(f"/secrets/{name}"):
                return "secret"
        if request.method == "PATCH" and path.endswith(f"/ephemeralrunners/{name}/status"):
            return "status"
        return None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        journal = self._journal
        kind = self._kind(request)
        if kind is None:
            return await self._inner.handle_async_request(request)
        details = ""
        if kind == "status":
            status = json.loads(request.content).get("status") or {}
            details = "started" if status.get("runnerStartedAt") else ""
        journal.add("sent", kind, details)
        sent = len(journal.entries)
        response = await self._inner.handle_async_request(request)
        await response.aread()
        if kind == "runner":
            await journal.secret_read_after(sent)
        journal.add("answered", kind, details)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_the_reconcile_that_records_a_start_reads_the_runner_and_its_secret_at_once(
    world: World,
) -> None:
    name = "arc-runner-reads-ahead"
    journal = Journal(name)
    async with world.controller(wrap=lambda inner: Journaled(inner, journal)) as controller:
        await world.create_runner(name)
        # no kubelet yet: registered, its pod created and Pending, its runner not started
        await world.runner_where(name, lambda r: r.status.phase == "Pending", "Pending")
        assert await world.secret(name) is not None
        await eventually(controller.idle, within=30.0, what="the controller idle")
        async with world.kubelet():
            await world.runner_where(
                name, lambda r: r.status.runner_started_at is not None, "the start recorded"
            )

            async def secret_deleted() -> bool:
                return await world.secret(name) is None

            await world.until(secret_deleted, "the JIT Secret deleted")
    entries = journal.entries
    recorded = journal.index("sent", "status", "started")
    runner_answered = max(
        i for i, entry in enumerate(entries[:recorded]) if entry[:2] == ("answered", "runner")
    )
    secret_sent = max(
        i for i, entry in enumerate(entries[:recorded]) if entry[:2] == ("sent", "secret")
    )
    # the Secret GET of the reconcile that recorded the start went out before the runner GET's
    # answer came back (sent one after another, it would follow that answer)
    assert secret_sent < runner_answered, "\n".join(map(str, entries))
    # and it was read once for that reconcile: no read ahead was wasted beside it
    secret_reads = [i for i, e in enumerate(entries[:recorded]) if e[:2] == ("sent", "secret")]
    runner_reads = [i for i, e in enumerate(entries[:recorded]) if e[:2] == ("sent", "runner")]
    assert len(secret_reads) <= len(runner_reads), entries
