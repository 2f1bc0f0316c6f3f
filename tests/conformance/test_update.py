"""PUT (replace): the resourceVersion rules.

Custom resources need ``metadata.resourceVersion`` on PUT (422 without it); pods and secrets
accept an unconditional PUT. A stale resourceVersion is 409 Conflict everywhere.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.models.core_v1 import Container, PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod, Secret
from tests.conformance.widgets import CRD_NAME, widget, widget_path


def pod(name: str, namespace: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodSpec(containers=[Container(name="runner", image="runner:latest")]),
    )


async def test_put_with_current_resource_version_replaces_and_bumps_it(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    created["spec"] = {"size": 2}

    replaced = await kube.replace(created)

    assert replaced["spec"] == {"size": 2}
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )


async def test_put_with_stale_resource_version_is_conflict(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    fresh = await kube.get(widgets, "w", namespace=namespace)
    fresh["spec"] = {"size": 2}
    await kube.replace(fresh)
    created["spec"] = {"size": 3}

    with pytest.raises(ApiError) as caught:
        await kube.replace(created)

    status = caught.value.status
    assert (status.code, status.reason) == (409, "Conflict")
    assert (await kube.get(widgets, "w", namespace=namespace))["spec"] == {"size": 2}


async def test_put_custom_resource_without_resource_version_is_invalid(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))
    body = {
        "apiVersion": "conformance.scaleset.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": namespace},
        "spec": {"size": 2},
    }

    response = await kube_http.put(widget_path(namespace, "w"), json=body)

    assert response.status_code == 422
    assert response.json()["reason"] == "Invalid"
    assert (await kube.get(widgets, "w", namespace=namespace))["spec"] == {"size": 1}


async def test_put_pod_without_resource_version_is_allowed(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await kube.create(pod("p", namespace))
    current = (await kube_http.get(f"/api/v1/namespaces/{namespace}/pods/p")).json()
    del current["metadata"]["resourceVersion"]
    current["metadata"]["labels"] = {"added": "by-put"}

    response = await kube_http.put(f"/api/v1/namespaces/{namespace}/pods/p", json=current)

    assert response.status_code == 200
    assert response.json()["metadata"]["labels"] == {"added": "by-put"}


async def test_put_secret_without_resource_version_is_allowed(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await kube.create(
        Secret(metadata=ObjectMeta(name="s", namespace=namespace), stringData={"k": "v1"})
    )
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": namespace},
        "stringData": {"k": "v2"},
    }

    response = await kube_http.put(f"/api/v1/namespaces/{namespace}/secrets/s", json=body)

    assert response.status_code == 200
    assert response.json()["data"] == {"k": "djI="}


async def test_put_pod_with_stale_resource_version_is_conflict(
    kube: AsyncClient, namespace: str
) -> None:
    created = await kube.create(pod("p", namespace))
    fresh = await kube.get(Pod, "p", namespace=namespace)
    assert fresh.metadata is not None
    assert created.metadata is not None
    fresh.metadata.labels = {"v": "2"}
    await kube.replace(fresh)
    created.metadata.labels = {"v": "stale"}

    with pytest.raises(ApiError) as caught:
        await kube.replace(created)

    assert (caught.value.status.code, caught.value.status.reason) == (409, "Conflict")


# --- metadata.uid on PUT is a precondition ------------------------------------------------------

OTHER_UID = "00000000-0000-0000-0000-0000000000aa"


def uid_precondition_message(resource: str, name: str, key: str, stored_uid: str) -> str:
    return (
        f'Operation cannot be fulfilled on {resource} "{name}": StorageError: invalid object, '
        f"Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: {OTHER_UID}, UID in object meta: {stored_uid}"
    )


@pytest.mark.parametrize("with_resource_version", [True, False], ids=["current-rv", "no-rv"])
async def test_put_with_another_uid_is_conflict_not_invalid(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str, with_resource_version: bool
) -> None:
    await kube.create(pod("p", namespace))
    path = f"/api/v1/namespaces/{namespace}/pods/p"
    current = (await kube_http.get(path)).json()
    stored_uid = current["metadata"]["uid"]
    current["metadata"]["uid"] = OTHER_UID
    current["metadata"]["labels"] = {"changed": "yes"}
    if not with_resource_version:
        del current["metadata"]["resourceVersion"]

    response = await kube_http.put(path, json=current)

    assert response.status_code == 409, response.text
    status = response.json()
    assert status["reason"] == "Conflict"
    assert status["details"] == {"name": "p", "kind": "pods"}
    assert status["message"] == uid_precondition_message(
        "pods", "p", f"/registry/pods/{namespace}/p", stored_uid
    )
    assert (await kube_http.get(path)).json()["metadata"].get("labels") is None


async def test_put_with_another_uid_and_a_stale_resource_version_reports_the_uid(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    stored_uid = created["metadata"]["uid"]
    fresh = await kube.get(widgets, "w", namespace=namespace)
    fresh["spec"] = {"size": 2}
    await kube.replace(fresh)
    body = created.to_dict()
    body["metadata"]["uid"] = OTHER_UID

    response = await kube_http.put(widget_path(namespace, "w"), json=body)

    assert response.status_code == 409, response.text
    assert response.json()["details"] == {
        "name": "w",
        "group": "conformance.scaleset.dev",
        "kind": "widgets",
    }
    assert response.json()["message"] == uid_precondition_message(
        "widgets.conformance.scaleset.dev",
        "w",
        f"/registry/conformance.scaleset.dev/widgets/{namespace}/w",
        stored_uid,
    )


async def test_put_with_a_uid_onto_a_missing_object_is_conflict(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    # the precondition is checked before "not found" (configmaps) and create-on-update (leases)
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    configmap["metadata"]["uid"] = OTHER_UID
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "uid": OTHER_UID},
        "spec": {"holderIdentity": "a"},
    }

    cm = await kube_http.put(f"/api/v1/namespaces/{namespace}/configmaps/c", json=configmap)
    created = await kube_http.put(
        f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/l", json=lease
    )

    assert cm.status_code == 409, cm.text
    assert cm.json()["message"] == uid_precondition_message(
        "configmaps", "c", f"/registry/configmaps/{namespace}/c", ""
    )
    assert created.status_code == 409, created.text
    assert created.json()["message"] == uid_precondition_message(
        "leases.coordination.k8s.io", "l", f"/registry/leases/{namespace}/l", ""
    )
    missing = await kube_http.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/l")
    assert missing.status_code == 404


async def test_put_status_and_namespace_finalize_hold_the_uid_precondition(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await kube.create(pod("p", namespace))
    stored = (await kube_http.get(f"/api/v1/namespaces/{namespace}/pods/p")).json()
    stored["metadata"]["uid"] = OTHER_UID
    ns = (await kube_http.get(f"/api/v1/namespaces/{namespace}")).json()
    ns_uid = ns["metadata"]["uid"]
    ns["metadata"]["uid"] = OTHER_UID

    status = await kube_http.put(f"/api/v1/namespaces/{namespace}/pods/p/status", json=stored)
    finalize = await kube_http.put(f"/api/v1/namespaces/{namespace}/finalize", json=ns)

    assert status.status_code == 409, status.text
    assert finalize.status_code == 409, finalize.text
    assert finalize.json()["message"] == uid_precondition_message(
        "namespaces", namespace, f"/registry/namespaces/{namespace}", ns_uid
    )


async def test_patch_changing_the_uid_is_invalid(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    # a patch has no uid precondition: the changed uid meets the immutability check instead
    await kube.create(pod("p", namespace))

    response = await kube_http.patch(
        f"/api/v1/namespaces/{namespace}/pods/p",
        json={"metadata": {"uid": OTHER_UID}},
        headers={"Content-Type": "application/merge-patch+json"},
    )

    assert response.status_code == 422, response.text
    assert response.json()["reason"] == "Invalid"
    assert {c["field"] for c in response.json()["details"]["causes"]} == {"metadata.uid"}
    assert "field is immutable" in response.json()["message"]


async def test_put_crd_without_resource_version_is_invalid(
    kube_http: httpx2.AsyncClient, widgets: type[Any]
) -> None:
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
    current = (await kube_http.get(path)).json()
    del current["metadata"]["resourceVersion"]

    response = await kube_http.put(path, json=current)

    assert response.status_code == 422, response.text
    assert response.json()["message"] == (
        f'customresourcedefinitions.apiextensions.k8s.io "{CRD_NAME}" is invalid: '
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    )
