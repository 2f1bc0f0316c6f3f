"""Fixtures for the fake GitHub's state-rule tests: a running fake on a manual clock, a raw
httpx2 client, and ``ScaleSetClient`` — a minimal hand-written client (not ``scaleset.github``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from tests.integration.embedded_actions.wire_client import PAT, ScaleSetClient
from tests.plugins.secret_guard import register_secret_source

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, FakeSettings


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def settings() -> FakeSettings:
    return FakeSettings()


@pytest.fixture
async def fake(clock: ManualClock, settings: FakeSettings) -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub(clock=clock, poll_hold_seconds=0.05, settings=settings) as server:
        server.add_pat(PAT)
        register_secret_source(server.control.issued_secrets)
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=20.0) as client:
        yield client


@pytest.fixture
async def control(fake: FakeGitHub) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the fake's control API (``/_fake``), with its control token."""
    async with httpx2.AsyncClient(
        base_url=fake.base_url + "/_fake",
        headers={"Authorization": f"Bearer {fake.control_token}"},
        timeout=20.0,
    ) as client:
        yield client


@pytest.fixture
async def org(fake: FakeGitHub, http: httpx2.AsyncClient) -> ScaleSetClient:
    """Registered against the ``acme`` organization with the test PAT."""
    return await ScaleSetClient.register(http, fake, fake.config_url("acme"))
