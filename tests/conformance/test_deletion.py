"""Deletion: finalizers hold an object with deletionTimestamp set, no new finalizers once
deleting, removal of the last finalizer completes the delete, and DeleteOptions preconditions
(uid, resourceVersion) turn a mismatch into 409 Conflict."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.types import PatchType
from tests.conformance.widgets import widget, widget_path

MERGE = PatchType.MERGE
HOLD = "conformance.scaleset.dev/hold"
OTHER = "conformance.scaleset.dev/other"


async def create_held(kube: AsyncClient, namespace: str, finalizers: list[str]) -> Any:
    obj = widget("w", namespace, size=1)
    obj["metadata"]["finalizers"] = finalizers
    return await kube.create(obj)


async def is_gone(kube: AsyncClient, widgets: type[Any], namespace: str) -> bool:
    try:
        await kube.get(widgets, "w", namespace=namespace)
    except ApiError as error:
        if error.status.code == 404:
            return True
        raise
    return False


def delete_options(**preconditions: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}


async def test_delete_without_finalizers_removes_at_once(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace))

    await kube.delete(widgets, "w", namespace=namespace)

    assert await is_gone(kube, widgets, namespace)


async def test_delete_with_finalizer_sets_deletion_timestamp_and_keeps_object(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await create_held(kube, namespace, [HOLD])

    await kube.delete(widgets, "w", namespace=namespace)

    held = await kube.get(widgets, "w", namespace=namespace)
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    assert held["metadata"]["finalizers"] == [HOLD]


async def test_second_delete_keeps_the_first_deletion_timestamp(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await create_held(kube, namespace, [HOLD])
    await kube.delete(widgets, "w", namespace=namespace)
    first = await kube.get(widgets, "w", namespace=namespace)

    await kube.delete(widgets, "w", namespace=namespace)

    second = await kube.get(widgets, "w", namespace=namespace)
    assert second["metadata"]["deletionTimestamp"] == first["metadata"]["deletionTimestamp"]


async def test_removing_the_last_finalizer_completes_deletion(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await create_held(kube, namespace, [HOLD, OTHER])
    await kube.delete(widgets, "w", namespace=namespace)

    await kube.patch(
        widgets, "w", {"metadata": {"finalizers": [OTHER]}}, namespace=namespace, patch_type=MERGE
    )
    assert not await is_gone(kube, widgets, namespace)
    await kube.patch(
        widgets, "w", {"metadata": {"finalizers": None}}, namespace=namespace, patch_type=MERGE
    )

    assert await is_gone(kube, widgets, namespace)


async def test_no_new_finalizers_once_deleting(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await create_held(kube, namespace, [HOLD])
    await kube.delete(widgets, "w", namespace=namespace)

    with pytest.raises(ApiError) as caught:
        await kube.patch(
            widgets,
            "w",
            {"metadata": {"finalizers": [HOLD, OTHER]}},
            namespace=namespace,
            patch_type=MERGE,
        )

    status = caught.value.status
    assert (status.code, status.reason) == (422, "Invalid")
    assert "no new finalizers" in (status.message or "")
    held = await kube.get(widgets, "w", namespace=namespace)
    assert held["metadata"]["finalizers"] == [HOLD]


async def test_spec_can_still_change_while_deleting(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await create_held(kube, namespace, [HOLD])
    await kube.delete(widgets, "w", namespace=namespace)

    patched = await kube.patch(
        widgets, "w", {"spec": {"size": 4}}, namespace=namespace, patch_type=MERGE
    )

    assert patched["spec"]["size"] == 4


async def test_delete_with_wrong_uid_precondition_is_conflict(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace))

    response = await kube_http.request(
        "DELETE", widget_path(namespace, "w"), json=delete_options(uid="not-the-uid")
    )

    assert response.status_code == 409
    assert response.json()["reason"] == "Conflict"
    assert not await is_gone(kube, widgets, namespace)


async def test_delete_with_matching_uid_precondition_deletes(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace))

    response = await kube_http.request(
        "DELETE", widget_path(namespace, "w"), json=delete_options(uid=created["metadata"]["uid"])
    )

    assert response.status_code == 200
    assert await is_gone(kube, widgets, namespace)


async def test_delete_with_stale_resource_version_precondition_is_conflict(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    await kube.patch(widgets, "w", {"spec": {"size": 2}}, namespace=namespace, patch_type=MERGE)

    stale = await kube_http.request(
        "DELETE",
        widget_path(namespace, "w"),
        json=delete_options(resourceVersion=created["metadata"]["resourceVersion"]),
    )
    current_version = (await kube.get(widgets, "w", namespace=namespace))["metadata"][
        "resourceVersion"
    ]
    current = await kube_http.request(
        "DELETE", widget_path(namespace, "w"), json=delete_options(resourceVersion=current_version)
    )

    assert stale.status_code == 409
    assert stale.json()["reason"] == "Conflict"
    assert current.status_code == 200
    assert await is_gone(kube, widgets, namespace)


async def test_delete_missing_object_is_not_found(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    response = await kube_http.request("DELETE", widget_path(namespace, "absent"))

    assert response.status_code == 404
    assert response.json()["reason"] == "NotFound"


async def test_a_pod_status_write_makes_a_delete_guarded_by_the_earlier_version_a_conflict(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    """What keeps L5's retry path honest: a pod deletion decided on a status that said the
    container never ran carries that status's resourceVersion, and the kubelet's later status
    write (the container started) moves it, so the deletion is refused and the pod stays."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "runner", "image": "busybox:1.36"}]},
    }
    created = (await kube_http.post(path, json=body)).json()
    waiting = {"status": {"phase": "Pending", "startTime": "2027-01-15T08:00:00Z"}}
    read = await kube_http.patch(
        f"{path}/p/status",
        json=waiting,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    decided_on = read.json()["metadata"]["resourceVersion"]
    started = {"status": {"phase": "Running"}}
    await kube_http.patch(
        f"{path}/p/status",
        json=started,
        headers={"Content-Type": "application/merge-patch+json"},
    )

    stale = await kube_http.request(
        "DELETE",
        f"{path}/p",
        json=delete_options(uid=created["metadata"]["uid"], resourceVersion=decided_on),
    )
    kept = (await kube_http.get(f"{path}/p")).json()

    assert stale.status_code == 409
    assert stale.json()["reason"] == "Conflict"
    assert "deletionTimestamp" not in kept["metadata"]
    assert kept["status"]["phase"] == "Running"
    current = await kube_http.request(
        "DELETE",
        f"{path}/p",
        json=delete_options(
            uid=created["metadata"]["uid"], resourceVersion=kept["metadata"]["resourceVersion"]
        ),
    )
    assert current.status_code == 200
