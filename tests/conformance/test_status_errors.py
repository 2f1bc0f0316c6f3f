"""Error bodies are ``Status`` objects: kind, code, reason, message and details (name, group,
kind, causes) — clients key on ``reason``, never on the HTTP code alone (409 is both Conflict and
AlreadyExists)."""

from __future__ import annotations

from typing import Any

import httpx2
from lightkube import AsyncClient
from tests.conformance.widgets import API_VERSION, GROUP, PLURAL, widget, widget_path
from tests.plugins.kube_backends import KubeBackend


def assert_status(body: dict[str, Any], code: int, reason: str) -> None:
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason
    assert body["message"]


async def test_not_found_status(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    response = await kube_http.get(widget_path(namespace, "absent"))

    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert_status(body, 404, "NotFound")
    assert body["details"] == {"name": "absent", "group": GROUP, "kind": PLURAL}


async def test_already_exists_status(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace))
    body = {"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": "w"}}

    response = await kube_http.post(widget_path(namespace), json=body)

    assert response.status_code == 409
    status = response.json()
    assert_status(status, 409, "AlreadyExists")
    assert status["details"] == {"name": "w", "group": GROUP, "kind": PLURAL}


async def test_conflict_status(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace))

    response = await kube_http.patch(
        widget_path(namespace, "w"),
        json={"metadata": {"resourceVersion": "1"}, "spec": {"size": 2}},
        headers={"Content-Type": "application/merge-patch+json"},
    )

    assert response.status_code == 409
    status = response.json()
    assert_status(status, 409, "Conflict")
    assert status["details"]["name"] == "w"
    assert status["details"]["group"] == GROUP
    assert status["details"]["kind"] == PLURAL


async def test_invalid_status_lists_causes(
    kube_http: httpx2.AsyncClient, widgets: type[Any], namespace: str
) -> None:
    body = {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": "Not_A_Valid_Name"},
        "spec": {"size": 1},
    }

    response = await kube_http.post(widget_path(namespace), json=body)

    assert response.status_code == 422
    status = response.json()
    assert_status(status, 422, "Invalid")
    assert status["details"]["name"] == "Not_A_Valid_Name"
    assert status["details"]["kind"] == "Widget"
    causes = status["details"]["causes"]
    assert [c["field"] for c in causes] == ["metadata.name"]
    assert causes[0]["reason"] == "FieldValueInvalid"


async def test_unauthenticated_request_is_401_status(
    kube_backend: KubeBackend, widgets: type[Any], namespace: str
) -> None:
    config = kube_backend.config()
    async with httpx2.AsyncClient(
        base_url=config.cluster.server,
        transport=kube_backend.transport(),
        headers={"Authorization": "Bearer not-a-valid-token"},
    ) as stranger:
        response = await stranger.get(widget_path(namespace))

    assert response.status_code == 401
    assert_status(response.json(), 401, "Unauthorized")
