"""The early registration pass (L6: "and early when the listener's totalRegisteredRunners
disagrees with our ER count"): the real listener publishes GitHub's count on its
EphemeralRunnerSet, the registration pass (as the manager runs it) watches it, and when a
registration vanishes on GitHub the runner is deleted long before the 5-minute pass is due —
on the ManualClock, after the disagreement was seen twice over the sustain time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from prometheus_client import CollectorRegistry
from tests.integration.controllers.registrationpass.world import PAT, PREFIX, SCALE_SET, SET, World
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.api.keys import LISTENER_STATE_ANNOTATION
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.registrationpass import setup as registrationpass_setup
from scaleset.controllers.registrationpass.schedule import EarlySettings
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.controllers.setup import ProcessContext
from scaleset.github import ActionsClient, SystemInfo
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET
from scaleset.listener.config import parse_config
from scaleset.listener.loop import Listener, LoopSettings
from scaleset.listener.metrics import ListenerMetrics, ScaleSetIdentity

INTERVAL = 300.0
EARLY = EarlySettings(sustain=30.0, min_observations=2, min_gap=60.0, freshness=180.0)


@asynccontextmanager
async def registration_pass(world: World) -> AsyncIterator[None]:
    own = make_client(world.backend, clock=world.clock)
    github = GitHubClients(
        own, ClientOptions(clock=world.clock, environ={}, allow_http_github_url=True)
    )
    try:
        manager = manual_manager(own, world.namespace, "pass-early", world.clock)
        options = ControllerOptions(controller_namespace=world.namespace, listener_image="x")
        context = ProcessContext(options, own, world.clock)
        registrationpass_setup.build(
            manager, context, settings=Settings(interval=INTERVAL), github=github, early=EARLY
        )
        async with running(manager):
            yield
    finally:
        await github.aclose()
        await own.close()


@asynccontextmanager
async def listener(world: World) -> AsyncIterator[None]:
    """The real listener of the set, built as production builds it."""
    config = parse_config(
        {
            "configure_url": world.fake.config_url("acme"),
            "github_token": PAT,
            "ephemeral_runner_set_namespace": world.namespace,
            "ephemeral_runner_set_name": SET,
            "min_runners": 0,
            "max_runners": 10,
            "runner_scale_set_id": world.scale_set_id,
            "runner_scale_set_name": SCALE_SET,
        }
    )
    metrics = ListenerMetrics(
        ScaleSetIdentity(SET, world.namespace, organization="acme"),
        config.metrics,
        registry=CollectorRegistry(),
    )
    kube = make_client(world.backend, clock=world.clock)
    actions = ActionsClient(
        config.configure_url,
        config.credentials(),
        system_info=SystemInfo(scale_set_id=world.scale_set_id, subsystem="ghalistener"),
        environ={},
        clock=world.clock,
    )
    stop = asyncio.Event()
    loop = Listener(
        config,
        actions,
        kube,
        owner="arc-listener",
        clock=world.clock,
        metrics=metrics,
        settings=LoopSettings(patch_interval=0.3),
    )
    task = asyncio.ensure_future(loop.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.shield(task), 20)
        await kube.close()
        await actions.aclose()


async def published(world: World) -> int | None:
    runner_set = await world.client.get(EPHEMERAL_RUNNER_SET, world.key(SET))
    text = runner_set.annotations.get(LISTENER_STATE_ANNOTATION)
    value = json.loads(text).get("registeredRunners") if text else None
    return value if isinstance(value, int) else None


async def test_L6_a_vanished_registration_runs_the_pass_early(world: World) -> None:
    await world.create_set()
    names = [f"{PREFIX}e{i}" for i in range(3)]
    ids = [await world.create_runner(name, status={"ready": True}) for name in names]
    async with registration_pass(world), listener(world):

        async def count_is(expected: int) -> bool:
            return await published(world) == expected

        await eventually(
            lambda: count_is(3), clock=world.clock, max_step=1.0, what="the listener's count"
        )
        first_pass = world.clock.monotonic()
        world.fake.control.delete_runner(ids[0])  # as from GitHub's UI
        world.fake.control.queue_job([SCALE_SET])  # a message brings the new statistics
        await eventually(
            lambda: count_is(2), clock=world.clock, max_step=1.0, what="the new count published"
        )

        async def gone() -> bool:
            return not await world.runner_exists(names[0])

        await eventually(gone, clock=world.clock, max_step=5.0, what="the runner deleted")
        assert world.clock.monotonic() - first_pass < INTERVAL, "not the scheduled pass"
        assert all([await world.runner_exists(name) for name in names[1:]])
        assert "RegistrationMissing" in await world.event_reasons()


def passes(world: World) -> int:
    """GitHub runner lists (REST) so far: a pass with nothing to do lists them once; one that
    acts twice (its plan on the caches, then again on fresh reads)."""
    return sum(
        1
        for r in world.fake.control.requests_to("/actions/runners", "GET")
        if r.path.rstrip("/").endswith("/actions/runners")
    )


async def test_L6_a_brief_disagreement_does_not_run_the_pass_early(world: World) -> None:
    """A registration appears on GitHub 10 s before its EphemeralRunner records it (less than
    the sustain time): the counts disagree, then agree, and no pass runs before it is due."""
    await world.create_set()
    await world.create_runner(f"{PREFIX}b0", status={"ready": True})
    async with registration_pass(world), listener(world):

        async def count_is(expected: int) -> bool:
            return await published(world) == expected

        # the first pass runs at once; no virtual time passes until it has listed GitHub's
        # runners, so it began now (it may list them after the listener publishes its count)
        await eventually(lambda: passes(world) == 1, within=30.0, what="the first pass")
        first_pass = world.clock.monotonic()
        await eventually(
            lambda: count_is(1), clock=world.clock, max_step=1.0, what="the listener's count"
        )
        assert passes(world) == 1
        world.clock.advance(EARLY.min_gap + 10.0)  # past the rate limit: only sustain holds it
        late = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}b1").id
        world.fake.control.queue_job([SCALE_SET])
        await eventually(lambda: count_is(2), clock=world.clock, max_step=1.0, what="count 2")
        world.clock.advance(10.0)
        await world.create_runner(f"{PREFIX}b1", register=False, status={"runnerId": late})
        await eventually(
            lambda: world.clock.monotonic() >= first_pass + INTERVAL - 10.0,
            clock=world.clock,
            max_step=5.0,
            what="time short of the interval",
        )
        assert passes(world) == 1, "no early pass"
        await eventually(
            lambda: passes(world) == 2, clock=world.clock, max_step=5.0, what="the next pass"
        )
        assert world.clock.monotonic() - first_pass >= INTERVAL - 1e-6


async def test_L6_a_replaced_listener_session_runs_the_pass_at_once(world: World) -> None:
    """GitHub removed a runner's registration (as after its job) and the listener never heard:
    its count stays, so the counts agree. Then its session expires and it creates a new one —
    the job events queued in the old one may be lost — and the pass runs at once: sooner than
    any disagreement could make it (that needs ``sustain`` from the new session's count)."""
    await world.create_set()
    names = [f"{PREFIX}s{i}" for i in range(2)]
    ids = [await world.create_runner(name, status={"ready": True}) for name in names]
    async with registration_pass(world), listener(world):

        async def count_is(expected: int) -> bool:
            return await published(world) == expected

        await eventually(
            lambda: count_is(2), clock=world.clock, max_step=1.0, what="the listener's count"
        )
        await eventually(
            lambda: passes(world) == 1, clock=world.clock, max_step=1.0, what="the first pass"
        )
        world.fake.control.delete_runner(ids[0])  # no message: the listener does not hear of it
        world.clock.advance(EARLY.min_gap / 4)
        assert passes(world) == 1
        assert await published(world) == 2, "the counts still agree"

        replaced = world.clock.monotonic()
        world.fake.control.expire_session(world.scale_set_id)

        async def gone() -> bool:
            return not await world.runner_exists(names[0])

        await eventually(gone, clock=world.clock, max_step=1.0, what="the runner deleted")
        assert world.clock.monotonic() - replaced < EARLY.sustain, "not the disagreement's pass"
        assert passes(world) == 1 + 2, "the first pass, then one that acted"
        assert await world.runner_exists(names[1])
        assert "RegistrationMissing" in await world.event_reasons()
        runner_set = await world.client.get(EPHEMERAL_RUNNER_SET, world.key(SET))
        assert "sessionReplacedAt" in json.loads(runner_set.annotations[LISTENER_STATE_ANNOTATION])
