"""Scheduled warm windows in the listener, on both backends: the desired count changes at a
window's edge with no message (lifecycle.md L7's desired count, ``scaleset.listener.warm``).

The fake holds an empty poll 60 s of real time, so no message and no poll answer comes while
the test moves the listener's ManualClock across the window's edges: the counts sent there can
only come from the edge wake-up. The checks are on what was sent and on order (how many polls
had been answered when each count went out), never on time.

Found while writing it: an edge that passes while the listener is busy (a patch or a message in
flight) must still be noticed when it goes back to its poll; the next wake-up is computed from
the minimum the scaler holds, not only from the next edge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from tests.integration.listener.world import RUNNER_SET, World, world_on
from tests.plugins.kube_backends import KubeBackend
from tests.support.waiting import eventually

from scaleset.api.autoscalingrunnerset import WarmWindowSpec
from scaleset.kube import KubeClient
from scaleset.listener.config import ListenerConfig

pytestmark = pytest.mark.usefixtures("actions_crds")

OPENS = datetime(2027, 1, 15, 8, 10, tzinfo=UTC)
CLOSES = datetime(2027, 1, 15, 9, 0, tzinfo=UTC)
WINDOW = {"start": "08:10", "end": "09:00", "timeZone": "UTC", "minRunners": 2}


@dataclass
class WarmWorld(World):
    """The loop tests' world with ``warm_windows`` in the listener's config."""

    warm_windows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def config(self) -> ListenerConfig:
        windows = tuple(WarmWindowSpec.model_validate(w) for w in self.warm_windows)
        return super().config.model_copy(update={"warm_windows": windows})


def min_runners_gauge(world: World) -> float | None:
    assert world.metrics is not None
    for family in world.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "gha_min_runners":
                return sample.value
    return None


def counts_sent(world: World, polls_answered: Any) -> list[tuple[int, int, int]]:
    """(replicas, patchID, polls answered) of each desired count the listener sends."""
    seen: list[tuple[int, int, int]] = []

    def on_request(request: httpx2.Request) -> None:
        if request.method != "PATCH" or not request.url.path.endswith(RUNNER_SET):
            return
        spec = json.loads(request.content).get("spec", {})
        if "patchID" in spec:
            seen.append((spec.get("replicas") or 0, spec["patchID"], polls_answered()))

    world.sent.observers.append(on_request)
    return seen


async def test_L7_a_warm_window_changes_the_count_at_its_edges_while_the_poll_is_held(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace, poll_hold=60.0) as plain:
        world = WarmWorld(
            **{f.name: getattr(plain, f.name) for f in fields(World)}, warm_windows=[WINDOW]
        )

        def polls_answered() -> int:
            return len(world.fake.control.requests_to("/messages", "GET"))

        sent = counts_sent(world, polls_answered)
        running = world.start()
        try:
            await eventually(lambda: len(sent) == 1, what="the first desired count")
            assert sent[0][0] == 0, "before the window: spec.minRunners (0)"

            world.clock.advance((OPENS - world.clock.now()).total_seconds() + 0.01)
            # (world.wait lets virtual time pass: the edge may have come while the first count
            # was in flight, and then the new one waits out patch_interval on the clock)
            await world.wait(lambda: len(sent) == 2, "the count at the window's start")
            replicas, patch_id, answered = sent[1]
            assert (replicas, answered) == (2, 0), "the window's minimum, with the poll held"
            assert patch_id > sent[0][1]
            assert min_runners_gauge(world) == 2, "gha_min_runners: the minimum in force"

            world.clock.advance((CLOSES - world.clock.now()).total_seconds() + 0.01)
            await world.wait(lambda: len(sent) == 3, "the count at the window's end")
            assert (sent[2][0], sent[2][2]) == (0, 0), "back to spec.minRunners, no message"
            assert (await world.state()).last_target == 0
        finally:
            await running.stop()
