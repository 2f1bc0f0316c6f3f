"""``scaleset fake-github`` as a process: banner, a live server, no secret printed, clean stop."""

from __future__ import annotations

import asyncio
import re
import signal
import sys

import httpx
import pytest

PAT = "ghp_cliTestToken0123456789abcdef"


async def start(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scaleset",
        "fake-github",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    first = await asyncio.wait_for(process.stdout.readline(), timeout=30)
    match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first.decode())
    assert match, first
    return process, match.group(1)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_serves_prints_no_secret_and_stops_cleanly(signum: signal.Signals) -> None:
    process, base_url = await start("--pat", PAT, "--org", "octo", "--poll-hold", "0.1")
    async with httpx.AsyncClient() as http:
        reg = await http.post(
            f"{base_url}/api/v3/orgs/octo/actions/runners/registration-token",
            headers={"Authorization": f"Bearer {PAT}"},
        )
        assert reg.status_code == 201
        state = await http.get(f"{base_url}/_fake/state")
        assert state.json()["jobs"] == []
    process.send_signal(signum)
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0
    output = stdout.decode() + stderr.decode()
    assert f"githubConfigUrl: {base_url}/octo" in output
    assert "/_fake/jobs" in output
    assert PAT not in output
    assert "stopping" in output


async def test_refuses_a_non_loopback_host() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scaleset",
        "fake-github",
        "--host",
        "10.1.2.3",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 2
    assert b"loopback" in stderr
