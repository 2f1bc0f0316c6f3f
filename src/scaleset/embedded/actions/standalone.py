"""``scaleset fake-github``: serve the fake GitHub on loopback until SIGINT or SIGTERM.

Prints where it listens, a ready-to-use githubConfigUrl and how to drive it through the control
endpoint. Credentials are never printed; the banner names where they came from instead.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
from collections.abc import Callable

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


def banner(fake: FakeGitHub, org: str, pat_given: bool) -> str:
    control = fake.base_url + "/_fake"
    credentials = (
        f"the PAT from --pat / ${PAT_ENV} (not shown)"
        if pat_given
        else f'none yet; add a PAT: curl -X POST {control}/pats -d \'{{"token": "<PAT>"}}\''
    )
    return "\n".join(
        [
            f"fake GitHub + Actions service listening on {fake.base_url}",
            f"  githubConfigUrl: {fake.config_url(org)}",
            f"  GitHub API:      {fake.api_url}",
            f"  credentials:     {credentials}",
            "  queue a job:     "
            f'curl -X POST {control}/jobs -d \'{{"labels": ["<scale set name>"], '
            f'"owner": "{org}", "durationSeconds": 30}}\'',
            f"  ground truth:    curl {control}/state",
            f'  faults:          curl -X POST {control}/faults -d \'{{"kind": "unavailable", '
            '"times": 3}\'',
            f"  fidelity ledger: curl {control}/ledger",
            "Stop with Ctrl-C (SIGINT) or SIGTERM.",
        ]
    )


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
            echo(banner(fake, org, pat_given=bool(pat)))
            await stop.wait()
            echo("stopping the fake GitHub")
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
