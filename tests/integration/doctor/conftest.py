"""Fixtures of the doctor's integration tests: our CRDs, a namespace, the fake GitHub over TLS
(one scale set, a PAT in the namespace's GitHub Secret), how the doctor reaches it (the PAT,
the fake's host:port approved as a GitHub Enterprise Server, its CA) and the ``Cluster``
(``world.py``)."""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import trustme
from pydantic import SecretStr
from tests.integration.doctor.world import PAT, Cluster, approved
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.clock import ManualClock
from scaleset.doctor.registrations import GitHubAccess
from scaleset.embedded.actions import FakeGitHub
from scaleset.github import PersonalAccessToken
from scaleset.kube import KubeClient
from scaleset.kube.resources import SECRET

__all__ = ["actions_crds", "client"]


@pytest.fixture(scope="session")
def github_ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def fake(github_ca: trustme.CA) -> AsyncIterator[FakeGitHub]:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    github_ca.issue_cert("127.0.0.1").configure_cert(server_context)
    async with FakeGitHub(
        clock=ManualClock(wall=datetime.now(UTC)), ssl_context=server_context
    ) as server:
        server.add_pat(register_secret(PAT))
        register_secret_source(server.control.issued_secrets)
        yield server


@pytest.fixture
def github(fake: FakeGitHub, github_ca: trustme.CA) -> GitHubAccess:
    """The doctor's way to the fake: a PAT, the fake approved, the fake's CA trusted."""
    return GitHubAccess(
        credentials=PersonalAccessToken(token=SecretStr(PAT)),
        hosts=approved(fake),
        root_ca_pem=github_ca.cert_pem.bytes().decode(),
    )


@pytest.fixture
def no_credentials(github: GitHubAccess) -> GitHubAccess:
    """The fake approved, but no credentials: the GitHub check is skipped."""
    return GitHubAccess(hosts=github.hosts)


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
