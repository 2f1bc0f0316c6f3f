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
  terminating on the real test server, so every test gets its own), holding what the
  controller-manager puts in every namespace: the ``default`` ServiceAccount (pods that name no
  ServiceAccount are admitted with it) and the ``kube-root-ca.crt`` ConfigMap (the projected
  token volume admission mounts reads it). The real test server has no controller-manager, so
  the fixture creates them there; the embedded server's controllers create them, and the fixture
  waits for them. On teardown it deletes the namespace's pods on the real server (pods are
  listed cluster-wide by label, and a pod left in a namespace that never terminates would show
  in every later test) before it deletes the namespace.

Markers: ``embedded_only(reason)`` skips a test on the real backend, with its reason.

Client-side fault hooks: ``backend.client(hooks=[RequestHook(...)])`` runs an action (for
example a conflicting write through another client) just before a matching request is sent.
"""

from __future__ import annotations

import base64
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

from scaleset.devtools.real_apiserver import ENV_VAR, namespace_defaults
from scaleset.devtools.transports import (
    ImpersonatingTransport,
    InterceptingTransport,
    RequestHook,
    ServiceAccountRef,
)
from tests.support.waiting import eventually

BACKENDS = ("embedded", "real")
FIELD_MANAGER = "scaleset-tests"
DEFAULT_TIMEOUT = httpx2.Timeout(30.0)


@dataclass
class KubeBackend:
    """One API server the suites run against."""

    name: str
    kubeconfig_path: Path
    server: Any = None  # the EmbeddedApiServer (``.faults``) for "embedded"; None for "real"

    def cluster_ca_pem(self) -> str:
        """The cluster CA the kubeconfig trusts (what kube-root-ca.crt publishes)."""
        cluster = self.config().cluster
        if cluster.certificate_auth_data:
            return base64.b64decode(cluster.certificate_auth_data).decode()
        if cluster.certificate_auth:
            return Path(cluster.certificate_auth).read_text()
        raise RuntimeError(f"{self.kubeconfig_path} names no certificate authority")

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


NAMESPACE_DEFAULTS_BOUND_S = 10.0


async def provide_namespace_defaults(
    backend: KubeBackend, http: httpx2.AsyncClient, namespace: str
) -> None:
    """Make ``namespace`` hold what kube-controller-manager puts in every namespace.

    The real test server has none, so they are created here; the embedded server's controllers
    create them themselves, so this only waits (bounded) until they are there.
    """
    if backend.name == "real":
        for default in namespace_defaults(backend.cluster_ca_pem()):
            path = f"/api/v1/namespaces/{namespace}/{default.plural}"
            created = await http.post(path, json=default.body)
            assert created.status_code in (201, 409), created.text
        return

    async def present() -> bool:
        for default in namespace_defaults(""):
            path = f"/api/v1/namespaces/{namespace}/{default.plural}/{default.name}"
            if (await http.get(path)).status_code != 200:
                return False
        return True

    await eventually(
        present, within=NAMESPACE_DEFAULTS_BOUND_S, what=f"the defaults of namespace {namespace}"
    )


async def remove_namespace(backend: KubeBackend, http: httpx2.AsyncClient, namespace: str) -> None:
    """Delete a test's ``namespace`` so that none of its pods shows in a later test.

    The embedded server's namespace controller deletes a terminating namespace's content. The
    real test server has no controller-manager: the namespace stays Terminating with its pods in
    it, and pods are listed cluster-wide by label (a controller pod serves every namespace unless
    its flags narrow it), so its pods are deleted here first, as the namespace controller would.
    """
    if backend.name == "real":
        path = f"/api/v1/namespaces/{namespace}/pods"
        deleted = await http.delete(path, params={"gracePeriodSeconds": "0"})
        assert deleted.status_code == 200, deleted.text
    removed = await http.delete(f"/api/v1/namespaces/{namespace}")
    assert removed.status_code in (200, 202), removed.text


@pytest.fixture
async def namespace(
    kube: AsyncClient,
    kube_backend: KubeBackend,
    kube_http: httpx2.AsyncClient,
    request: pytest.FixtureRequest,
) -> AsyncIterator[str]:
    name = namespace_name(request.node.originalname)
    await kube.create(Namespace(metadata=ObjectMeta(name=name)))
    await provide_namespace_defaults(kube_backend, kube_http, name)
    yield name
    await remove_namespace(kube_backend, kube_http, name)


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
