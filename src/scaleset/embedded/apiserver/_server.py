"""``EmbeddedApiServer``: the store, the registry, the control loops and the HTTP front together.

Usage::

    async with EmbeddedApiServer() as server:     # 127.0.0.1, a free port
        server.write_kubeconfig(path)              # token auth, for kubectl and lightkube
        server.faults.fail_next(1, 500, verb="create", resource="pods")
        server.access.entries()                    # who asked for what (``_access``)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from scaleset.clock import Clock, SystemClock
from scaleset.embedded.apiserver import _stored_texts as stored_texts
from scaleset.embedded.apiserver._access import AccessLog
from scaleset.embedded.apiserver._builtin import builtin_types
from scaleset.embedded.apiserver._controllers import Controllers
from scaleset.embedded.apiserver._crds import crd_type
from scaleset.embedded.apiserver._faults import Faults, _Controls
from scaleset.embedded.apiserver._http import MAX_BODY_BYTES, ApiHandler
from scaleset.embedded.apiserver._registry import Registry
from scaleset.embedded.apiserver._rest import Rest
from scaleset.embedded.apiserver._store import DEFAULT_HISTORY, Store
from scaleset.embedded.apiserver._tls import (
    ServingCertificate,
    make_cluster_ca,
    make_serving_certificate,
)

log = logging.getLogger(__name__)

DEFAULT_TOKEN = "scaleset-embedded-token"  # noqa: S105 - a fixed local test credential
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# how long pod admission waits for the controllers to create a new namespace's `default`
# ServiceAccount (kube-apiserver's plugin retries its lookup for about as long)
ADMISSION_LOOKUP_SECONDS = 2.0


class EmbeddedApiServer:
    """A Kubernetes API server on loopback, in memory, with fault hooks for tests."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        *,
        tokens: Iterable[str] | None = None,
        accept_any_token: bool = False,
        history_size: int = DEFAULT_HISTORY,
        bookmark_interval: float = 60.0,
        garbage_collection: bool = True,
        max_body_bytes: int = MAX_BODY_BYTES,
        tls: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.clock: Clock = clock or SystemClock()
        self.tokens = frozenset(tokens) if tokens is not None else frozenset({DEFAULT_TOKEN})
        self.accept_any_token = accept_any_token
        self.faults = Faults()
        self.access = AccessLog()
        self.store = Store(history_size=history_size)
        self.store.listeners.append(stored_texts.offer)
        self.registry = Registry()
        for rt in builtin_types():
            self.registry.add(rt)
        self.registry.add(crd_type())
        self._bookmark_interval = bookmark_interval
        self._garbage_collection = garbage_collection
        self._max_body_bytes = max_body_bytes
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._handler: ApiHandler | None = None
        self.rest: Rest | None = None
        self._bound_port: int | None = None
        self.certificate: ServingCertificate | None = (
            make_serving_certificate(host) if tls else None
        )
        # the cluster CA the controllers publish as kube-root-ca.crt in every namespace
        self.cluster_ca_pem: bytes = (
            self.certificate.ca_pem if self.certificate is not None else make_cluster_ca()
        )

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        if self._runner is not None:
            return
        rest = Rest(self.store, self.registry, self.clock)
        self.rest = rest
        controllers = Controllers(
            rest,
            self.registry,
            self.store,
            root_ca_pem=self.cluster_ca_pem.decode(),
            garbage_collection=self._garbage_collection,
        )
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        for name in INITIAL_NAMESPACES:
            if self.store.get(ns_type.bucket, ("", name)) is None:
                rest.create(ns_type, "", {"metadata": {"name": name}})
        handler = ApiHandler(
            rest,
            self.registry,
            self.faults,
            tokens=None if self.accept_any_token else self.tokens,
            server_address=lambda: f"{self.host}:{self._bound_port}",
            bookmark_interval=self._bookmark_interval,
            max_body_bytes=self._max_body_bytes,
            crd_terminating=controllers.crd_terminating,
            controllers_settled=lambda: controllers.settled(ADMISSION_LOOKUP_SECONDS),
            access=self.access,
        )
        self._handler = handler
        app = web.Application(client_max_size=self._max_body_bytes + 1024)
        app.router.add_route("*", "/{tail:.*}", handler.handle)
        # handler_cancellation: a request whose client went away is cancelled with its
        # connection (a real API server cancels the request's context); otherwise its handler
        # runs on detached from any connection, and stop() cannot see or end it.
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=1.0,
            handler_cancellation=True,
        )
        await runner.setup()
        site = web.TCPSite(
            runner,
            self.host,
            self.port,
            reuse_address=True,
            ssl_context=self.certificate.server_context() if self.certificate else None,
        )
        await site.start()
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self._bound_port = sockets[0].getsockname()[1] if sockets else self.port
        loop = asyncio.get_running_loop()
        self._tasks.append(
            loop.create_task(controllers.run(), name="embedded-apiserver-controllers")
        )
        self.faults._bind(_Controls(loop, self._drop_watches, self.store.compact))
        log.info("embedded apiserver listening on %s", self.url)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self.faults._bind(None)
        self._drop_watches(False)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await runner.cleanup()

    async def __aenter__(self) -> EmbeddedApiServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _drop_watches(self, abrupt: bool) -> None:
        if self._handler is None:
            return
        for session in list(self._handler.watches):
            session.drop(abrupt)

    # -- addresses -----------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self._bound_port is None:
            raise RuntimeError("the server is not started")
        scheme = "https" if self.certificate is not None else "http"
        return f"{scheme}://{self.host}:{self._bound_port}"

    def kubeconfig(self, token: str | None = None) -> dict[str, Any]:
        chosen = token or (sorted(self.tokens)[0] if self.tokens else DEFAULT_TOKEN)
        cluster: dict[str, Any] = {"server": self.url}
        if self.certificate is not None:
            cluster["certificate-authority-data"] = base64.b64encode(
                self.certificate.ca_pem
            ).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "embedded", "cluster": cluster}],
            "users": [{"name": "embedded", "user": {"token": chosen}}],
            "contexts": [
                {
                    "name": "embedded",
                    "context": {"cluster": "embedded", "user": "embedded", "namespace": "default"},
                }
            ],
            "current-context": "embedded",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], token: str | None = None) -> Path:
        """Write a kubeconfig (token auth) for this server; returns the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(token), sort_keys=False))
        target.chmod(0o600)
        return target
