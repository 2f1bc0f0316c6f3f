"""Transport wrappers' common step: a watch response of one resource, its body passed through
a stream of the test's (events held, dropped or rewritten) — the server and the client
production uses are unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import httpx2


def restream_watch(
    request: httpx2.Request,
    response: httpx2.Response,
    plural: str,
    stream: Callable[[httpx2.AsyncByteStream], httpx2.AsyncByteStream],
) -> httpx2.Response:
    """``response`` with its body read through ``stream`` when ``request`` watches ``plural``
    (a collection path ending ``/<plural>``), else ``response`` as it came."""
    watching = request.url.params.get("watch") == "true"
    if not (watching and request.url.path.endswith(f"/{plural}")):
        return response
    assert isinstance(response.stream, httpx2.AsyncByteStream)
    return httpx2.Response(
        response.status_code,
        headers=response.headers,
        stream=stream(response.stream),
        request=request,
        extensions=response.extensions,
    )


async def watch_lines(stream: httpx2.AsyncByteStream) -> AsyncIterator[bytes]:
    """The events of a watch stream one line each (its newline dropped), as they arrive: a
    chunk may carry several events or part of one."""
    pending = b""
    async for chunk in stream:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line
    if pending:
        yield pending


class _GatedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, gate: asyncio.Event) -> None:
        self._inner = inner
        self._gate = gate

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            await self._gate.wait()
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class LaggingWatch(httpx2.AsyncBaseTransport):
    """Holds what the watch streams of ``plural`` carry while ``lag()`` is on, and lets it
    through at ``catch_up()``: the controller's cache of that resource falls behind the API
    server, as a slow watch does under load (the stream, nothing else, is held)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, plural: str) -> None:
        self._inner = inner
        self._plural = plural
        self._open = asyncio.Event()
        self._open.set()

    def lag(self) -> None:
        self._open.clear()

    def catch_up(self) -> None:
        self._open.set()

    def _stream(self, inner: httpx2.AsyncByteStream) -> httpx2.AsyncByteStream:
        """What a watch stream is read through (a subclass may hold events more finely)."""
        return _GatedStream(inner, self._open)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        return restream_watch(request, response, self._plural, self._stream)

    async def aclose(self) -> None:
        self._open.set()
        await self._inner.aclose()
