"""Fixtures of the registration pass tests: the ``ManualClock`` (wall time starting at the real
time), the fake GitHub service, and the ``World`` (``world.py``) in a fresh namespace with an
Event recorder posting and GitHub clients."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from tests.integration.controllers.registrationpass.world import PAT, SCALE_SET, World
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.clock import ManualClock
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient
from scaleset.kube.resources import SECRET
from scaleset.runtime.events import EventRecorder

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
    recorder = EventRecorder(client, clock=clock)
    posting = asyncio.ensure_future(recorder.run())
    github = GitHubClients(
        client, ClientOptions(clock=clock, environ={}, allow_http_github_url=True)
    )
    try:
        yield World(kube_backend, client, namespace, clock, fake, scale_set_id, recorder, github)
    finally:
        posting.cancel()
        await github.aclose()
