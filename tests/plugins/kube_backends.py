"""API-server backends for tests: the embedded server, and a real one (SCALESET_TEST_KUBECONFIG).

Fixtures:
- ``kube_backend`` (session): parametrized over ``embedded`` and ``real``. ``real`` is skipped
  when ``SCALESET_TEST_KUBECONFIG`` is unset (``scripts/test`` starts the real kube-apiserver
  harness and sets it). ``embedded`` imports ``scaleset.embedded.apiserver`` and fails loudly if
  it is missing.
- ``kube`` (session): an admin lightkube ``AsyncClient`` for the backend.
- ``kube_http`` (session): an admin httpx2 client (base URL, TLS and token from the same
  kubeconfig) for the few requests lightkube cannot make.
- ``namespace`` (per test): a fresh, uniquely named namespace (namespaces never finish
  terminating on the real test server, so every test gets its own).

Markers: ``embedded_only(reason)`` skips a test on the real backend, with its reason.

Client-side fault hooks: ``backend.client(hooks=[RequestHook(...)])`` runs an action (for
example a conflicting write through another client) just before a matching request is sent.
"""

from __future__ import annotations

import importlib
import os
import re
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from lightkube import AsyncClient
from lightkube.config.client_adapter import user_auth, verify_cluster
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from scaleset.devtools.real_apiserver import ENV_VAR
from scaleset.devtools.transports import (
    ImpersonatingTransport,
    InterceptingTransport,
    RequestHook,
    ServiceAccountRef,
)

BACKENDS = ("embedded", "real")
FIELD_MANAGER = "scaleset-tests"
DEFAULT_TIMEOUT = httpx2.Timeout(30.0)


@dataclass
class KubeBackend:
    """One API server the suites run against."""

    name: str
    kubeconfig_path: Path
    server: Any = None  # the EmbeddedApiServer (``.faults``) for "embedded"; None for "real"

    def config(self) -> SingleConfig:
        config = KubeConfig.from_file(self.kubeconfig_path).get()
        if config is None:
            raise RuntimeError(f"{self.kubeconfig_path} has no current context")
        return config

    def transport(
        self,
        *,
        impersonate: ServiceAccountRef | None = None,
        hooks: Sequence[RequestHook] = (),
    ) -> httpx2.AsyncBaseTransport:
        """The HTTP transport stack: TLS per the kubeconfig, then impersonation, then hooks."""
        config = self.config()
        assert config.user is not None
        transport: httpx2.AsyncBaseTransport = httpx2.AsyncHTTPTransport(
            verify=verify_cluster(config.cluster, config.user, config.abs_file)
        )
        if impersonate is not None:
            transport = ImpersonatingTransport.as_service_account(transport, impersonate)
        if hooks:
            transport = InterceptingTransport(transport, hooks)
        return transport

    def client(
        self,
        *,
        impersonate: ServiceAccountRef | None = None,
        hooks: Sequence[RequestHook] = (),
        field_manager: str | None = FIELD_MANAGER,
    ) -> AsyncClient:
        """A lightkube client, optionally acting as a ServiceAccount and with request hooks."""
        return AsyncClient(
            self.config(),
            field_manager=field_manager,
            timeout=DEFAULT_TIMEOUT,
            trust_env=False,
            transport=self.transport(impersonate=impersonate, hooks=hooks),
        )

    def http(
        self,
        *,
        impersonate: ServiceAccountRef | None = None,
        hooks: Sequence[RequestHook] = (),
    ) -> httpx2.AsyncClient:
        """A raw client on the same credentials, for what lightkube cannot send."""
        config = self.config()
        assert config.user is not None
        return httpx2.AsyncClient(
            base_url=config.cluster.server,
            auth=user_auth(config.user),
            timeout=DEFAULT_TIMEOUT,
            trust_env=False,
            transport=self.transport(impersonate=impersonate, hooks=hooks),
        )


def _embedded_server() -> AbstractContextManager[Any]:
    # Deliberately not guarded: a missing embedded server must error, never skip.
    embedded = importlib.import_module("scaleset.embedded.apiserver")
    server: AbstractContextManager[Any] = embedded.serve_in_thread()
    return server


def _guard_token(backend: KubeBackend) -> None:
    """The backend's bearer token must never show up in a log line or an error text."""
    # imported here: importing a sibling plugin at module level defeats its assert rewriting
    from tests.plugins.secret_guard import MIN_SECRET_LENGTH, register_secret

    user = backend.config().user
    if user is not None and user.token and len(user.token) >= MIN_SECRET_LENGTH:
        register_secret(user.token)


@pytest.fixture(scope="session", params=BACKENDS)
def kube_backend(request: pytest.FixtureRequest) -> Iterator[KubeBackend]:
    if request.param == "real":
        kubeconfig = os.environ.get(ENV_VAR)
        if not kubeconfig:
            pytest.skip(
                f"real kube-apiserver: {ENV_VAR} is not set (scripts/test starts the harness; "
                'or run `eval "$(scaleset dev real-apiserver start)"`)'
            )
        backend = KubeBackend(name="real", kubeconfig_path=Path(kubeconfig))
        _guard_token(backend)
        yield backend
        return
    with _embedded_server() as running:
        backend = KubeBackend(
            name="embedded", kubeconfig_path=Path(running.kubeconfig_path), server=running.server
        )
        _guard_token(backend)
        yield backend


@pytest.fixture(scope="session")
async def kube(kube_backend: KubeBackend) -> AsyncIterator[AsyncClient]:
    client = kube_backend.client()
    yield client
    await client.close()


@pytest.fixture(scope="session")
async def kube_http(kube_backend: KubeBackend) -> AsyncIterator[httpx2.AsyncClient]:
    async with kube_backend.http() as client:
        yield client


def namespace_name(test_name: str) -> str:
    """A fresh namespace name derived from a test's name (unique per call)."""
    stem = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"t-{stem}-{secrets.token_hex(3)}"


@pytest.fixture
async def namespace(kube: AsyncClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    name = namespace_name(request.node.originalname)
    await kube.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    await kube.delete(Namespace, name)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("embedded_only")
        if marker is None:
            continue
        reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else None)
        if not reason:
            raise pytest.UsageError(f"{item.nodeid}: embedded_only needs a reason")
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("kube_backend") == "real":
            item.add_marker(pytest.mark.skip(reason=f"embedded only: {reason}"))
