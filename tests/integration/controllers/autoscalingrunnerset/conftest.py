"""Fixtures of the AutoscalingRunnerSet controller tests: the ``ManualClock``, the fake GitHub
service, and the ``World`` (``world.py``) in a fresh namespace."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.integration.controllers.autoscalingrunnerset.world import CONFIG_SECRET, PAT, World
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient

__all__ = ["actions_crds", "client"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


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
    found = World(kube_backend, client, namespace, clock, fake)
    await found.put_secret(CONFIG_SECRET, {"github_token": PAT})
    return found
