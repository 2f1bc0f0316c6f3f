"""Network faults for runtime tests, below HTTP: a TCP proxy and a watch-answering transport.

``TcpProxy`` forwards loopback TCP to the API server and can, on demand,
- ``cut()``: reset every open connection (a dropped watch, a restarted apiserver);
- ``silence()``: keep open connections but forward nothing more (a dead NAT entry — only a
  client-side read timeout notices);
- ``partition()``/``heal()``: refuse and cut everything (a partitioned leader).
TLS passes through untouched, so the client code under test is exactly the production code.

``GoneOnNextWatch`` is an httpx2 transport wrapper that answers the next watch request the way
a server does when the requested version has left its window: a 200 stream with one ERROR event
carrying a 410 Status. Everything else is forwarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx2
import msgspec
from lightkube.config.kubeconfig import SingleConfig


class TcpProxy:
    """A loopback TCP proxy in front of ``target_host:target_port`` with fault switches."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._silent: set[asyncio.StreamWriter] = set()
        self._partitioned = False
        self.connections = 0
        self.port = 0

    @classmethod
    def for_config(cls, config: SingleConfig) -> TcpProxy:
        parts = urlsplit(config.cluster.server)
        assert parts.hostname is not None
        assert parts.port is not None
        return cls(parts.hostname, parts.port)

    def config_through(self, config: SingleConfig) -> SingleConfig:
        """``config`` with its server URL pointing at this proxy."""
        parts = urlsplit(config.cluster.server)
        server = f"{parts.scheme}://127.0.0.1:{self.port}{parts.path}"
        return config._replace(cluster=msgspec.structs.replace(config.cluster, server=server))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    def cut(self) -> None:
        """Abort every open connection (both directions)."""
        for writer in list(self._writers):
            transport = writer.transport
            transport.abort()
        self._writers.clear()
        self._silent.clear()

    def silence(self) -> None:
        """Stop forwarding on every open connection, without closing it."""
        self._silent.update(self._writers)

    def partition(self) -> None:
        self._partitioned = True
        self.cut()

    def heal(self) -> None:
        self._partitioned = False

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._partitioned:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        self._writers.update({writer, up_writer})
        pair = {writer, up_writer}
        tasks = [
            asyncio.ensure_future(self._pipe(reader, up_writer, pair)),
            asyncio.ensure_future(self._pipe(up_reader, writer, pair)),
        ]
        self._pipes.update(tasks)
        for task in tasks:
            task.add_done_callback(self._pipes.discard)

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pair: set[asyncio.StreamWriter],
    ) -> None:
        try:
            while data := await reader.read(65536):
                if pair & self._silent:
                    continue  # swallowed: the peer hears nothing more
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for end in pair:
                self._writers.discard(end)
                with contextlib.suppress(Exception):
                    end.transport.abort()


class GoneOnNextWatch(httpx2.AsyncBaseTransport):
    """Answers the next ``armed`` watch requests with an in-stream 410, forwards the rest."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        on_fire: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._inner = inner
        self._on_fire = on_fire
        self.armed = 0
        self.fired = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.armed and request.url.params.get("watch") == "true":
            self.armed -= 1
            if self._on_fire is not None:
                await self._on_fire()  # a change the watch would have missed
            # counted once that change is made: a test that waits for ``fired`` then finds it
            # on the server (counted before, a fresh list could still lack it and equal a cache
            # that lacks it too)
            self.fired += 1
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "code": 410,
                "reason": "Expired",
                "message": "too old resource version",
            }
            body = json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"
            return httpx2.Response(
                200, headers={"Content-Type": "application/json"}, content=body, request=request
            )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
