"""One tenant whose GitHub hangs does not stall the others (issue: one slow tenant stalled every
scale set until the stall detector restarted the pod): the controller runs more than one worker,
so another tenant's scale set is registered while the first tenant's reconcile is still waiting
on its GitHub."""

from __future__ import annotations

import logging

import pytest
from tests.integration.controllers.autoscalingrunnerset.world import World
from tests.support.misbehaving_http import Drip, MisbehavingServer
from tests.support.waiting import eventually

from scaleset.controllers.autoscalingrunnerset.setup import DEFAULT_WORKERS
from scaleset.logs import event_fields


def _about(record: logging.LogRecord, name: str) -> bool:
    return event_fields(record).get("name") == name


async def test_a_tenant_whose_github_hangs_does_not_hold_up_another_tenant(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    assert DEFAULT_WORKERS > 1
    async with MisbehavingServer(Drip(where="head", interval=0.05), times=1) as hanging:
        await world.create_scale_set("slow", githubConfigUrl=f"{hanging.url}/acme")
        async with world.controller():
            # the slow tenant's reconcile is now waiting on its GitHub (first its token)
            await eventually(lambda: hanging.requests >= 1, what="the slow tenant's first call")
            await world.create_scale_set("fast")

            async def fast_running() -> bool:
                current = await world.scale_set("fast")
                return current is not None and current.status.phase == "Running"

            # real time only: the clock does not move, so the slow reconcile stays in its call
            # (its retry waits and deadlines are on the clock) and holds its worker throughout
            await eventually(fast_running, within=30.0, what="the other tenant's scale set")
            assert hanging.requests == 1
            slow = await world.scale_set("slow")
            assert slow is not None
            assert slow.status.phase != "Running"
            # end the hang (later requests get a prompt 404), so the slow reconcile finishes
            # before the controller stops
            hanging.cut()
            await world.until(
                lambda: any(
                    r.levelno >= logging.WARNING and _about(r, "slow") for r in caplog.records
                ),
                "the slow tenant's reconcile ended",
            )
