"""Patches: JSON merge and JSON patch (``test`` op), the optimistic lock through a merge patch
carrying ``metadata.resourceVersion`` (main resource and /status), strategic merge → 415 on
custom resources, and a read-modify-write race made by a client-side hook."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType
from tests.conformance.widgets import widget, widget_path
from tests.plugins.kube_backends import KubeBackend

from scaleset.devtools.transports import RequestHook

MERGE = PatchType.MERGE
JSON = PatchType.JSON


async def test_merge_patch_merges_maps_and_null_deletes(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1, color="red", tags=["a", "b"]))

    patched = await kube.patch(
        widgets,
        "w",
        {"spec": {"size": 2, "color": None, "tags": ["c"]}},
        namespace=namespace,
        patch_type=MERGE,
    )

    # maps merge, null deletes a key, lists are replaced whole
    assert patched["spec"] == {"size": 2, "tags": ["c"]}


async def test_json_patch_applies_operations_in_order(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1, tags=["a"]))

    patched = await kube.patch(
        widgets,
        "w",
        [
            {"op": "test", "path": "/spec/size", "value": 1},
            {"op": "replace", "path": "/spec/size", "value": 5},
            {"op": "add", "path": "/spec/tags/-", "value": "b"},
            {"op": "add", "path": "/spec/color", "value": "blue"},
        ],
        namespace=namespace,
        patch_type=JSON,
    )

    assert patched["spec"] == {"size": 5, "tags": ["a", "b"], "color": "blue"}


async def test_json_patch_failing_test_op_is_unprocessable_and_changes_nothing(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))

    with pytest.raises(ApiError) as caught:
        await kube.patch(
            widgets,
            "w",
            [
                {"op": "test", "path": "/spec/size", "value": 99},
                {"op": "replace", "path": "/spec/size", "value": 5},
            ],
            namespace=namespace,
            patch_type=JSON,
        )

    assert caught.value.status.code == 422
    after = await kube.get(widgets, "w", namespace=namespace)
    assert after["spec"] == {"size": 1}
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_json_patch_test_op_on_resource_version_is_an_optimistic_lock(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    await kube.patch(widgets, "w", {"spec": {"size": 2}}, namespace=namespace, patch_type=MERGE)
    stale = created["metadata"]["resourceVersion"]

    with pytest.raises(ApiError) as caught:
        await kube.patch(
            widgets,
            "w",
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": stale},
                {"op": "replace", "path": "/spec/size", "value": 3},
            ],
            namespace=namespace,
            patch_type=JSON,
        )

    assert caught.value.status.code == 422


async def test_merge_patch_with_stale_resource_version_is_conflict(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    await kube.patch(widgets, "w", {"spec": {"size": 2}}, namespace=namespace, patch_type=MERGE)

    with pytest.raises(ApiError) as caught:
        await kube.patch(
            widgets,
            "w",
            {
                "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                "spec": {"size": 3},
            },
            namespace=namespace,
            patch_type=MERGE,
        )

    status = caught.value.status
    assert (status.code, status.reason) == (409, "Conflict")
    assert (await kube.get(widgets, "w", namespace=namespace))["spec"] == {"size": 2}


async def test_merge_patch_with_current_resource_version_applies(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))

    patched = await kube.patch(
        widgets,
        "w",
        {
            "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
            "spec": {"size": 3},
        },
        namespace=namespace,
        patch_type=MERGE,
    )

    assert patched["spec"] == {"size": 3}


async def test_status_merge_patch_with_stale_resource_version_is_conflict(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    await kube.patch(
        widgets.Status,
        "w",
        {"status": {"phase": "Running"}},
        namespace=namespace,
        patch_type=MERGE,
    )

    with pytest.raises(ApiError) as caught:
        await kube.patch(
            widgets.Status,
            "w",
            {
                "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                "status": {"phase": "Failed"},
            },
            namespace=namespace,
            patch_type=MERGE,
        )

    assert (caught.value.status.code, caught.value.status.reason) == (409, "Conflict")
    assert (await kube.get(widgets, "w", namespace=namespace))["status"] == {"phase": "Running"}


async def test_strategic_merge_patch_on_custom_resource_is_unsupported_media_type(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace))

    response = await kube_http.patch(
        widget_path(namespace, "w"),
        content=b'{"spec": {"size": 2}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )

    assert response.status_code == 415
    body = response.json()
    assert (body["kind"], body["code"], body["reason"]) == ("Status", 415, "UnsupportedMediaType")


async def test_strategic_merge_patch_on_core_object_is_supported(
    kube: AsyncClient, namespace: str
) -> None:
    await kube.create(
        ConfigMap(metadata=ObjectMeta(name="c", namespace=namespace, labels={"a": "1"}))
    )

    patched = await kube.patch(
        ConfigMap,
        "c",
        {"metadata": {"labels": {"b": "2"}}},
        namespace=namespace,
        patch_type=PatchType.STRATEGIC,
    )

    assert patched.metadata is not None
    assert patched.metadata.labels == {"a": "1", "b": "2"}


async def test_client_side_hook_makes_a_read_modify_write_race(
    kube_backend: KubeBackend, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    """The conflicting write lands between the client's read and its locked write: 409."""
    await kube.create(widget("w", namespace, size=1))

    async def conflicting_write(_: httpx2.Request) -> None:
        await kube.patch(
            widgets, "w", {"spec": {"color": "green"}}, namespace=namespace, patch_type=MERGE
        )

    hook = RequestHook(method="PATCH", path=f"/{namespace}/widgets/w$", action=conflicting_write)
    async with kube_backend.client(hooks=[hook]) as racing:
        read = await racing.get(widgets, "w", namespace=namespace)
        with pytest.raises(ApiError) as caught:
            await racing.patch(
                widgets,
                "w",
                {
                    "metadata": {"resourceVersion": read["metadata"]["resourceVersion"]},
                    "spec": {"size": 2},
                },
                namespace=namespace,
                patch_type=MERGE,
            )

    assert hook.fired == 1
    assert caught.value.status.reason == "Conflict"
    final = await kube.get(widgets, "w", namespace=namespace)
    assert final["spec"] == {"size": 1, "color": "green"}
