"""Both controllers together, with the simulated kubelet running the simulated runner: the set
creates runners, the runner controller registers them and starts their pods, the runners come
up idle; a job is taken by one runner while no listener writes anything (its phase is stale),
and a force-state scale-down to 0 removes the idle runner and keeps the busy one because GitHub
says JobStillRunning."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import pytest
from prometheus_client import CollectorRegistry
from tests.integration.controllers.ephemeralrunnerset.world import SCALE_SET, World
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.api import RunnerState, classify_status, keys
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.controllers.ephemeralrunner.setup import USER_AGENT, build
from scaleset.controllers.ephemeralrunnerset import setup as runner_set_setup
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
from scaleset.controllers.ephemeralrunnerset.observed import runner_status
from scaleset.controllers.ephemeralrunnerset.settings import Settings as RunnerSetSettings
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.setup import ProcessContext
from scaleset.embedded.kubelet import SimulatedKubelet, default_runtime, runner_program
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube import KubeObject


@asynccontextmanager
async def both_controllers(world: World) -> AsyncIterator[None]:
    own = make_client(world.backend, clock=world.clock)
    github = GitHubClients(
        own, ClientOptions(clock=world.clock, environ={}, allow_http_github_url=True)
    )
    try:
        manager = manual_manager(own, world.namespace, "controller-1", world.clock)
        options = ControllerOptions(controller_namespace=world.namespace, listener_image="x")
        context = ProcessContext(options, own, world.clock)
        build(manager, context, settings=Settings(user_agent=USER_AGENT), github=github)
        runner_set_setup.build(
            manager,
            context,
            settings=RunnerSetSettings(),
            github=github,
            metrics=RunnerSetMetrics(CollectorRegistry()),
        )
        async with running(manager):
            await eventually(manager.leading.is_set, within=30.0, what="leading")
            yield
    finally:
        await github.aclose()
        await own.close()


@pytest.fixture
async def kubelet(
    world: World,
) -> AsyncIterator[tuple[SimulatedKubelet, dict[str, list[RunnerPhase]]]]:
    phases: dict[str, list[RunnerPhase]] = {}

    def record(run: object, phase: RunnerPhase) -> None:
        pod = getattr(run, "pod")  # noqa: B009 - ContainerRun.pod
        phases.setdefault(pod.name, []).append(phase)

    runtime = default_runtime(runner_program(on_phase=record))
    async with SimulatedKubelet(
        world.client,
        nodes=["sim-node-1"],
        namespaces=[world.namespace],
        label_selector=keys.RUNNER_POD_SELECTOR,
        clock=world.clock,
        runtime=runtime,
    ) as running_kubelet:
        yield running_kubelet, phases


def states(runners: Sequence[KubeObject]) -> list[RunnerState]:
    return [classify_status(runner_status(r), deleting=r.is_deleting) for r in runners]


async def test_L3_with_the_runner_controller_idle_runners_go_and_a_busy_one_stays(
    world: World, kubelet: tuple[SimulatedKubelet, dict[str, list[RunnerPhase]]]
) -> None:
    _, phases = kubelet
    await world.create_set(replicas=2, patch_id=1)
    async with both_controllers(world):

        async def both_idle() -> bool:
            runners = await world.runners()
            return len(runners) == 2 and states(runners) == [RunnerState.IDLE] * 2

        await world.until(both_idle, "two idle runners (registered, pods running)")
        names = await world.names()
        world.fake.control.queue_job([SCALE_SET], duration_seconds=10 * 86_400)

        def one_busy() -> bool:
            return sum(RunnerPhase.JOB_STARTED in phases.get(n, []) for n in names) == 1

        await world.until(one_busy, "one runner took the job")
        busy = next(n for n in names if RunnerPhase.JOB_STARTED in phases.get(n, []))
        idle = next(n for n in names if n != busy)
        assert states(await world.runners()) == [RunnerState.IDLE] * 2, "no listener: stale"
        await world.patch_replicas(0, 0)

        async def only_busy_left() -> bool:
            return await world.names() == [busy]

        await world.until(only_busy_left, "the idle runner removed")
        assert not world.registered(idle)
        assert world.registered(busy)
        truth = world.fake.control.snapshot()
        assert any(r.name == busy and r.busy for r in truth.runners), "its job still runs"
