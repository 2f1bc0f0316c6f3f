"""Fixtures of the EphemeralRunner controller tests: the ``ManualClock``, the fake GitHub
service, the ``World`` (``world.py``) in a fresh namespace, and the simulated kubelet running
the simulated runner for runner pods."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from tests.integration.controllers.ephemeralrunner.world import PAT, SCALE_SET, RunnerPhases, World
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.kube import KubeClient
from scaleset.kube.resources import SECRET

__all__ = ["actions_crds", "client"]


@pytest.fixture
def clock() -> ManualClock:
    """Virtual time; its wall time starts at the real time, like the API servers' timestamps."""
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
) -> World:
    token = base64.b64encode(PAT.encode()).decode()
    await client.create(
        SECRET,
        {"metadata": {"name": "github-config"}, "data": {"github_token": token}},
        namespace=namespace,
    )
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), SCALE_SET)
    return World(kube_backend, client, namespace, clock, fake, scale_set_id, RunnerPhases())


@pytest.fixture
async def kubelet(world: World) -> AsyncIterator[SimulatedKubelet]:
    async with world.kubelet() as running_kubelet:
        yield running_kubelet
