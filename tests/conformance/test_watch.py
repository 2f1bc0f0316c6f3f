"""Watch: events from a resourceVersion, bookmarks on request, 410 Gone for an expired version."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType
from tests.conformance.widgets import (
    API_VERSION,
    GADGET_CRD,
    install_crd,
    resource_path,
    widget,
    widget_path,
)

WATCH_BOUND_S = 30.0
MERGE = PatchType.MERGE
CHURN_WRITES = 120


async def watch_events(
    http: httpx2.AsyncClient, path: str, params: dict[str, str]
) -> AsyncIterator[dict[str, Any]]:
    """Raw watch stream: one decoded event per line (ADDED/MODIFIED/DELETED/BOOKMARK/ERROR)."""
    query = {"watch": "true", "timeoutSeconds": "20", **params}
    async with http.stream("GET", path, params=query, timeout=None) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.strip():
                yield json.loads(line)


async def collect_until(
    events: AsyncIterator[dict[str, Any]], stop_after: int, types: set[str]
) -> list[dict[str, Any]]:
    """Collect events of ``types`` until ``stop_after`` of them arrived (bounded in time)."""
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(WATCH_BOUND_S):
        async for event in events:
            if event["type"] in types:
                seen.append(event)
            if len(seen) >= stop_after:
                break
    return seen


async def test_watch_from_resource_version_sees_added_modified_deleted(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    listed = kube.list(widgets, namespace=namespace)
    assert [w async for w in listed] == []
    start = listed.resourceVersion

    await kube.create(widget("w", namespace, size=1))
    await kube.patch(widgets, "w", {"spec": {"size": 2}}, namespace=namespace, patch_type=MERGE)
    await kube.delete(widgets, "w", namespace=namespace)

    events: list[tuple[str, Any]] = []
    async with asyncio.timeout(WATCH_BOUND_S):
        async for kind, obj in kube.watch(
            widgets, namespace=namespace, resource_version=start, server_timeout=20
        ):
            events.append((kind, obj))
            if len(events) == 3:
                break

    assert [kind for kind, _ in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert [obj["spec"]["size"] for _, obj in events] == [1, 2, 2]
    versions = [int(obj["metadata"]["resourceVersion"]) for _, obj in events]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


async def test_watch_without_resource_version_starts_with_synthetic_added_events(
    kube: AsyncClient, kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    for name in ("a", "b"):
        await kube.create(ConfigMap(metadata=ObjectMeta(name=name, namespace=namespace)))

    events = await collect_until(
        watch_events(kube_http, f"/api/v1/namespaces/{namespace}/configmaps", {}),
        stop_after=3,
        types={"ADDED", "MODIFIED", "DELETED"},
    )

    # the namespace already held the root-CA ConfigMap the controller-manager publishes
    assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in events) == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("ADDED", "kube-root-ca.crt"),
    ]


async def test_watch_honours_label_selector(
    kube: AsyncClient, kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    listed = await kube_http.get(f"/api/v1/namespaces/{namespace}/configmaps")
    start = listed.json()["metadata"]["resourceVersion"]
    await kube.create(
        ConfigMap(metadata=ObjectMeta(name="other", namespace=namespace, labels={"app": "x"}))
    )
    await kube.create(
        ConfigMap(metadata=ObjectMeta(name="mine", namespace=namespace, labels={"app": "runner"}))
    )

    events = await collect_until(
        watch_events(
            kube_http,
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"resourceVersion": start, "labelSelector": "app=runner"},
        ),
        stop_after=1,
        types={"ADDED", "MODIFIED", "DELETED"},
    )

    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "mine")]


async def test_watch_with_bookmarks_requested_is_accepted_and_bookmarks_are_well_formed(
    kube: AsyncClient, kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    # Bookmarks are best-effort on 1.20 (sparse, timing-dependent): their arrival is not
    # required, only their shape when one does arrive before the object's ADDED event.
    start = (await kube_http.get(widget_path(namespace))).json()["metadata"]["resourceVersion"]
    await kube.create(widget("w", namespace))

    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(WATCH_BOUND_S):
        async for event in watch_events(
            kube_http,
            widget_path(namespace),
            {"resourceVersion": start, "allowWatchBookmarks": "true"},
        ):
            seen.append(event)
            if event["type"] == "ADDED":
                break

    assert [
        (e["type"], e["object"]["metadata"].get("name")) for e in seen if e["type"] != "BOOKMARK"
    ] == [("ADDED", "w")]
    for bookmark in (e for e in seen if e["type"] == "BOOKMARK"):
        assert set(bookmark["object"]["metadata"]) == {"resourceVersion"}
        assert bookmark["object"]["kind"] == "Widget"


async def test_watch_from_an_expired_resource_version_is_410_expired_in_the_stream(
    kube: AsyncClient, kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    """A version older than the watch window: HTTP 200, then one ERROR event carrying a 410
    Status (reason Expired). Version "1" predates the Widget CRD, so the real server's watch
    cache for widgets never held it; the burst of writes moves any bounded window past it."""
    await kube.create(widget("churn", namespace, size=0))
    for size in range(1, CHURN_WRITES + 1):
        await kube.patch(
            widgets, "churn", {"spec": {"size": size}}, namespace=namespace, patch_type=MERGE
        )

    events = await collect_until(
        watch_events(kube_http, widget_path(namespace), {"resourceVersion": "1"}),
        stop_after=1,
        types={"ERROR", "ADDED", "MODIFIED", "DELETED"},
    )

    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")


async def test_lightkube_watch_raises_the_in_stream_410_as_api_error(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    async def drain_watch() -> None:
        async with asyncio.timeout(WATCH_BOUND_S):
            async for _ in kube.watch(
                widgets, namespace=namespace, resource_version="1", server_timeout=20
            ):
                pass

    with pytest.raises(ApiError) as caught:
        await drain_watch()

    assert (caught.value.status.code, caught.value.status.reason) == (410, "Expired")


async def test_a_crd_spec_change_ends_its_watches_and_a_watch_from_before_it_is_410(
    kube: AsyncClient, kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    """kube-apiserver serves a custom resource from new storage once its CRD's spec changes: the
    resource's open watches end without an error, and a watch from a version listed before the
    change is answered 410 Expired, so every informer of that resource lists again."""
    await install_crd(kube, GADGET_CRD)
    path = resource_path(API_VERSION, "gadgets", namespace)
    listed = await kube_http.get(path)
    assert listed.status_code == 200, listed.text
    version = listed.json()["metadata"]["resourceVersion"]

    async def watched_until_the_end() -> list[str]:
        async with asyncio.timeout(WATCH_BOUND_S):
            return [
                e["type"] async for e in watch_events(kube_http, path, {"resourceVersion": version})
            ]

    watch = asyncio.create_task(watched_until_the_end())
    await asyncio.sleep(0.2)  # the stream is open (a watch opened after the change is tested below)
    categories = [f"c{version}"]  # a change every run, on a long-lived server too
    await kube.patch(
        CustomResourceDefinition,
        GADGET_CRD["metadata"]["name"],
        {"spec": {"names": {"categories": categories}}},
        patch_type=MERGE,
    )
    assert "ERROR" not in await watch  # ended, well before its 20 s timeout

    events = await collect_until(
        watch_events(kube_http, path, {"resourceVersion": version}),
        stop_after=1,
        types={"ERROR", "ADDED", "MODIFIED", "DELETED"},
    )
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")
