"""``scaleset apiserver``: serve the embedded API server until SIGINT or SIGTERM.

Made for a shared host: the server accepts only the tokens it is given — by default one random
token made for this start and written only into the kubeconfig (mode 0600; without
``--kubeconfig``, into a fresh private directory that is removed on exit) — and the CLI refuses a
non-loopback address unless asked for explicitly.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

from scaleset.embedded.apiserver._server import EmbeddedApiServer


def fresh_token() -> str:
    """A bearer token for one start of the server."""
    return secrets.token_urlsafe(32)


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
    """Start the server, write the kubeconfig, announce the address and the kubeconfig's path
    (never a token), stop cleanly on a signal."""
    chosen = tokens or [fresh_token()]
    server = EmbeddedApiServer(
        host=host, port=port, tokens=chosen, accept_any_token=accept_any_token, tls=tls
    )
    private_dir: Path | None = None
    if kubeconfig is None:
        private_dir = Path(tempfile.mkdtemp(prefix="scaleset-apiserver-"))  # mode 0700
        kubeconfig = private_dir / "kubeconfig"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with server:
            announce(f"embedded Kubernetes API server listening on {server.url}")
            written = server.write_kubeconfig(kubeconfig, token=chosen[0])
            announce(f"kubeconfig written to {written}")
            await stop.wait()
            announce("shutting down")
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        if private_dir is not None:
            shutil.rmtree(private_dir, ignore_errors=True)
