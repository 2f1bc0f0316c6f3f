"""Fixtures of the Kubernetes client and runtime suites; their conftests re-export them.

- ``client``: our ``KubeClient`` on the test backend (``kube_backend``);
- ``proxy``: a started ``TcpProxy`` in front of the backend;
- ``actions_crds``: our four CRDs installed and Established.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from scaleset.kube.client import KubeClient
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import install_actions_crds, make_client
from tests.support.netfaults import TcpProxy


@pytest.fixture
async def client(kube_backend: KubeBackend) -> AsyncIterator[KubeClient]:
    async with make_client(kube_backend) as kube_client:
        yield kube_client


@pytest.fixture
async def proxy(kube_backend: KubeBackend) -> AsyncIterator[TcpProxy]:
    tcp = TcpProxy.for_config(kube_backend.config())
    await tcp.start()
    yield tcp
    await tcp.stop()


@pytest.fixture
async def actions_crds(kube_backend: KubeBackend) -> None:
    await install_actions_crds(kube_backend)
