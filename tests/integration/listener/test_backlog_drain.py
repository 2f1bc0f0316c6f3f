"""A backlog of messages after a blackout drains without waiting for each acknowledgement (L7),
and a message's JobCompleted waits for nothing but its own runner's earlier event (L4), on both
backends.

A listener that starts after a blackout finds the session's messages queued. Each message's
side effects are applied before it is acknowledged (L7), but the acknowledgement's round trip to
GitHub is not on the way to the next message: the next poll (``lastMessageId`` = the message
just handled, which GitHub's queue answers with the next message) is sent while the
acknowledgement is still out, so a JobCompleted queued behind N messages waits for N polls and
N messages' writes, not for N polls and N acknowledgements as well.

The checks are on order, not time. The listener's GitHub transport holds each acknowledgement's
answer until the next poll has been sent (or, for a loop that never sends it before the
answer, a short real-time while): the order of what was sent and answered then shows which
round trips were sequential.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import httpx2
import pytest
from tests.integration.listener.world import (
    FAST,
    World,
    completed_job,
    job_message,
    started_job,
    world_on,
)
from tests.plugins.kube_backends import KubeBackend

from scaleset.kube import KubeClient
from scaleset.listener.loop import LoopSettings

pytestmark = pytest.mark.usefixtures("actions_crds")

BACKLOG = 4
FIRST_ID = 701
HOLD_FALLBACK = 1.0
ACK_HELD = 20.0
"""Real seconds an acknowledgement's answer is held when no next poll comes (the loop that
polls only after the answer): a bound that lets such a loop go on, never a measurement."""


@dataclass
class Journal:
    """What the listener sent and what was answered, GitHub's queue and the API server's runner
    writes in one order."""

    entries: list[tuple[str, str, int]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    acks_held: bool = False
    """Hold every acknowledgement's answer (``ACK_HELD`` at most) instead of until the next
    poll."""

    def add(self, what: str, kind: str, key: int) -> None:
        self.entries.append((what, kind, key))
        self.changed.set()

    def index(self, what: str, kind: str, key: int) -> int:
        return self.entries.index((what, kind, key))

    async def hold_until(
        self, condition: Callable[[], bool], within: float = HOLD_FALLBACK
    ) -> None:
        """Until ``condition()`` holds, ``within`` real seconds at most."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not condition() and loop.time() < deadline:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), deadline - loop.time())
            except TimeoutError:
                break


class _Gated(httpx2.AsyncBaseTransport):
    """Records message-queue polls, acknowledgements and acquisitions; holds an
    acknowledgement's answer until the poll that follows its message has been sent, and an
    acquisition's answer until a runner write has been answered (``HOLD_FALLBACK`` at most)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, journal: Journal) -> None:
        self._inner = inner
        self._journal = journal

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        journal = self._journal
        path = request.url.path
        if request.method == "GET" and "/messages" in path:
            journal.add("sent", "poll", int(request.url.params.get("lastMessageId", "0")))
            return await self._inner.handle_async_request(request)
        if request.method == "DELETE" and "/messages/" in path:
            message_id = int(path.rsplit("/", 1)[1])
            journal.add("sent", "ack", message_id)
            response = await self._inner.handle_async_request(request)
            await response.aread()
            if journal.acks_held:
                await journal.hold_until(lambda: False, ACK_HELD)
            await journal.hold_until(lambda: ("sent", "poll", message_id) in journal.entries)
            journal.add("answered", "ack", message_id)
            return response
        if request.method == "POST" and path.endswith("/acquirejobs"):
            response = await self._inner.handle_async_request(request)
            await response.aread()
            await journal.hold_until(lambda: any(kind == "write" for _, kind, _ in journal.entries))
            journal.add("answered", "acquire", 0)
            return response
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def watch(world: World) -> Journal:
    journal = Journal()

    def on_answer(request: httpx2.Request, response: httpx2.Response) -> None:
        if request.method == "PATCH" and "/ephemeralrunners/r" in request.url.path:
            runner = int(request.url.path.split("/ephemeralrunners/r", 1)[1].split("/")[0])
            journal.add("answered", "write", runner)

    world.sent.answered.append(on_answer)
    world.github_wrap = lambda inner: _Gated(inner, journal)
    return journal


async def until_acknowledged(
    world: World, journal: Journal, message_id: int, settings: LoopSettings = FAST
) -> None:
    """Run a listener until ``message_id`` is acknowledged, then stop it."""
    running = world.start(settings=settings)
    try:
        await world.wait(
            lambda: ("answered", "ack", message_id) in journal.entries,
            f"message {message_id} acknowledged",
        )
    finally:
        await running.stop()


async def test_L7_a_backlog_drains_without_waiting_for_each_acknowledgement(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:
        journal = watch(world)
        ids = list(range(FIRST_ID, FIRST_ID + BACKLOG))
        for index in range(BACKLOG):
            await world.add_runner(f"r{index}", {"phase": "Running"})
        # the blackout's backlog: message i completes runner i's job and starts runner i+1's
        world.inject_messages(
            *[
                job_message(
                    message_id,
                    [completed_job(f"r{i}", 100 + i), started_job(f"r{i + 1}", 101 + i)]
                    if i + 1 < BACKLOG
                    else [completed_job(f"r{i}", 100 + i)],
                    assigned=BACKLOG - i,
                    running=BACKLOG - i,
                )
                for i, message_id in enumerate(ids)
            ]
        )
        running = world.start()
        try:
            await world.wait(
                lambda: all(("answered", "ack", i) in journal.entries for i in ids),
                "every message of the backlog acknowledged",
            )
        finally:
            await running.stop()

        # L7: a message's job events are written before it is acknowledged
        for i, message_id in enumerate(ids):
            assert journal.index("answered", "write", i) < journal.index(
                "sent", "ack", message_id
            ), f"message {message_id} was acknowledged before its JobCompleted was written"
        # at most one acknowledgement out at a time, in message order
        for before, after in itertools.pairwise(ids):
            assert journal.index("answered", "ack", before) < journal.index("sent", "ack", after), (
                f"acknowledgement of {after} sent while that of {before} was out"
            )
        # the drain: each next poll goes out while the acknowledgement is still out
        waited = [
            message_id
            for message_id in ids
            if journal.index("answered", "ack", message_id)
            < journal.index("sent", "poll", message_id)
        ]
        assert waited == [], (
            f"the poll after messages {waited} waited for their acknowledgement's round trip "
            f"({len(waited)} sequential round trips of {BACKLOG} messages)"
        )
        assert (await world.state()).last_message_id == ids[-1]


async def test_L4_a_jobcompleted_is_written_before_other_runners_jobstarted_of_its_message(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """One write slot: the runner whose job ended gets it first, not the message's order."""
    async with world_on(kube_backend, client, namespace) as world:
        journal = watch(world)
        for index in range(3):
            await world.add_runner(f"r{index}", {"phase": "Running" if index == 2 else "Pending"})
        world.inject_messages(
            job_message(
                FIRST_ID,
                [started_job("r0", 100), started_job("r1", 101), completed_job("r2", 102)],
                assigned=2,
                running=2,
            )
        )
        await until_acknowledged(world, journal, FIRST_ID, replace(FAST, max_parallel=1))
        writes = [key for what, kind, key in journal.entries if kind == "write"]
        assert writes[0] == 2, f"runners written in the order {writes}: the JobCompleted waited"


async def test_L4_acquiring_jobs_does_not_hold_back_the_job_events_of_its_message(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """A message with JobAvailable (acquired on GitHub) and a JobCompleted: the completion is
    written while the acquisition's round trip is out, not after it."""
    async with world_on(kube_backend, client, namespace) as world:
        journal = watch(world)
        await world.add_runner("r0", {"phase": "Running"})
        available = {
            **completed_job("", 300),
            "messageType": "JobAvailable",
            "acquireJobUrl": "https://example.invalid/acquire",
        }
        world.inject_messages(
            job_message(FIRST_ID, [available, completed_job("r0", 100)], assigned=1)
        )
        await until_acknowledged(world, journal, FIRST_ID)
        assert journal.index("answered", "write", 0) < journal.index("answered", "acquire", 0), (
            "the JobCompleted was written only after the acquisition's round trip"
        )


async def test_L7_a_stop_while_an_acknowledgement_is_out_hands_over_the_last_one_answered(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """The state names only acknowledged messages: a listener stopped while an acknowledgement
    is out hands over the message before it, and its successor polls that message again (its
    side effects are idempotent) instead of skipping one whose acknowledgement may have failed."""
    async with world_on(kube_backend, client, namespace) as world:
        journal = watch(world)
        journal.acks_held = True
        await world.add_runner("r0", {"phase": "Running"})
        world.inject_messages(job_message(FIRST_ID, [completed_job("r0", 100)], assigned=0))
        running = world.start()
        try:
            await world.wait(
                lambda: ("sent", "poll", FIRST_ID) in journal.entries,
                "the next poll sent while the acknowledgement is out",
            )
            assert ("sent", "ack", FIRST_ID) in journal.entries
            assert ("answered", "ack", FIRST_ID) not in journal.entries
        finally:
            await running.stop()
        state = await world.state()
        assert state.handed_over
        assert state.last_message_id == 0, "the state named a message not yet acknowledged"
        assert (await world.runner("r0")).status.get("jobCompletion"), "the side effect is lost"
