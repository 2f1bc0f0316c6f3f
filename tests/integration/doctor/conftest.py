"""Fixtures of the doctor's integration tests: our CRDs, a namespace, the fake GitHub (one
scale set, a PAT in the namespace's GitHub Secret) and the ``Cluster`` (``world.py``)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from tests.integration.doctor.world import PAT, Cluster
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient
from scaleset.kube.resources import SECRET

__all__ = ["actions_crds", "client"]


@pytest.fixture
async def fake() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub(clock=ManualClock(wall=datetime.now(UTC))) as server:
        server.add_pat(register_secret(PAT))
        register_secret_source(server.control.issued_secrets)
        yield server


@pytest.fixture
async def cluster(
    kube_backend: KubeBackend,
    client: KubeClient,
    actions_crds: None,
    namespace: str,
    fake: FakeGitHub,
) -> AsyncIterator[Cluster]:
    token = base64.b64encode(PAT.encode()).decode()
    await client.create(
        SECRET,
        {"metadata": {"name": "github-config"}, "data": {"github_token": token}},
        namespace=namespace,
    )
    world = Cluster(client, namespace, fake)
    try:
        yield world
    finally:
        await world.release()
