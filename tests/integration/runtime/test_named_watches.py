"""Watches of single named Secrets (``runtime.named_watches``), on both API servers: a followed
Secret is cached once its watch has listed and a change calls its owners; what nobody follows
any more is not watched; a namespace where the watch is refused (403) is read fresh instead, and
tried again after ``retry_forbidden_after``."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.devtools.transports import ImpersonatingTransport, ServiceAccountRef
from scaleset.kube.client import KubeClient
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP, SECRET, SERVICE_ACCOUNT
from scaleset.runtime.named_watches import NamedWatches

RBAC_PATH = "/apis/rbac.authorization.k8s.io/v1"


def secret(name: str, namespace: str, value: str = "dmFsdWU=") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"token": value}}


@asynccontextmanager
async def running(watches: NamedWatches) -> AsyncIterator[NamedWatches]:
    task = asyncio.ensure_future(watches.run())
    try:
        await eventually(lambda: watches.running or task.done(), what="the watches running")
        yield watches
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_followed_secret_is_cached_and_its_change_calls_its_owners(
    client: KubeClient, kube_backend: KubeBackend, namespace: str
) -> None:
    await client.create(SECRET, secret("github", namespace))
    await client.create(SECRET, secret("other", namespace))
    key = ObjectKey(namespace, "github")
    calls: list[str] = []
    async with make_client(kube_backend) as watcher:
        watches = NamedWatches(watcher, SECRET)
        watches.follow("listener-a", [key], lambda: calls.append("a"))
        assert watches.cached(key) is None, "not running: nothing cached"
        async with running(watches):
            await eventually(lambda: watches.cached(key) is not None, what="the watch listed")
            assert watches.cached(ObjectKey(namespace, "other")) is None, "not followed"
            assert watches.holds(SECRET, namespace, "github") is watches.cached(key)
            assert watches.holds(CONFIG_MAP, namespace, "github") is None, "another kind"
            watches.follow("listener-b", [key], lambda: calls.append("b"))
            before = len(calls)
            patched = await client.patch_merge(SECRET, key, {"data": {"token": "cm90YXRlZA=="}})

            def rotated() -> bool:
                cached = watches.cached(key)
                return cached is not None and cached.resource_version == (patched.resource_version)

            await eventually(rotated, what="the rotated Secret cached")
            await eventually(lambda: calls[before:].count("a") >= 1, what="owner a called")
            await eventually(lambda: calls[before:].count("b") >= 1, what="owner b called")
            assert watches.watched == (key,), "one watch for both owners"


async def test_a_secret_nobody_follows_any_more_is_not_watched(
    client: KubeClient, kube_backend: KubeBackend, namespace: str
) -> None:
    first, second = ObjectKey(namespace, "first"), ObjectKey(namespace, "second")
    for key in (first, second):
        await client.create(SECRET, secret(key.name, namespace))
    async with make_client(kube_backend) as watcher:
        watches = NamedWatches(watcher, SECRET)
        async with running(watches):
            watches.follow("a", [first], lambda: None)
            watches.follow("b", [first], lambda: None)
            await eventually(lambda: watches.cached(first) is not None, what="first listed")
            watches.follow("a", [second], lambda: None)  # a now reads another Secret
            assert set(watches.watched) == {first, second}, "b still follows the first"
            watches.forget("b")
            assert watches.watched == (second,)
            assert watches.cached(first) is None
            await eventually(lambda: watches.cached(second) is not None, what="second listed")
            watches.forget("a")
            assert watches.watched == ()
            assert watches.cached(second) is None
    assert watches.watched == ()


async def test_stopped_watches_cache_nothing_and_start_again_with_the_next_run(
    client: KubeClient, kube_backend: KubeBackend, namespace: str
) -> None:
    key = ObjectKey(namespace, "github")
    await client.create(SECRET, secret("github", namespace))
    async with make_client(kube_backend) as watcher:
        watches = NamedWatches(watcher, SECRET)
        watches.follow("a", [key], lambda: None)
        async with running(watches):
            await eventually(lambda: watches.cached(key) is not None, what="listed")
        assert watches.cached(key) is None, "stopped (leadership lost): read fresh"
        assert watches.watched == ()
        async with running(watches):  # leading again: the followed key is watched again
            await eventually(lambda: watches.cached(key) is not None, what="listed again")


@pytest.fixture
async def reader_account(
    client: KubeClient, kube_http: httpx2.AsyncClient, namespace: str
) -> ServiceAccountRef:
    """A ServiceAccount that may get and list Secrets in ``namespace`` but not watch them (the
    rule ARC's runner scale set chart gives the controller there)."""
    name = f"reader-{secrets.token_hex(3)}"
    await client.create(SERVICE_ACCOUNT, {"metadata": {"name": name, "namespace": namespace}})
    role = {
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}],
    }
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    for path, body in (("roles", role), ("rolebindings", binding)):
        answer = await kube_http.post(f"{RBAC_PATH}/namespaces/{namespace}/{path}", json=body)
        assert answer.status_code == 201, answer.text
    return ServiceAccountRef(namespace, name)


async def test_a_refused_watch_leaves_the_namespace_to_fresh_reads_and_is_tried_again_later(
    client: KubeClient,
    kube_backend: KubeBackend,
    namespace: str,
    reader_account: ServiceAccountRef,
) -> None:
    key = ObjectKey(namespace, "github")
    await client.create(SECRET, secret("github", namespace))
    clock = ManualClock()
    watcher = make_client(
        kube_backend,
        clock=clock,
        wrap=lambda inner: ImpersonatingTransport.as_service_account(inner, reader_account),
    )

    async def readable() -> bool:  # the RoleBinding in force (real RBAC caches for a moment)
        return await watcher.get(SECRET, key) is not None

    async with watcher:
        await eventually(readable, what="the reader's Role in force", within=30.0)
        watches = NamedWatches(watcher, SECRET, clock=clock, retry_forbidden_after=600.0)
        async with running(watches):
            watches.follow("a", [key], lambda: None)
            assert watches.watched == (key,)
            await eventually(lambda: watches.watched == (), what="the refused watch given up")
            assert watches.cached(key) is None, "refused: read fresh"
            watches.follow("b", [ObjectKey(namespace, "other")], lambda: None)
            watches.follow("a", [key], lambda: None)
            assert watches.watched == (), "the namespace is not tried again at once"
            clock.advance(601.0)
            watches.follow("a", [key], lambda: None)
            assert key in watches.watched, "tried again after retry_forbidden_after"
            await eventually(lambda: key not in watches.watched, what="refused again")
