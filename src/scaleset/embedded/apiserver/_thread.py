"""Run an embedded API server on its own event loop in a daemon thread (for sync tests/tools)."""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaleset.embedded.apiserver._server import EmbeddedApiServer

_START_TIMEOUT = 30.0


@dataclass(frozen=True)
class RunningApiServer:
    """What ``serve_in_thread`` yields."""

    url: str
    kubeconfig_path: Path
    server: EmbeddedApiServer
    loop: asyncio.AbstractEventLoop


@contextmanager
def serve_in_thread(**kwargs: Any) -> Iterator[RunningApiServer]:
    """Start ``EmbeddedApiServer(**kwargs)`` in a daemon thread; stop it on exit."""
    server = EmbeddedApiServer(**kwargs)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    failure: list[BaseException] = []
    stop: asyncio.Event | None = None

    async def main() -> None:
        nonlocal stop
        stop = asyncio.Event()
        try:
            await server.start()
        except BaseException as exc:
            failure.append(exc)
            ready.set()
            return
        ready.set()
        try:
            await stop.wait()
        finally:
            await server.stop()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(main())
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="embedded-apiserver", daemon=True)
    thread.start()
    if not ready.wait(_START_TIMEOUT):
        raise TimeoutError("the embedded API server did not start")
    if failure:
        thread.join()
        raise failure[0]
    with tempfile.TemporaryDirectory(prefix="scaleset-apiserver-") as tmp:
        kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        try:
            yield RunningApiServer(server.url, kubeconfig, server, loop)
        finally:
            assert stop is not None
            loop.call_soon_threadsafe(stop.set)
            thread.join(timeout=_START_TIMEOUT)
