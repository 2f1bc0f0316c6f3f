"""Fixtures for the embedded API server's own tests: one server per module, raw HTTP
clients, a fresh namespace. Bodies, paths and waits are in ``rest.py``."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx2
import pytest
from tests.integration.embedded_apiserver.rest import NAMESPACE_DEFAULTS
from tests.support.waiting import eventually_sync

from scaleset.embedded.apiserver import DEFAULT_TOKEN, RunningApiServer, serve_in_thread


@pytest.fixture(scope="module")
def api() -> Iterator[RunningApiServer]:
    with serve_in_thread() as running:
        yield running


@pytest.fixture
def client(api: RunningApiServer) -> Iterator[httpx2.Client]:
    with httpx2.Client(
        base_url=api.url,
        headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"},
        timeout=30.0,
        trust_env=False,
    ) as http:
        yield http


@pytest.fixture
def ns(client: httpx2.Client, api: RunningApiServer) -> Iterator[str]:
    """A fresh namespace, once the controllers have put their defaults into it (so a test starts
    from the same content every time: the default ServiceAccount and the root-CA ConfigMap)."""
    name = f"t-{secrets.token_hex(4)}"
    created = client.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert created.status_code == 201, created.text
    for path in NAMESPACE_DEFAULTS:
        eventually_sync(
            lambda p=path: client.get(f"/api/v1/namespaces/{name}/{p}").is_success, within=10.0
        )
    yield name
    api.server.faults.clear()
