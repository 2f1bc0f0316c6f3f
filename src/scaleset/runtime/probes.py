"""The processes' HTTP endpoints: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``.

One small server for the controller manager and the listener, from the standard library
(``http.server``, the same server prometheus-client's own ``start_http_server`` uses), so that
neither process loads an HTTP server framework. It answers from a thread of its own, but every
answer is computed on the process's event loop: a check is a function returning ``(ok,
detail)`` that reads the loop's state (queues, informers, tasks), and the metrics registry's
collectors read it too. So an answer is as current as the loop, and a loop that does not run
the answer within ``answer_within`` seconds gets a 503 — a stalled loop fails its liveness probe,
as it did when the loop served the requests itself.

``ok`` maps to 200/500 and ``detail`` is the plain-text body (``ok`` or the reason).
``/metrics`` (or the path given: ARC's listener takes it from its config) serves a
prometheus-client registry in the text format. ``parse_bind_address`` reads Go-style addresses
(``:8080``, ``127.0.0.1:0``); ``0`` or an empty string disables a server, as ARC's flags do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import socketserver
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from scaleset.logs import get_logger

log = get_logger(__name__)

Check = Callable[[], tuple[bool, str]]

Answer = tuple[int, str, bytes]
"""An HTTP status, a content type and a body."""

PLAIN_TEXT = "text/plain; charset=utf-8"

ANSWER_WITHIN = 10.0
"""Seconds a request waits for the event loop to compute its answer. The kubelet's own probe
timeout (1 s unless the pod says otherwise) is shorter and counts first; this bound only keeps
a stalled loop from holding the server's threads for ever."""


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
        answer_within: float = ANSWER_WITHIN,
    ) -> None:
        self.host = host
        self.port = port
        self.metrics_path = metrics_path or "/metrics"
        self._routes: dict[str, Callable[[], Answer]] = {}
        if health is not None:
            self._routes["/healthz"] = _check_answer(health)
        if ready is not None:
            self._routes["/readyz"] = _check_answer(ready)
        if registry is not None:
            self._routes[self.metrics_path] = _metrics_answer(registry)
        self._answer_within = answer_within
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoints(self) -> list[str]:
        """The paths this server answers."""
        return list(self._routes)

    @property
    def bound_port(self) -> int:
        """The port actually bound (useful with port 0)."""
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    async def start(self) -> None:
        """Bind (an ``OSError`` if the address is taken) and serve from a thread."""
        server = _Server(
            (self.host, self.port),
            routes=self._routes,
            loop=asyncio.get_running_loop(),
            answer_within=self._answer_within,
        )
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            name=f"probe-server:{self.bound_port}",
            daemon=True,
        )
        self._thread.start()

    async def stop(self) -> None:
        """Stop serving and close the socket; a request in flight is not waited for."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        await asyncio.to_thread(server.shutdown)
        server.server_close()
        if thread is not None:
            await asyncio.to_thread(thread.join)


def _check_answer(check: Check) -> Callable[[], Answer]:
    def answer() -> Answer:
        ok, detail = check()
        status = HTTPStatus.OK if ok else HTTPStatus.INTERNAL_SERVER_ERROR
        return status, PLAIN_TEXT, (detail + "\n").encode()

    return answer


def _metrics_answer(registry: CollectorRegistry) -> Callable[[], Answer]:
    def answer() -> Answer:
        return HTTPStatus.OK, CONTENT_TYPE_LATEST, generate_latest(registry)

    return answer


class _Server(ThreadingHTTPServer):
    """One thread per request (daemon threads: a stuck request never holds the process)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        *,
        routes: dict[str, Callable[[], Answer]],
        loop: asyncio.AbstractEventLoop,
        answer_within: float,
    ) -> None:
        self.address_family = _family(*address)
        self.routes = routes
        self.loop = loop
        self.answer_within = answer_within
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without ``HTTPServer``'s reverse DNS lookup of the address (``getfqdn``), which
        can hang at start-up where DNS is slow; the name only goes into CGI variables."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def answer(self, path: str) -> Answer:
        route = self.routes.get(path)
        if route is None:
            return HTTPStatus.NOT_FOUND, PLAIN_TEXT, b"not found\n"
        try:
            return _on_loop(self.loop, route, self.answer_within)
        except TimeoutError:
            reason = f"the event loop did not answer within {self.answer_within:g} s\n"
            return HTTPStatus.SERVICE_UNAVAILABLE, PLAIN_TEXT, reason.encode()
        except RuntimeError:  # the loop is closed: the process is stopping
            return HTTPStatus.SERVICE_UNAVAILABLE, PLAIN_TEXT, b"stopping\n"
        except Exception as error:  # a check that raised: its type, never its message
            log.warning("probe answer failed", path=path, error=type(error).__name__)
            body = f"{path} failed: {type(error).__name__}\n".encode()
            return HTTPStatus.INTERNAL_SERVER_ERROR, PLAIN_TEXT, body


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 30  # seconds a client may take to send its request line and headers

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _answer(self, *, with_body: bool) -> None:
        status, content_type, body = self.server.answer(urlsplit(self.path).path)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """No access log: probes come every few seconds."""


def _on_loop(loop: asyncio.AbstractEventLoop, work: Callable[[], Answer], within: float) -> Answer:
    """Run ``work`` on ``loop`` (from another thread) and wait for its answer."""
    future: concurrent.futures.Future[Answer] = concurrent.futures.Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return  # the waiter gave up
        try:
            future.set_result(work())
        except BaseException as error:
            future.set_exception(error)

    loop.call_soon_threadsafe(run)
    try:
        return future.result(timeout=within)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError from None


def _family(host: str, port: int) -> socket.AddressFamily:
    """The address family of ``host`` (``::`` is IPv6), as the server must be told."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    return infos[0][0]
