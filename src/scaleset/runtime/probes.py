"""The processes' HTTP endpoints: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``.

One aiohttp server for the controller manager and the listener; each check is a function
returning ``(ok, detail)``; ``ok`` maps to 200/500 and ``detail`` is the plain-text body (``ok``
or the reason). ``/metrics`` (or the path given: ARC's listener takes it from its config) serves
a prometheus-client registry. ``parse_bind_address`` reads Go-style addresses (``:8080``,
``127.0.0.1:0``); ``0`` or an empty string disables a server, as ARC's flags do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], tuple[bool, str]]


def parse_bind_address(address: str | None) -> tuple[str, int] | None:
    """``":8080"`` -> ``("0.0.0.0", 8080)``; ``"0"``, ``""`` or ``None`` -> ``None`` (disabled)."""
    if address is None:
        return None
    address = address.strip()
    if address in ("", "0"):
        return None
    host, sep, port_text = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must be host:port or :port")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"bind address {address!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"bind address {address!r}: port out of range")
    host = host.strip("[]") or "0.0.0.0"  # noqa: S104 - ":8080" means all interfaces, like Go
    return host, port


class ProbeServer:
    """Serves health checks and/or metrics on one address."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        health: Check | None = None,
        ready: Check | None = None,
        registry: CollectorRegistry | None = None,
        metrics_path: str = "/metrics",
    ) -> None:
        self.host = host
        self.port = port
        self._health = health
        self._ready = ready
        self._registry = registry
        self.metrics_path = metrics_path or "/metrics"
        self._runner: web.AppRunner | None = None

    @property
    def endpoints(self) -> list[str]:
        """The paths this server answers."""
        paths = []
        if self._health is not None:
            paths.append("/healthz")
        if self._ready is not None:
            paths.append("/readyz")
        if self._registry is not None:
            paths.append(self.metrics_path)
        return paths

    @property
    def bound_port(self) -> int:
        """The port actually bound (useful with port 0)."""
        if self._runner is None:
            raise RuntimeError("server not started")
        for address in self._runner.addresses:
            if isinstance(address, tuple) and len(address) >= 2:
                return int(address[1])
        raise RuntimeError("server has no bound address")

    async def start(self) -> None:
        app = web.Application()
        if self._health is not None:
            app.router.add_get("/healthz", self._check_handler(self._health))
        if self._ready is not None:
            app.router.add_get("/readyz", self._check_handler(self._ready))
        if self._registry is not None:
            app.router.add_get(self.metrics_path, self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @staticmethod
    def _check_handler(
        check: Check,
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handler(_request: web.Request) -> web.StreamResponse:
            ok, detail = check()
            return web.Response(status=200 if ok else 500, text=detail + "\n")

        return handler

    async def _metrics(self, _request: web.Request) -> web.Response:
        assert self._registry is not None
        body = generate_latest(self._registry)
        response = web.Response(body=body)
        response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
        response.charset = "utf-8"
        return response
