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

    ``in_flight`` counts this client's requests on the wire; it wraps the HTTP transport *under*
    the hooks, so a hook that holds a request back is not a request on the wire."""
    transport: httpx2.AsyncBaseTransport = backend.transport()
    if in_flight is not None:
        transport = in_flight(transport)
    if hooks:
        transport = InterceptingTransport(transport, hooks)
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
        clock=clock,
    )


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
