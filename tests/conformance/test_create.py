"""Create: 201 with server-set fields, generateName, AlreadyExists as a typed Status."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap
from tests.conformance.widgets import API_VERSION, GROUP, PLURAL, widget, widget_path


def widget_body(name: str = "", generate_name: str = "", namespace: str = "") -> dict[str, Any]:
    metadata: dict[str, str] = {"name": name} if name else {"generateName": generate_name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": metadata,
        "spec": {"size": 3},
    }


async def test_create_answers_201_with_server_set_metadata(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    response = await kube_http.post(widget_path(namespace), json=widget_body("w1"))

    assert response.status_code == 201
    created = response.json()
    meta = created["metadata"]
    assert meta["name"] == "w1"
    assert meta["namespace"] == namespace
    assert meta["uid"]
    assert meta["creationTimestamp"]
    assert int(meta["resourceVersion"]) > 0
    assert meta["generation"] == 1
    assert created["spec"] == {"size": 3}


async def test_create_core_object_answers_201(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    response = await kube_http.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}},
    )

    assert response.status_code == 201
    assert response.json()["metadata"]["uid"]


async def test_generate_name_appends_a_random_suffix(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    first = await kube.create(
        widgets.from_dict(widget_body(generate_name="w-", namespace=namespace))
    )
    second = await kube.create(
        widgets.from_dict(widget_body(generate_name="w-", namespace=namespace))
    )

    names = [first["metadata"]["name"], second["metadata"]["name"]]
    assert all(n.startswith("w-") and len(n) == len("w-") + 5 for n in names)
    assert names[0] != names[1]
    assert first["metadata"]["generateName"] == "w-"


async def test_create_existing_name_is_already_exists(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("dup", namespace))

    with pytest.raises(ApiError) as caught:
        await kube.create(widget("dup", namespace))

    status = caught.value.status
    assert status.code == 409
    assert status.reason == "AlreadyExists"
    assert status.details is not None
    assert status.details.name == "dup"
    assert status.details.group == GROUP
    assert status.details.kind == PLURAL


async def test_create_existing_core_object_is_already_exists(
    kube: AsyncClient, namespace: str
) -> None:
    config_map = ConfigMap(metadata=ObjectMeta(name="dup", namespace=namespace), data={})
    await kube.create(config_map)

    with pytest.raises(ApiError) as caught:
        await kube.create(config_map)

    status = caught.value.status
    assert (status.code, status.reason) == (409, "AlreadyExists")
    assert status.details is not None
    assert (status.details.name, status.details.kind) == ("dup", "configmaps")
