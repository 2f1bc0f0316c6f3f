"""Our production ``KubeClient`` against a test backend, and small object bodies.

``make_client`` builds the client the way production does (``KubeClient.from_config``), with
the backend's TLS and credentials; optionally through a ``TcpProxy`` (faults below HTTP), with
``RequestHook``s (an action just before a matching request is sent) and a transport wrapper.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import httpx2
from lightkube.config.client_adapter import verify_cluster
from prometheus_client import CollectorRegistry

from scaleset.api.crds import all_crds
from scaleset.clock import Clock
from scaleset.devtools.transports import InterceptingTransport, RequestHook
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.errors import AlreadyExists, Conflict
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CUSTOM_RESOURCE_DEFINITION
from tests.plugins.kube_backends import KubeBackend
from tests.support.netfaults import TcpProxy
from tests.support.virtual_time import InFlight
from tests.support.waiting import eventually

FAST = ClientSettings(qps=math.inf, burst=1000, timeout=30.0, watch_read_grace=2.0)
"""No client-side rate limit (so a ``ManualClock`` never holds a request back) and short grace."""

Wrap = Callable[[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport]


def make_client(
    backend: KubeBackend,
    *,
    hooks: Sequence[RequestHook] = (),
    wrap: Wrap | None = None,
    proxy: TcpProxy | None = None,
    metrics: RuntimeMetrics | None = None,
    settings: ClientSettings = FAST,
    clock: Clock | None = None,
    in_flight: InFlight | None = None,
) -> KubeClient:
    """Our production client against ``backend`` (through ``proxy`` and ``wrap`` if given).

    As in production, requests and watches go through two connection pools, each sized as
    production sizes it; the client itself sends each request to its pool. ``hooks`` see both.
    ``wrap`` is called once and sees all traffic, so with it the two pools sit under one
    transport (``PoolPerUse``). ``in_flight`` counts this client's requests on the wire; it
    sits *under* the hooks, so a hook that holds a request back is not on the wire."""
    requests = _pool(backend, settings.max_connections)
    if in_flight is not None:
        requests = in_flight(requests)
    watches = _pool(backend, settings.max_watch_connections)
    if wrap is not None:
        requests = watches = wrap(_hooked(PoolPerUse(requests, watches), hooks))
    else:
        requests, watches = _hooked(requests, hooks), _hooked(watches, hooks)
    config = backend.config()
    if proxy is not None:
        config = proxy.config_through(config)
    return KubeClient.from_config(
        config,
        settings=settings,
        transport=requests,
        watch_transport=watches,
        metrics=metrics or RuntimeMetrics(CollectorRegistry()),
        clock=clock,
    )


def _hooked(
    transport: httpx2.AsyncBaseTransport, hooks: Sequence[RequestHook]
) -> httpx2.AsyncBaseTransport:
    return InterceptingTransport(transport, hooks) if hooks else transport


def _pool(backend: KubeBackend, max_connections: int | None) -> httpx2.AsyncBaseTransport:
    """An HTTP transport with the backend's TLS and the pool size production would give it
    (``build_http_client``; an injected transport owns its pool)."""
    config = backend.config()
    assert config.user is not None
    return httpx2.AsyncHTTPTransport(
        verify=verify_cluster(config.cluster, config.user, config.abs_file),
        limits=httpx2.Limits(
            max_connections=max_connections,
            max_keepalive_connections=20 if max_connections is not None else None,
        ),
    )


class PoolPerUse(httpx2.AsyncBaseTransport):
    """Sends watch requests through ``watches`` and everything else through ``requests``: two
    connection pools, as ``KubeClient.from_config`` builds them in production, under one
    transport that test wrappers can see whole."""

    def __init__(
        self, requests: httpx2.AsyncBaseTransport, watches: httpx2.AsyncBaseTransport
    ) -> None:
        self._requests = requests
        self._watches = watches
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        watching = request.url.params.get("watch") == "true"
        pool = self._watches if watching else self._requests
        return await pool.handle_async_request(request)

    async def aclose(self) -> None:
        if not self._closed:  # closed by both the request and the watch client
            self._closed = True
            await self._requests.aclose()
            await self._watches.aclose()


_installed: set[str] = set()


async def install_actions_crds(backend: KubeBackend) -> None:
    """Our four CRDs, installed (or replaced by the current ones: the real test server is shared
    and outlives a model change) once per backend and Established."""
    if backend.name in _installed:
        return
    async with make_client(backend) as admin:
        for crd in all_crds():
            try:
                await admin.create(CUSTOM_RESOURCE_DEFINITION, crd)
            except AlreadyExists:
                await _replace_crd(admin, crd)
        for crd in all_crds():
            key = ObjectKey("", crd["metadata"]["name"])

            async def established(key: ObjectKey = key) -> bool:
                obj = await admin.get(CUSTOM_RESOURCE_DEFINITION, key)
                conditions = obj.status.get("conditions") or []
                return any(
                    c.get("type") == "Established" and c.get("status") == "True" for c in conditions
                )

            await eventually(established, within=30.0, what=f"CRD {key.name} Established")
    _installed.add(backend.name)


async def _replace_crd(admin: KubeClient, crd: dict[str, Any]) -> None:
    """PUT ``crd`` over the installed one (a conflicting concurrent replace: read again)."""
    key = ObjectKey("", crd["metadata"]["name"])
    for _ in range(5):
        current = await admin.get(CUSTOM_RESOURCE_DEFINITION, key)
        if current.raw.get("spec") == crd["spec"]:
            return
        metadata = {**crd["metadata"], "resourceVersion": current.resource_version}
        with contextlib.suppress(Conflict):
            await admin.replace(CUSTOM_RESOURCE_DEFINITION, {**crd, "metadata": metadata})
            return
    raise AssertionError(f"could not replace CRD {key.name}")


def configmap(name: str, namespace: str, value: str = "0", **labels: str) -> dict[str, Any]:
    """A ConfigMap body with ``data.value`` and ``labels``."""
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"value": value},
    }


def ephemeral_runner(name: str, namespace: str) -> dict[str, Any]:
    """A minimal valid EphemeralRunner body."""
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "test"}},
        "spec": {
            "githubConfigUrl": "https://github.com/org/repo",
            "githubConfigSecret": "secret",
            "runnerScaleSetId": 1,
            "spec": {"containers": [{"name": "runner", "image": "runner:latest"}]},
        },
    }
