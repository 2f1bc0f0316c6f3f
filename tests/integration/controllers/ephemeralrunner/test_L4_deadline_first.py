"""L4/L6 under load: a due grace deadline is not served after a backlog of new runners.

The bound a hung runner must meet is the grace period plus one pass; under load the
EphemeralRunner work queue holds mostly runners being created, each a GitHub call and three API
writes. The runner whose grace deadline fell due goes first (``runner_priority``: the work
queue's priorities), on a worker kept for such runners, so neither the backlog nor the creations
in flight delay it. Checked by the order of the API requests, not by durations: both configured
workers are held inside their first creation while the backlog forms and the deadline passes,
and stay held until the hung pod is deleted.
"""

from __future__ import annotations

import asyncio

import httpx2
from tests.integration.controllers.ephemeralrunner.test_L4_job_completion import (
    GRACE,
    deadline_stored,
    hung_after_job,
)
from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually

from scaleset.devtools.transports import RequestHook
from scaleset.embedded.kubelet import SimulatedKubelet

BACKLOG = 12
WORKERS = 2


async def test_L4_a_due_grace_deadline_goes_before_a_backlog_of_new_runners(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-hung"
    requests: list[str] = []
    hold = False
    held = 0
    release = asyncio.Event()

    async def creation(request: httpx2.Request) -> None:
        nonlocal held
        if request.url.path.endswith("/secrets"):
            requests.append("create JIT secret")
            if hold and held < WORKERS:
                held += 1  # each worker stops inside its first creation of the backlog
                await release.wait()

    async def deletion(request: httpx2.Request) -> None:
        if request.url.path.endswith(f"/pods/{name}"):
            requests.append("delete hung pod")

    hooks = [
        RequestHook("POST", r"/secrets$", creation, times=10**6),
        RequestHook("DELETE", r"/pods/", deletion, times=10**6),
    ]
    async with world.controller(hooks=hooks) as controller:
        runner_id, request_id = await hung_after_job(world, name, record_start=True)
        await world.job_completed(name, request_id, runner_id)
        await deadline_stored(world, name)
        requests.clear()
        hold = True

        for index in range(BACKLOG):
            await world.create_runner(f"arc-runner-new-{index}")

        def backlog_formed() -> bool:
            depth = controller.registry.get_sample_value(
                "workqueue_depth", {"name": "ephemeralrunner"}
            )
            return held == WORKERS and (depth or 0) >= BACKLOG - WORKERS

        await eventually(backlog_formed, within=30.0, what="both workers held, the rest queued")
        world.clock.advance(GRACE)  # the hung runner's deadline falls due behind the backlog
        try:
            # served by the worker kept for urgent runners, while both others are still held
            await eventually(
                lambda: "delete hung pod" in requests, within=30.0, what="the hung pod deleted"
            )
        finally:
            release.set()
        await world.gone(name)

    before = requests[: requests.index("delete hung pod")]
    assert before.count("create JIT secret") == WORKERS, requests  # only the held ones


async def test_L4_a_new_completion_is_observed_while_github_is_down_and_workers_are_held(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """Soak seed 6: during a GitHub outage the "observe" hop (completion → deadline stored)
    took up to 70.7 s. The worker kept for urgent runners deleted a due hung pod and then, in
    the same reconcile, tried to remove its registration: GitHub's retries held that worker
    (and every other) until GitHub answered again, and the next completion waited behind
    them. Now the urgent lane stops before a GitHub call: the due pod is deleted there, its
    registration waits for a configured worker, and a new completion is observed at once —
    here with both configured workers held inside creations and GitHub answering 503."""
    due, fresh = "arc-runner-due", "arc-runner-fresh"
    hold = False
    held = 0
    release = asyncio.Event()
    deleted: list[str] = []

    async def creation(request: httpx2.Request) -> None:
        nonlocal held
        if hold and held < WORKERS:
            held += 1
            await release.wait()

    async def deletion(request: httpx2.Request) -> None:
        deleted.append(request.url.path.rsplit("/", 1)[-1])

    hooks = [
        RequestHook("POST", r"/secrets$", creation, times=10**6),
        RequestHook("DELETE", r"/pods/", deletion, times=10**6),
    ]
    async with world.controller(hooks=hooks):
        due_id, due_request = await hung_after_job(world, due, record_start=True)
        fresh_id, fresh_request = await hung_after_job(world, fresh, record_start=True)
        await world.job_completed(due, due_request, due_id)
        await deadline_stored(world, due)
        hold = True
        for index in range(WORKERS):
            await world.create_runner(f"arc-runner-new-{index}")
        await eventually(lambda: held == WORKERS, within=30.0, what="both workers held")
        outage = world.fake.control.faults.unavailable(None)
        try:
            world.clock.advance(GRACE)  # the due runner's deadline passes
            await eventually(lambda: due in deleted, within=30.0, what="the due pod deleted")
            await world.job_completed(fresh, fresh_request, fresh_id)
            runner = await deadline_stored(world, fresh)  # not behind GitHub's retries
            assert runner.status.job_completion_deadline is not None
            due_runner = await world.runner(due)
            assert due_runner is not None  # its registration waits for GitHub
        finally:
            release.set()
            world.fake.control.faults.remove(outage)
        await world.gone(due)
