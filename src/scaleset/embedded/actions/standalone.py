"""``scaleset fake-github``: serve the fake GitHub on loopback until SIGINT or SIGTERM.

Prints where it listens, a ready-to-use githubConfigUrl and how to drive it through the control
endpoint. Credentials are never printed; the banner names where they came from instead. The
control endpoint wants a token made for this start, written only to a file (mode 0600, in a new
private directory removed on exit) whose path the banner shows.
"""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

from scaleset.embedded.actions.server import FakeGitHub, FakeSettings
from scaleset.embedded.actions.service import JobDelivery

PAT_ENV = "SCALESET_FAKE_GITHUB_PAT"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def banner(fake: FakeGitHub, org: str, pat_given: bool, token_file: Path) -> str:
    control = fake.base_url + "/_fake"
    auth = f'-H "Authorization: Bearer $(cat {token_file})"'
    credentials = (
        f"the PAT from --pat / ${PAT_ENV} (not shown)"
        if pat_given
        else f'none yet; add a PAT: curl {auth} -X POST {control}/pats -d \'{{"token": "<PAT>"}}\''
    )
    return "\n".join(
        [
            f"fake GitHub + Actions service listening on {fake.base_url}",
            f"  githubConfigUrl: {fake.config_url(org)}",
            f"  GitHub API:      {fake.api_url}",
            f"  credentials:     {credentials}",
            f"  control token:   in {token_file} (every /_fake call wants it)",
            "  queue a job:     "
            f'curl {auth} -X POST {control}/jobs -d \'{{"labels": ["<scale set name>"], '
            f'"owner": "{org}", "durationSeconds": 30}}\'',
            f"  ground truth:    curl {auth} {control}/state",
            f"  faults:          curl {auth} -X POST {control}/faults -d "
            '\'{"kind": "unavailable", "times": 3}\'',
            f"  fidelity ledger: curl {auth} {control}/ledger",
            "Stop with Ctrl-C (SIGINT) or SIGTERM.",
        ]
    )


def write_control_token(fake: FakeGitHub) -> Path:
    """The control token in a file only its owner can read, in a new private directory."""
    directory = Path(tempfile.mkdtemp(prefix="scaleset-fake-github-"))  # mode 0700
    path = directory / "control-token"
    path.touch(mode=0o600)
    path.write_text(fake.control_token + "\n")
    return path


async def serve(
    *,
    host: str,
    port: int,
    pat: str | None,
    org: str,
    poll_hold_seconds: float,
    job_delivery: JobDelivery,
    echo: Callable[[str], None],
) -> None:
    """Run the fake until a stop signal arrives."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        fake = FakeGitHub(
            host,
            port,
            poll_hold_seconds=poll_hold_seconds,
            settings=FakeSettings(job_delivery=job_delivery),
        )
        if pat:
            fake.add_pat(pat)
        async with fake:
            token_file = write_control_token(fake)
            try:
                echo(banner(fake, org, pat_given=bool(pat), token_file=token_file))
                await stop.wait()
                echo("stopping the fake GitHub")
            finally:
                shutil.rmtree(token_file.parent, ignore_errors=True)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
