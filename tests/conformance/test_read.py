"""Get and list: label and field selectors, paging with limit/continue, NotFound."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap
from tests.conformance.widgets import widget, widget_path
from tests.plugins.kube_backends import KubeBackend

from scaleset.devtools.transports import RequestHook

# every namespace holds the root-CA ConfigMap the controller-manager publishes (the fixture
# makes sure of it on both backends), so a namespace's ConfigMap list starts with it
ROOT_CA = "kube-root-ca.crt"


async def make_config_maps(
    kube: AsyncClient, namespace: str, labels: dict[str, dict[str, str]]
) -> None:
    for name, object_labels in labels.items():
        await kube.create(
            ConfigMap(metadata=ObjectMeta(name=name, namespace=namespace, labels=object_labels))
        )


async def test_get_returns_the_stored_object(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=7))

    got = await kube.get(widgets, "w", namespace=namespace)

    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["spec"] == {"size": 7}


async def test_get_missing_object_is_not_found(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    with pytest.raises(ApiError) as caught:
        await kube.get(widgets, "absent", namespace=namespace)

    assert (caught.value.status.code, caught.value.status.reason) == (404, "NotFound")


async def test_list_with_label_selectors(kube: AsyncClient, namespace: str) -> None:
    await make_config_maps(
        kube,
        namespace,
        {
            "a": {"app": "runner", "tier": "x"},
            "b": {"app": "runner"},
            "c": {"app": "listener"},
            "d": {},
        },
    )

    async def names(labels: dict[str, Any]) -> list[str]:
        found = kube.list(ConfigMap, namespace=namespace, labels=labels)
        return sorted([cm.metadata.name async for cm in found if cm.metadata and cm.metadata.name])

    assert await names({"app": "runner"}) == ["a", "b"]
    assert await names({"app": "runner", "tier": "x"}) == ["a"]
    assert await names({"app": ("runner", "listener")}) == ["a", "b", "c"]


async def test_list_with_raw_selector_expressions(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await make_config_maps(kube, namespace, {"a": {"app": "runner"}, "b": {}, "c": {"app": "x"}})

    async def names(selector: str) -> list[str]:
        response = await kube_http.get(
            f"/api/v1/namespaces/{namespace}/configmaps", params={"labelSelector": selector}
        )
        assert response.status_code == 200
        return sorted(
            item["metadata"]["name"]
            for item in response.json()["items"]
            if item["metadata"]["name"] != ROOT_CA
        )

    assert await names("app") == ["a", "c"]
    assert await names("!app") == ["b"]
    assert await names("app!=runner") == ["b", "c"]
    assert await names("app in (runner,x)") == ["a", "c"]


async def test_list_with_field_selector_on_name(kube: AsyncClient, namespace: str) -> None:
    await make_config_maps(kube, namespace, {"a": {}, "b": {}})

    found = kube.list(ConfigMap, namespace=namespace, fields={"metadata.name": "b"})

    assert [cm.metadata.name async for cm in found if cm.metadata] == ["b"]


async def test_custom_resources_support_only_name_and_namespace_field_selectors(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w1", namespace))
    await kube.create(widget("w2", namespace))

    by_name = await kube_http.get(
        widget_path(namespace), params={"fieldSelector": "metadata.name=w2"}
    )
    by_spec = await kube_http.get(widget_path(namespace), params={"fieldSelector": "spec.size=1"})

    assert [i["metadata"]["name"] for i in by_name.json()["items"]] == ["w2"]
    assert by_spec.status_code == 400
    assert by_spec.json()["reason"] == "BadRequest"


async def test_list_pages_with_limit_and_continue(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await make_config_maps(kube, namespace, {f"cm{i}": {} for i in range(5)})
    path = f"/api/v1/namespaces/{namespace}/configmaps"

    first = (await kube_http.get(path, params={"limit": 2})).json()
    second = (
        await kube_http.get(path, params={"limit": 2, "continue": first["metadata"]["continue"]})
    ).json()
    third = (
        await kube_http.get(path, params={"limit": 2, "continue": second["metadata"]["continue"]})
    ).json()

    pages = [[i["metadata"]["name"] for i in page["items"]] for page in (first, second, third)]
    assert pages == [["cm0", "cm1"], ["cm2", "cm3"], ["cm4", ROOT_CA]]
    assert first["metadata"]["remainingItemCount"] == 4
    assert not third["metadata"].get("continue")
    # every page is a consistent snapshot of the first page's resourceVersion
    assert third["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_lightkube_chunked_list_follows_continue_tokens(
    kube_backend: KubeBackend, kube: AsyncClient, namespace: str
) -> None:
    await make_config_maps(kube, namespace, {f"cm{i}": {} for i in range(5)})
    pages: list[str] = []

    async def record_page(request: httpx2.Request) -> None:
        pages.append(request.url.params.get("continue", ""))

    counter = RequestHook("GET", f"/namespaces/{namespace}/configmaps$", record_page, times=10)
    async with kube_backend.client(hooks=[counter]) as client:
        found = client.list(ConfigMap, namespace=namespace, chunk_size=2)
        names = [cm.metadata.name async for cm in found if cm.metadata and cm.metadata.name]

    assert sorted(names) == [*(f"cm{i}" for i in range(5)), ROOT_CA]
    assert len(pages) == 3
    assert pages[0] == ""
    assert all(pages[1:])


async def test_list_reports_a_resource_version_to_watch_from(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    response = await kube_http.get(widget_path(namespace))

    body = response.json()
    assert body["kind"] == "WidgetList"
    assert body["items"] == []
    assert int(body["metadata"]["resourceVersion"]) > 0
