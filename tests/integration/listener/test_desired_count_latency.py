"""A desired count left due by ``patch_interval`` is patched once the interval has passed, while
the next long poll is still held (L7), on both backends.

GitHub holds an empty poll for about 50 s. A message that arrives just after an empty poll's
patch (inside ``patch_interval``) must not wait for the next poll to return: its job would get no
runner for up to 50 s. The fake here holds a poll 60 virtual seconds; the check is on order, not
on time: when the listener sends the new count, the poll after the message is still unanswered.
"""

from __future__ import annotations

import json

import httpx2
import pytest
from tests.integration.listener.world import RUNNER_SET, job_message, world_on
from tests.plugins.kube_backends import KubeBackend

from scaleset.kube import KubeClient

pytestmark = pytest.mark.usefixtures("actions_crds")


async def test_L7_a_count_due_after_a_message_is_patched_while_the_next_poll_is_held(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace, poll_hold=60.0) as world:
        answered_polls_at_patch: list[int] = []

        def polls_answered() -> list[int]:
            return [r.status for r in world.fake.control.requests_to("/messages", "GET")]

        def on_request(request: httpx2.Request) -> None:
            if request.method != "PATCH" or not request.url.path.endswith(RUNNER_SET):
                return
            body = json.loads(request.content)
            if body.get("spec", {}).get("replicas") == 3:
                answered_polls_at_patch.append(len(polls_answered()))

        world.sent.observers.append(on_request)
        running = world.start()
        try:
            await world.wait(lambda: bool(world.ers_patches()), "the first desired count")
            # answered on the poll after the one now held: right after that poll's empty patch
            world.inject_messages(job_message(61, [], assigned=3))
            await world.wait(lambda: bool(answered_polls_at_patch), "the count of 3 patched")
            answered = polls_answered()
            message_at = answered.index(200) + 1  # polls answered up to the message's
            assert answered_polls_at_patch == [message_at], (
                "the new count waited for the next poll to return"
            )
            assert (await world.runner_set()).raw["spec"]["replicas"] == 3
        finally:
            await running.stop()
