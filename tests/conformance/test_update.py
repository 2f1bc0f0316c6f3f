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
from tests.conformance.conftest import widget, widget_path


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
