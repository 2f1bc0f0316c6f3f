"""L1/L2 — the phase: the controller writes only ``"" → Pending`` (and terminal phases), every
such write carries the resourceVersion it read, and a conflict means read again and decide
again. Races are staged with request hooks on the controller's own client (an action just
before its write is sent), so they run on the real kube-apiserver as well as the embedded one.
"""

from __future__ import annotations

import asyncio

import httpx2
from tests.integration.controllers.ephemeralrunner.world import World

from scaleset.devtools.transports import RequestHook
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.kube.resources import EPHEMERAL_RUNNER


def status_path(name: str) -> str:
    return rf"/ephemeralrunners/{name}/status$"


async def idle_arc_runner(world: World, name: str) -> int:
    """A started, idle runner whose phase ARC set to Running from its pod (no job fields);
    returns its runner id. No controller runs afterwards."""
    async with world.controller(identity="setup"):
        await world.create_runner(name)
        runner = await world.runner_where(
            name, lambda r: r.status.runner_started_at is not None and r.status.ready, "started"
        )
    await world.client.patch_merge(
        EPHEMERAL_RUNNER, world.key(name), {"status": {"phase": "Running"}}, status=True
    )
    return runner.status.runner_id


async def test_L1_takeover_demotes_an_idle_running_runner_once(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-takeover"
    await idle_arc_runner(world, name)
    async with world.controller(identity="takeover") as controller:
        await world.runner_where(name, lambda r: r.status.phase == "Pending", "demoted")
        await world.event_reasons(name, "DemotedIdleRunner")
        world.clock.advance(120)
        await world.settle(controller, name)
        runner = await world.runner(name)
        assert runner is not None
        assert runner.status.phase == "Pending"
        assert controller.decisions("DemotedIdleRunner") == 1


async def test_L2_the_pending_write_racing_the_listeners_running_write_leaves_running(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """Just before the controller's demotion (Running → Pending, from a read that shows no
    job) is sent, the listener records a job start. The controller's write carries the old
    resourceVersion, gets 409 Conflict, reads again, sees the job: Running survives."""
    name = "arc-runner-race"
    await idle_arc_runner(world, name)

    written = asyncio.Event()

    async def listener_writes_running(_: httpx2.Request) -> None:
        obj = await world.client.get(EPHEMERAL_RUNNER, world.key(name))
        await world.client.patch_with_lock(
            obj,
            {"status": {"phase": "Running", "jobRequestId": 11, "jobId": "j-11"}},
            status=True,
        )
        written.set()

    hook = RequestHook("PATCH", status_path(name), listener_writes_running)
    async with world.controller(identity="racer", hooks=[hook]) as controller:
        await world.until(written.is_set, "the race staged")
        await world.settle(controller, name)
        runner = await world.runner(name)
        assert runner is not None
        assert runner.status.phase == "Running"
        assert runner.status.job_id == "j-11", runner.status
        assert controller.decisions("DemotedIdleRunner") == 0
        assert await world.pod(name) is not None


async def test_L2_the_pending_write_is_read_again_and_retried_after_a_conflict(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """Someone else changes the runner between the controller's read and its first status
    write (``"" → Pending`` with the runner id): 409, read again, write again."""
    name = "arc-runner-conflict"

    async def someone_else_writes(_: httpx2.Request) -> None:
        await world.client.patch_merge(
            EPHEMERAL_RUNNER, world.key(name), {"metadata": {"labels": {"touched": "yes"}}}
        )

    hook = RequestHook("PATCH", status_path(name), someone_else_writes)
    async with world.controller(hooks=[hook]):
        await world.create_runner(name)
        runner = await world.runner_where(
            name, lambda r: r.status.phase == "Pending" and r.status.runner_id > 0, "Pending"
        )
        assert hook.fired == 1
        assert runner.metadata.labels["touched"] == "yes"

        async def pod_created() -> bool:
            return await world.pod(name) is not None

        await world.until(pod_created, "pod created")
