"""Transport wrappers' common step: a watch response of one resource, its body passed through
a stream of the test's (events held, dropped or rewritten) — the server and the client
production uses are unchanged."""

from __future__ import annotations

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
