"""The httpx client underneath: per-kind timeouts, proxy routing, TLS roots, pool limits.

Proxy selection is done per request by ProxyRoutingTransport (rules in `proxy.py`), not by
httpx's environment handling, so the behaviour matches ARC's and is decided by one pure function.
"""

from __future__ import annotations

import enum
import ssl
from dataclasses import dataclass, field

import httpx

from scaleset.github.proxy import ProxyConfig, ProxyServer


class CallKind(enum.Enum):
    """Kinds of calls, each with its own timeout."""

    GITHUB_API = "github-api"  # token endpoints, runner-registration, REST runner list
    ADMIN = "admin"  # Actions-service admin calls (scale sets, runners, JIT, sessions)
    LONG_POLL = "long-poll"  # GET message: the server holds it ~50 s
    MESSAGE_QUEUE = "message-queue"  # delete message, acquire jobs


def _default_timeouts() -> dict[CallKind, httpx.Timeout]:
    return {
        # Short: a controller must finish (or give up on) an admin call well within its
        # leader-election lease (15 s by default).
        CallKind.GITHUB_API: httpx.Timeout(10.0, connect=5.0),
        CallKind.ADMIN: httpx.Timeout(10.0, connect=5.0),
        # The read timeout must exceed the ~50 s server hold of an empty poll.
        CallKind.LONG_POLL: httpx.Timeout(10.0, read=70.0),
        CallKind.MESSAGE_QUEUE: httpx.Timeout(15.0, connect=5.0),
    }


@dataclass(frozen=True)
class Timeouts:
    """Per-attempt httpx timeouts for each kind of call."""

    by_kind: dict[CallKind, httpx.Timeout] = field(default_factory=_default_timeouts)

    def for_kind(self, kind: CallKind) -> httpx.Timeout:
        return self.by_kind[kind]

    def replace(self, kind: CallKind, timeout: httpx.Timeout) -> Timeouts:
        return Timeouts({**self.by_kind, kind: timeout})


class ProxyRoutingTransport(httpx.AsyncBaseTransport):
    """Sends each request directly or through the proxy `ProxyConfig.proxy_for` picks."""

    def __init__(
        self, proxy: ProxyConfig, ssl_context: ssl.SSLContext, limits: httpx.Limits
    ) -> None:
        self._proxy = proxy
        self._ssl_context = ssl_context
        self._limits = limits
        self._direct = httpx.AsyncHTTPTransport(verify=ssl_context, limits=limits, trust_env=False)
        self._via: dict[ProxyServer, httpx.AsyncHTTPTransport] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        server = self._proxy.proxy_for(str(request.url))
        transport = self._direct if server is None else self._through(server)
        return await transport.handle_async_request(request)

    def _through(self, server: ProxyServer) -> httpx.AsyncHTTPTransport:
        transport = self._via.get(server)
        if transport is None:
            auth = None
            if server.username is not None:
                password = server.password.get_secret_value() if server.password else ""
                auth = (server.username, password)
            transport = httpx.AsyncHTTPTransport(
                verify=self._ssl_context,
                limits=self._limits,
                trust_env=False,
                proxy=httpx.Proxy(server.url, auth=auth),
            )
            self._via[server] = transport
        return transport

    async def aclose(self) -> None:
        await self._direct.aclose()
        for transport in self._via.values():
            await transport.aclose()


def build_http_client(
    proxy: ProxyConfig,
    ssl_context: ssl.SSLContext,
    *,
    max_connections: int = 20,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient that never reads proxy settings itself and never follows redirects."""
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return httpx.AsyncClient(
        transport=transport or ProxyRoutingTransport(proxy, ssl_context, limits),
        trust_env=False,
        follow_redirects=False,
    )
