"""Fixtures for the Kubernetes runtime tests: our ``KubeClient`` on either backend, our CRDs
installed, a TCP proxy for network faults, and condition waiting with a bound."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import httpx2
import pytest
from prometheus_client import CollectorRegistry
from tests.integration.kube.netfaults import TcpProxy
from tests.plugins.kube_backends import KubeBackend

from scaleset.api.crds import all_crds
from scaleset.devtools.transports import RequestHook
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.errors import AlreadyExists
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CUSTOM_RESOURCE_DEFINITION

FAST = ClientSettings(qps=1000.0, burst=1000, timeout=30.0, watch_read_grace=2.0)


def make_client(
    backend: KubeBackend,
    *,
    hooks: Sequence[RequestHook] = (),
    wrap: Callable[[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport] | None = None,
    proxy: TcpProxy | None = None,
    metrics: RuntimeMetrics | None = None,
    settings: ClientSettings = FAST,
) -> KubeClient:
    """Our production client against ``backend`` (through ``proxy`` and ``wrap`` if given)."""
    transport = backend.transport(hooks=hooks)
    if wrap is not None:
        transport = wrap(transport)
    config = backend.config()
    if proxy is not None:
        config = proxy.config_through(config)
    return KubeClient.from_config(
        config,
        settings=settings,
        transport=transport,
        metrics=metrics or RuntimeMetrics(CollectorRegistry()),
    )


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


_installed: set[str] = set()


@pytest.fixture
async def actions_crds(kube_backend: KubeBackend) -> None:
    """Our four CRDs, installed once per backend and Established."""
    if kube_backend.name in _installed:
        return
    async with make_client(kube_backend) as admin:
        for crd in all_crds():
            with contextlib.suppress(AlreadyExists):
                await admin.create(CUSTOM_RESOURCE_DEFINITION, crd)
        for crd in all_crds():
            key = ObjectKey("", crd["metadata"]["name"])

            async def established(key: ObjectKey = key) -> bool:
                obj = await admin.get(CUSTOM_RESOURCE_DEFINITION, key)
                conditions = obj.status.get("conditions") or []
                return any(
                    c.get("type") == "Established" and c.get("status") == "True" for c in conditions
                )

            await eventually(established, within=30.0, what=f"CRD {key.name} Established")
    _installed.add(kube_backend.name)


async def eventually(
    condition: Callable[[], Awaitable[bool]] | Callable[[], bool],
    *,
    within: float = 20.0,
    what: str = "condition",
    interval: float = 0.05,
) -> None:
    """Wait until ``condition()`` is true, failing after ``within`` seconds (a bound, not a
    measurement: the test asserts the condition, never the time it took)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(interval)
