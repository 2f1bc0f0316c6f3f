"""Helpers of the listener suites: runner and runner-set bodies (created through our
``KubeClient``), recording of the requests a client sends, and ``drive`` (await something while
a ``ManualClock`` lets virtual time pass, so retry back-offs run without real waiting)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from tests.support.kube import ephemeral_runner
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.kube import KubeClient, KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET

T = TypeVar("T")


async def drive(clock: ManualClock, awaitable: Awaitable[T], *, within: float = 30.0) -> T:
    """Await ``awaitable``, advancing ``clock`` to each pending deadline while it waits."""
    task = asyncio.ensure_future(awaitable)
    try:
        await eventually(task.done, clock=clock, within=within, what="the call to finish")
    finally:
        if not task.done():
            task.cancel()
    return task.result()


async def make_runner(
    client: KubeClient, namespace: str, name: str, status: dict[str, Any] | None = None
) -> KubeObject:
    """An EphemeralRunner, with ``status`` written through the status subresource."""
    runner = await client.create(EPHEMERAL_RUNNER, ephemeral_runner(name, namespace))
    if status:
        runner = await client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"status": status}, status=True
        )
    return runner


def runner_set_body(name: str, namespace: str, *, replicas: int | None = None) -> dict[str, Any]:
    """A minimal EphemeralRunnerSet."""
    spec: dict[str, Any] = {
        "patchID": 0,
        "ephemeralRunnerSpec": {
            "githubConfigUrl": "https://github.com/acme",
            "githubConfigSecret": "secret",
            "runnerScaleSetId": 1,
            "spec": {"containers": [{"name": "runner", "image": "runner:latest"}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


async def make_runner_set(client: KubeClient, namespace: str, name: str) -> KubeObject:
    return await client.create(EPHEMERAL_RUNNER_SET, runner_set_body(name, namespace))


@dataclass
class SentRequests:
    """Bodies of the requests a client sent; ``wrap`` is a ``make_client(wrap=...)`` seam."""

    bodies: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    observers: list[Callable[[httpx2.Request], None]] = field(default_factory=list)
    """Called with each request just before it is sent."""
    answered: list[Callable[[httpx2.Request, httpx2.Response], None]] = field(default_factory=list)
    """Called with each request and its response once the response has arrived."""

    def wrap(self, inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        return _Recording(inner, self)

    def record(self, request: httpx2.Request) -> None:
        content = request.content
        body = json.loads(content) if content else {}
        self.bodies.append((request.method, request.url.path, body))
        for observer in self.observers:
            observer(request)

    def patches(self, path_suffix: str) -> list[dict[str, Any]]:
        return [b for m, p, b in self.bodies if m == "PATCH" and p.endswith(path_suffix)]


class _Recording(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, sent: SentRequests) -> None:
        self._inner = inner
        self._sent = sent

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self._sent.record(request)
        response = await self._inner.handle_async_request(request)
        for observer in self._sent.answered:
            observer(request, response)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


async def phase_of(client: KubeClient, namespace: str, name: str) -> str | None:
    runner = await client.get(EPHEMERAL_RUNNER, ObjectKey(namespace, name))
    phase = runner.status.get("phase")
    return phase if isinstance(phase, str) else None
