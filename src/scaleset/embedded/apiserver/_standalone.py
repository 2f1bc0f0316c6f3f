"""``scaleset apiserver``: serve the embedded API server until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

from scaleset.embedded.apiserver._server import EmbeddedApiServer


async def serve_until_signalled(
    *,
    host: str,
    port: int,
    kubeconfig: Path | None,
    tokens: list[str],
    accept_any_token: bool,
    tls: bool,
    announce: Callable[[str], None],
) -> None:
    """Start the server, write the kubeconfig, announce the address, stop cleanly on a signal."""
    server = EmbeddedApiServer(
        host=host, port=port, tokens=tokens or None, accept_any_token=accept_any_token, tls=tls
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with server:
            announce(f"embedded Kubernetes API server listening on {server.url}")
            if kubeconfig is not None:
                written = server.write_kubeconfig(kubeconfig)
                announce(f"kubeconfig written to {written}")
            await stop.wait()
            announce("shutting down")
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
