"""``ReadsAhead`` over HTTP, on both API servers: a read started ahead is the one taken (one
request, however often it is started), a read not started is made when taken, NotFound is None,
and a read nobody took is cancelled when the reads are closed — even one the server has not
answered yet."""

from __future__ import annotations

import asyncio
import contextlib

import httpx2
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.waiting import eventually

from scaleset.controllers.reads_ahead import ReadsAhead
from scaleset.devtools.transports import RequestHook
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import SECRET


def _secret(namespace: str, name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"a": "b"},
    }


async def test_a_read_started_ahead_is_taken_once_and_one_not_started_is_made_when_taken(
    kube_backend: KubeBackend, namespace: str
) -> None:
    sent: list[str] = []

    async def record(request: httpx2.Request) -> None:
        if request.url.params.get("watch") is None:
            sent.append(request.url.path.rsplit("/", 1)[1])

    hooks = [RequestHook("GET", "/secrets/", record, times=10**9)]
    async with make_client(kube_backend, hooks=hooks) as client:
        await client.create(SECRET, _secret(namespace, "ahead"), namespace=namespace)
        await client.create(SECRET, _secret(namespace, "later"), namespace=namespace)
        async with contextlib.aclosing(ReadsAhead(client)) as reads:
            reads.start(SECRET, ObjectKey(namespace, "ahead"))
            reads.start(SECRET, ObjectKey(namespace, "ahead"))
            reads.start(SECRET, ObjectKey(namespace, "absent"))
            ahead = await reads.take(SECRET, ObjectKey(namespace, "ahead"))
            absent = await reads.take(SECRET, ObjectKey(namespace, "absent"))
            assert "later" not in sent
            later = await reads.take(SECRET, ObjectKey(namespace, "later"))
    assert ahead is not None
    assert ahead.name == "ahead"
    assert later is not None
    assert later.name == "later"
    assert absent is None
    assert sorted(sent) == ["absent", "ahead", "later"], sent


async def test_a_read_nobody_took_is_cancelled_when_the_reads_close(
    kube_backend: KubeBackend, namespace: str
) -> None:
    released = asyncio.Event()
    arrived = asyncio.Event()

    async def hold(request: httpx2.Request) -> None:
        arrived.set()
        await released.wait()  # never set: only a cancellation ends this request

    hooks = [RequestHook("GET", "/secrets/held$", hold)]
    async with make_client(kube_backend, hooks=hooks) as client:
        reads = ReadsAhead(client)
        reads.start(SECRET, ObjectKey(namespace, "held"))
        await eventually(arrived.is_set, within=10.0, what="the read sent")
        await asyncio.wait_for(reads.aclose(), timeout=10.0)
        assert not reads.started(SECRET, ObjectKey(namespace, "held"))
    assert not released.is_set()
