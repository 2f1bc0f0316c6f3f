"""The httpx2 client underneath: per-kind timeouts and budgets, proxy routing, TLS roots, pool
limits.

Proxy selection is done per request by ProxyRoutingTransport (rules in `proxy.py`), not by
httpx2's environment handling, so the behaviour matches ARC's and is decided by one pure function.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import ssl
from dataclasses import dataclass, field

import httpx2

from scaleset.github.proxy import ProxyConfig, ProxyServer


class CallKind(enum.Enum):
    """Kinds of calls, each with its own timeouts and time budget."""

    GITHUB_API = "github-api"  # token endpoints, runner-registration, REST runner list
    ADMIN = "admin"  # Actions-service admin calls (scale sets, runners, JIT, sessions)
    LONG_POLL = "long-poll"  # GET message: the server holds it ~50 s
    MESSAGE_QUEUE = "message-queue"  # delete message, acquire jobs


def _default_timeouts() -> dict[CallKind, httpx2.Timeout]:
    return {
        # Per attempt: a hung server costs at most connect + read.
        CallKind.GITHUB_API: httpx2.Timeout(10.0, connect=5.0),
        CallKind.ADMIN: httpx2.Timeout(10.0, connect=5.0),
        # The read timeout must exceed the ~50 s server hold of an empty poll.
        CallKind.LONG_POLL: httpx2.Timeout(10.0, read=70.0),
        CallKind.MESSAGE_QUEUE: httpx2.Timeout(15.0, connect=5.0),
    }


def _default_budgets() -> dict[CallKind, float | None]:
    return {
        # Whole-call budgets (every attempt and retry wait), on the client's monotonic clock.
        # They bound a call's wall time without cutting the retry policy short: each leaves
        # room for all 5 attempts, each cut at its attempt deadline (connect + read), plus
        # the 1+2+4+8 s waits between them (admin: 5 x 15 + 15 = 90 s; ARC allows 5 x 5 min).
        # An attempt is also cut to what is left of the budget. Lease renewal
        # runs on its own task, so no budget has to fit inside a leader-election lease.
        CallKind.GITHUB_API: 90.0,
        CallKind.ADMIN: 90.0,
        # 5 polls held to their 70 s read timeout (+10 s connect) plus the waits: 5 x 80 + 15.
        CallKind.LONG_POLL: 420.0,
        # 5 x (5 + 15) + 15.
        CallKind.MESSAGE_QUEUE: 120.0,
    }


MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest answer body read (after decompression). The largest real answers — a REST page
of 100 runners, a long poll carrying a big job batch — are well under a megabyte; a body past
this is a misbehaving server or proxy (a 300 MiB answer once took a process from 69 to
691 MiB)."""


@dataclass(frozen=True)
class Timeouts:
    """Per-attempt httpx2 timeouts, per-attempt total deadlines and whole-call time budgets
    (seconds, None: no budget) for each kind of call.

    httpx2's timeouts bound each phase and each read: a server that sends one byte before every
    read timeout keeps them all happy. The attempt deadline bounds the whole attempt (connect,
    send, status line, headers and the complete body); by default it is the kind's connect +
    read timeout, what the budgets below assume one failed attempt costs.

    Override per client, e.g. `Timeouts().with_budget(CallKind.ADMIN, 8.0)`."""

    by_kind: dict[CallKind, httpx2.Timeout] = field(default_factory=_default_timeouts)
    budgets: dict[CallKind, float | None] = field(default_factory=_default_budgets)
    attempt_deadlines: dict[CallKind, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind, budget in self.budgets.items():
            if budget is not None and not budget > 0:
                raise ValueError(f"the time budget of {kind.value} calls must be > 0 or None")
        for kind, deadline in self.attempt_deadlines.items():
            if not deadline > 0:
                raise ValueError(f"the attempt deadline of {kind.value} calls must be > 0")

    def for_kind(self, kind: CallKind) -> httpx2.Timeout:
        return self.by_kind[kind]

    def budget_for(self, kind: CallKind) -> float | None:
        """The whole-call budget of `kind` (None: bounded by the attempt count alone)."""
        return self.budgets.get(kind)

    def attempt_deadline_for(self, kind: CallKind) -> float:
        """Seconds one attempt of `kind` may take in all (default: connect + read timeout)."""
        chosen = self.attempt_deadlines.get(kind)
        if chosen is not None:
            return chosen
        timeout = self.by_kind[kind]
        return (timeout.connect or 0.0) + (timeout.read or 0.0) or math.inf

    def with_attempt_deadline(self, kind: CallKind, seconds: float) -> Timeouts:
        return dataclasses.replace(
            self, attempt_deadlines={**self.attempt_deadlines, kind: seconds}
        )

    def replace(self, kind: CallKind, timeout: httpx2.Timeout) -> Timeouts:
        return dataclasses.replace(self, by_kind={**self.by_kind, kind: timeout})

    def with_budget(self, kind: CallKind, seconds: float | None) -> Timeouts:
        return dataclasses.replace(self, budgets={**self.budgets, kind: seconds})


def capped_timeout(timeout: httpx2.Timeout, seconds: float) -> httpx2.Timeout:
    """`timeout` with each phase (connect, read, write, pool) at most `seconds`: the last
    attempt of a call gets only what is left of its budget."""
    if math.isinf(seconds):
        return timeout

    def cap(limit: float | None) -> float:
        return seconds if limit is None else min(limit, seconds)

    return httpx2.Timeout(
        connect=cap(timeout.connect),
        read=cap(timeout.read),
        write=cap(timeout.write),
        pool=cap(timeout.pool),
    )


class ProxyRoutingTransport(httpx2.AsyncBaseTransport):
    """Sends each request directly or through the proxy `ProxyConfig.proxy_for` picks."""

    def __init__(
        self, proxy: ProxyConfig, ssl_context: ssl.SSLContext, limits: httpx2.Limits
    ) -> None:
        self._proxy = proxy
        self._ssl_context = ssl_context
        self._limits = limits
        self._direct = httpx2.AsyncHTTPTransport(verify=ssl_context, limits=limits, trust_env=False)
        self._via: dict[ProxyServer, httpx2.AsyncHTTPTransport] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        server = self._proxy.proxy_for(str(request.url))
        transport = self._direct if server is None else self._through(server)
        return await transport.handle_async_request(request)

    def _through(self, server: ProxyServer) -> httpx2.AsyncHTTPTransport:
        transport = self._via.get(server)
        if transport is None:
            auth = None
            if server.username is not None:
                password = server.password.get_secret_value() if server.password else ""
                auth = (server.username, password)
            transport = httpx2.AsyncHTTPTransport(
                verify=self._ssl_context,
                limits=self._limits,
                trust_env=False,
                proxy=httpx2.Proxy(server.url, auth=auth),
            )
            self._via[server] = transport
        return transport

    async def aclose(self) -> None:
        await self._direct.aclose()
        for transport in self._via.values():
            await transport.aclose()


DEFAULT_MAX_CONNECTIONS = 20
"""Connections one GitHub client keeps open at most (all of them kept alive)."""


def build_http_client(
    proxy: ProxyConfig,
    ssl_context: ssl.SSLContext,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> httpx2.AsyncClient:
    """An AsyncClient that never reads proxy settings itself and never follows redirects."""
    limits = httpx2.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return httpx2.AsyncClient(
        transport=transport or ProxyRoutingTransport(proxy, ssl_context, limits),
        trust_env=False,
        follow_redirects=False,
    )
