"""Outage recovery end to end (ARC #4395/#4396): the set, the runner controller and the
registration pass run together with the simulated kubelet and runner on one ManualClock. The
fake's runner broker goes down; the runner process keeps retrying (its pod stays Running) and
GitHub loses its connection, so the registration shows offline for good. The pass notes it,
replaces the runner once the offline bound has passed (Event ``RunnerOffline``), and the set
creates a fresh runner, which comes up once the broker is back."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from tests.integration.controllers.ephemeralrunnerset.test_with_runner_controller import (
    both_controllers,
    kubelet,
)
from tests.integration.controllers.ephemeralrunnerset.world import SCALE_SET, World
from tests.integration.controllers.registrationpass.world import PAT
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.registrationpass import setup as registrationpass_setup
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.controllers.setup import ProcessContext
from scaleset.embedded.actions import FakeGitHub
from scaleset.embedded.actions.faults import Surface
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube import KubeClient
from scaleset.kube.resources import SECRET

__all__ = ["kubelet"]

SETTINGS = Settings(interval=60.0, offline_bound=600.0)


@pytest.fixture
async def world(
    kube_backend: KubeBackend,
    client: KubeClient,
    actions_crds: None,
    namespace: str,
    clock: ManualClock,
    fake: FakeGitHub,
) -> World:
    """The EphemeralRunnerSet tests' world (``world.py`` there), on this directory's clock and
    fake (which accepts ``PAT``)."""
    token = base64.b64encode(PAT.encode()).decode()
    await client.create(
        SECRET,
        {"metadata": {"name": "github-config"}, "data": {"github_token": token}},
        namespace=namespace,
    )
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), SCALE_SET)
    return World(kube_backend, client, namespace, clock, fake, scale_set_id)


@asynccontextmanager
async def registration_pass(world: World) -> AsyncIterator[None]:
    own = make_client(world.backend, clock=world.clock)
    github = GitHubClients(
        own, ClientOptions(clock=world.clock, environ={}, allow_http_github_url=True)
    )
    try:
        manager = manual_manager(own, world.namespace, "pass-1", world.clock, lease="pass-lease")
        options = ControllerOptions(controller_namespace=world.namespace, listener_image="x")
        context = ProcessContext(options, own, world.clock)
        registrationpass_setup.build(manager, context, settings=SETTINGS, github=github)
        async with running(manager):
            yield
    finally:
        await github.aclose()
        await own.close()


async def test_runner_offline_for_good_after_an_outage_is_replaced(
    world: World, kubelet: tuple[SimulatedKubelet, dict[str, list[RunnerPhase]]]
) -> None:
    _, phases = kubelet
    await world.create_set(replicas=1, patch_id=1)
    async with both_controllers(world), registration_pass(world):

        async def one_listening() -> bool:
            names = await world.names()
            return len(names) == 1 and RunnerPhase.LISTENING in phases.get(names[0], [])

        await world.until(one_listening, "one runner listening")
        [first] = await world.names()
        outage = world.fake.control.faults.unavailable(None, surface=Surface.BROKER)

        def offline() -> bool:
            world.fake.control.sweep()
            truth = world.fake.control.snapshot()
            return all(not r.connected for r in truth.runners if r.name == first)

        await eventually(offline, clock=world.clock, within=60.0, max_step=30.0, what="offline")
        assert world.registered(first), "GitHub still holds the registration, offline"

        async def replaced() -> bool:
            names = await world.names()
            return first not in names and len(names) == 1

        await eventually(
            replaced, clock=world.clock, within=120.0, max_step=30.0, what="runner replaced"
        )
        assert "RunnerOffline" in await world.events(name=first)
        assert not world.registered(first)
        world.fake.control.faults.remove(outage)
        [second] = await world.names()

        async def second_listening() -> bool:
            return RunnerPhase.LISTENING in phases.get(second, [])

        await world.until(second_listening, "the new runner listening")
