"""Structural pruning: fields the CRD schema does not declare are dropped silently (no error),
in spec, in nested objects, at the top level and through /status."""

from __future__ import annotations

from typing import Any

import httpx2
from lightkube import AsyncClient
from lightkube.types import PatchType
from tests.conformance.widgets import API_VERSION, widget, widget_path


async def test_create_prunes_unknown_fields(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    body = {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1, "unknown": "x", "nested": {"kept": "y", "dropped": "z"}},
        "extraTopLevel": {"a": 1},
    }

    response = await kube_http.post(widget_path(namespace), json=body)

    assert response.status_code == 201
    created = response.json()
    assert created["spec"] == {"size": 1, "nested": {"kept": "y"}}
    assert "extraTopLevel" not in created


async def test_patch_prunes_unknown_fields(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    patched = await kube.patch(
        widgets,
        "w",
        {"spec": {"size": 2, "unknown": True}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )

    assert patched["spec"] == {"size": 2}
    stored = await kube.get(widgets, "w", namespace=namespace)
    assert stored["spec"] == {"size": 2}


async def test_status_write_prunes_unknown_fields(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    patched = await kube.patch(
        widgets.Status,
        "w",
        {"status": {"phase": "Running", "unknown": 1}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )

    assert patched["status"] == {"phase": "Running"}


async def test_wrong_type_is_rejected_not_pruned(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    body = {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": "big"},
    }

    response = await kube_http.post(widget_path(namespace), json=body)

    assert response.status_code == 422
    status = response.json()
    assert status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.size"]
