"""Fixtures of the EphemeralRunnerSet controller tests: the ``ManualClock`` (wall time starting
at the real time), the fake GitHub service, the ``World`` (``world.py``) in a fresh namespace, and
``Finalizers`` playing the end of the runner controller's deletion path."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from tests.integration.controllers.ephemeralrunnerset.world import PAT, SCALE_SET, Finalizers, World
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient
from scaleset.kube.resources import SECRET

__all__ = ["actions_crds", "client"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(wall=datetime.now(UTC))


@pytest.fixture
async def fake(clock: ManualClock) -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub(clock=clock, poll_hold_seconds=0.05) as server:
        server.add_pat(register_secret(PAT))
        register_secret_source(server.control.issued_secrets)
        yield server


@pytest.fixture
async def world(
    kube_backend: KubeBackend,
    client: KubeClient,
    actions_crds: None,
    namespace: str,
    clock: ManualClock,
    fake: FakeGitHub,
) -> AsyncIterator[World]:
    token = base64.b64encode(PAT.encode()).decode()
    await client.create(
        SECRET,
        {"metadata": {"name": "github-config"}, "data": {"github_token": token}},
        namespace=namespace,
    )
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), SCALE_SET)
    world = World(kube_backend, client, namespace, clock, fake, scale_set_id)
    try:
        yield world
    finally:
        for task in world.runner_tasks:
            task.cancel()
        await asyncio.gather(*world.runner_tasks, return_exceptions=True)


@pytest.fixture
async def finalizers(world: World) -> AsyncIterator[Finalizers]:
    """Deleted runners lose their finalizers (the runner controller's part)."""
    player = Finalizers(world.client, world.namespace)
    task = asyncio.ensure_future(player.informer.run())
    await player.informer.wait_synced()
    try:
        yield player
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
