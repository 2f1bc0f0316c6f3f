"""The status subresource isolates status from everything else, both ways.

Writes to the main resource ignore ``status``; writes to ``/status`` ignore everything but
``status`` — including label and annotation changes, which are silently dropped.
"""

from __future__ import annotations

from typing import Any

import httpx2
from lightkube import AsyncClient
from lightkube.types import PatchType
from tests.conformance.widgets import API_VERSION, widget, widget_path

MERGE = PatchType.MERGE


async def test_create_ignores_status(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    body = {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1},
        "status": {"phase": "Running"},
    }

    response = await kube_http.post(widget_path(namespace), json=body)

    assert response.status_code == 201
    assert "status" not in response.json()


async def test_main_resource_patch_ignores_status(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    patched = await kube.patch(
        widgets,
        "w",
        {"spec": {"size": 2}, "status": {"phase": "Running"}},
        namespace=namespace,
        patch_type=MERGE,
    )

    assert patched["spec"] == {"size": 2}
    assert "status" not in patched


async def test_main_resource_put_keeps_stored_status(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))
    await kube.patch(
        widgets.Status, "w", {"status": {"phase": "Running"}}, namespace=namespace, patch_type=MERGE
    )
    current = await kube.get(widgets, "w", namespace=namespace)
    current["status"] = {"phase": "Overwritten"}
    current["spec"] = {"size": 2}

    replaced = await kube.replace(current)

    assert replaced["spec"] == {"size": 2}
    assert replaced["status"] == {"phase": "Running"}


async def test_status_patch_changes_only_status(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    patched = await kube.patch(
        widgets.Status,
        "w",
        {
            "metadata": {"labels": {"added": "through-status"}, "annotations": {"a": "b"}},
            "spec": {"size": 9},
            "status": {"phase": "Running", "count": 3},
        },
        namespace=namespace,
        patch_type=MERGE,
    )

    assert patched["status"] == {"phase": "Running", "count": 3}
    assert patched["spec"] == {"size": 1}
    assert "labels" not in patched["metadata"]
    assert "annotations" not in patched["metadata"]
    stored = await kube.get(widgets, "w", namespace=namespace)
    assert stored["spec"] == {"size": 1}
    assert "labels" not in stored["metadata"]


async def test_status_put_changes_only_status(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))
    current = await kube.get(widgets, "w", namespace=namespace)
    current["spec"] = {"size": 9}
    current["metadata"]["labels"] = {"added": "through-status"}
    current["status"] = {"phase": "Running"}

    replaced = await kube.replace(widgets.Status.from_dict(dict(current)))

    assert replaced["status"] == {"phase": "Running"}
    assert replaced["spec"] == {"size": 1}
    assert "labels" not in replaced["metadata"]


async def test_status_json_patch_on_status_path(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    patched = await kube.patch(
        widgets.Status,
        "w",
        [{"op": "add", "path": "/status", "value": {"phase": "Pending"}}],
        namespace=namespace,
        patch_type=PatchType.JSON,
    )

    assert patched["status"] == {"phase": "Pending"}
