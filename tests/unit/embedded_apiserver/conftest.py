"""Fixtures for the embedded API server's own tests: one server per module, raw HTTP clients."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from scaleset.embedded.apiserver import DEFAULT_TOKEN, RunningApiServer, serve_in_thread

JsonObj = dict[str, Any]
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


@pytest.fixture(scope="module")
def api() -> Iterator[RunningApiServer]:
    with serve_in_thread() as running:
        yield running


@pytest.fixture
def client(api: RunningApiServer) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=api.url,
        headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"},
        timeout=30.0,
        trust_env=False,
    ) as http:
        yield http


# what the server's controllers put in every namespace (as kube-controller-manager does)
ROOT_CA = "kube-root-ca.crt"
NAMESPACE_DEFAULTS = ("serviceaccounts/default", f"configmaps/{ROOT_CA}")


@pytest.fixture
def ns(client: httpx.Client, api: RunningApiServer) -> Iterator[str]:
    """A fresh namespace, once the controllers have put their defaults into it (so a test starts
    from the same content every time: the default ServiceAccount and the root-CA ConfigMap)."""
    name = f"t-{secrets.token_hex(4)}"
    created = client.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert created.status_code == 201, created.text
    for path in NAMESPACE_DEFAULTS:
        wait_until(lambda p=path: client.get(f"/api/v1/namespaces/{name}/{p}").is_success)
    yield name
    api.server.faults.clear()


def configmap(name: str, **extra: Any) -> JsonObj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **extra}}


def cm_path(namespace: str, name: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    return f"{path}/{name}" if name else path


def pod(name: str, **spec: Any) -> JsonObj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
    }


def pod_path(namespace: str, name: str = "", sub: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/pods"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def wait_until(condition: Any, timeout: float = 10.0) -> None:
    """Poll ``condition()`` until it is true, failing after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)
