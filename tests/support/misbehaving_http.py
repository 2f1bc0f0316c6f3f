"""A loopback HTTP/1.1 server whose every answer misbehaves in one chosen way, for the GitHub
client's bounds (below any client code: raw asyncio streams, so nothing on our side is faked).

- ``Drip(where="body")``: a 200 with a large ``Content-Length``, then one body byte every
  ``interval`` seconds (real time) for as long as the client stays: each read gets a byte
  before any per-read timeout, so only a bound on the whole attempt ends it;
  ``where="head"`` drips the status line and headers the same way.
- ``Flood(total, announce=True)``: a 200 whose ``Content-Length`` is ``total`` (or, with
  ``announce=False``, none: ``Connection: close`` and the body until the socket closes), then
  ``total`` bytes of JSON-looking filler as fast as the client reads them.

Every write waits for the socket to drain, so the server never buffers more than the
transport's high-water mark: the client's memory is what the client chose to keep. ``requests``
counts answered requests, ``sent`` the body bytes the client took. With ``times=N`` only the first
N requests misbehave; later ones get a prompt 404 (a test can then end without waiting out a
hung call).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from types import TracebackType

CHUNK = 64 * 1024
NOT_FOUND = (
    b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 23\r\n"
    b'Connection: close\r\n\r\n{"message":"Not Found"}'
)


@dataclass(frozen=True)
class Drip:
    where: str = "body"  # "head" or "body"
    interval: float = 0.02
    length: int = 1024 * 1024


@dataclass(frozen=True)
class Flood:
    total: int
    announce: bool = True


Behaviour = Drip | Flood


class MisbehavingServer:
    """``async with MisbehavingServer(Drip()) as server: server.url``."""

    def __init__(self, behaviour: Behaviour, *, times: int | None = None) -> None:
        self.behaviour = behaviour
        self.times = times
        self.requests = 0
        self.sent = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> MisbehavingServer:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        self.cut()  # each handler ends on its next write
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def cut(self) -> None:
        """Abort every open connection (a hung answer ends with a cut connection)."""
        for writer in list(self._writers):
            writer.transport.abort()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            if self.times is not None and self.requests > self.times:
                writer.write(NOT_FOUND)
                await writer.drain()
            elif isinstance(self.behaviour, Drip):
                await self._drip(self.behaviour, writer)
            else:
                await self._flood(self.behaviour, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away: that is the point
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _drip(self, drip: Drip, writer: asyncio.StreamWriter) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {drip.length}\r\n\r\n"
        ).encode()
        if drip.where == "body":
            writer.write(head)
            await writer.drain()
            payload = b" " * drip.length
        else:
            payload = head + b" " * drip.length
        for index in range(len(payload)):
            writer.write(payload[index : index + 1])
            await writer.drain()
            await asyncio.sleep(drip.interval)  # the fault itself: a server that drags

    async def _flood(self, flood: Flood, writer: asyncio.StreamWriter) -> None:
        length = f"Content-Length: {flood.total}\r\n" if flood.announce else ""
        writer.write(
            (
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"{length}Connection: close\r\n\r\n"
            ).encode()
        )
        filler = b'{"runners":[' + b" " * (CHUNK - 12)
        left = flood.total
        while left > 0:
            piece = filler[: min(CHUNK, left)]
            writer.write(piece)
            await writer.drain()
            self.sent += len(piece)
            left -= len(piece)
