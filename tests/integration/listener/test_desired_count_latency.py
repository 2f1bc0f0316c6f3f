"""A new desired count is not held back by GitHub's round trips (L7), on both backends.

- A count left due by ``patch_interval`` (a message that arrived just after the last patch) is
  patched once the interval has passed, while the next long poll is still held: GitHub holds an
  empty poll for about 50 s, and the job would get no runner meanwhile.
- A count that is due when a message has been handled is written before the message is
  acknowledged, not after the acknowledgement's round trip.

The fake holds an empty poll 60 s of real time and answers a held poll as soon as a job is
queued; the listener's clock is a ManualClock. The checks are on order, not on time: what the
fake had answered when the listener sent the new count.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx2
import pytest
from tests.integration.listener.world import RUNNER_SET, World, world_on
from tests.plugins.kube_backends import KubeBackend

from scaleset.kube import KubeClient

pytestmark = pytest.mark.usefixtures("actions_crds")


def when_count_sent(world: World, replicas: int, observe: Callable[[], int]) -> list[int]:
    """``observe()`` at each moment the listener sends desired count ``replicas``."""
    seen: list[int] = []

    def on_request(request: httpx2.Request) -> None:
        if request.method != "PATCH" or not request.url.path.endswith(RUNNER_SET):
            return
        if json.loads(request.content).get("spec", {}).get("replicas") == replicas:
            seen.append(observe())

    world.sent.observers.append(on_request)
    return seen


async def first_count_written(world: World) -> None:
    await world.wait(
        lambda: world.counter("scaleset_listener_ers_patches_total") >= 1,
        "the first desired count written",
    )


async def test_L7_a_count_due_after_a_message_is_patched_while_the_next_poll_is_held(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace, poll_hold=60.0) as world:

        def polls_answered() -> list[int]:
            return [r.status for r in world.fake.control.requests_to("/messages", "GET")]

        at_patch = when_count_sent(world, 1, lambda: len(polls_answered()))
        running = world.start()
        try:
            await first_count_written(world)
            # no virtual time passes: the job's message arrives inside patch_interval
            world.fake.control.queue_job(["arc"], duration_seconds=600)
            await world.wait(lambda: bool(at_patch), "the count of 1 patched")
            answered = polls_answered()
            message_at = answered.index(200) + 1  # polls answered up to the message's
            assert at_patch == [message_at], "the new count waited for the next poll to return"
        finally:
            await running.stop()


async def test_L7_a_new_count_is_written_before_the_message_is_acknowledged(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace, poll_hold=60.0) as world:

        def acks() -> int:
            return len(world.fake.control.requests_to("/messages/", "DELETE"))

        at_patch = when_count_sent(world, 1, acks)
        running = world.start()
        try:
            await first_count_written(world)
            world.clock.advance(1.0)  # past patch_interval
            world.fake.control.queue_job(["arc"], duration_seconds=600)
            await world.wait(lambda: bool(at_patch), "the count of 1 patched")
            await world.wait(lambda: acks() == 1, "the message acknowledged")
            assert at_patch == [0], "the new count waited for the acknowledgement"
        finally:
            await running.stop()
