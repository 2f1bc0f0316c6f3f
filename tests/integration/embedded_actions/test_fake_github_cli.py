"""``scaleset fake-github`` as a process: banner, a live server, no secret printed, clean stop."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

import httpx2
import pytest

PAT = "ghp_cliTestToken0123456789abcdef"


async def start(*args: str) -> tuple[asyncio.subprocess.Process, str, Path, str]:
    """The process, its base URL, the file holding its control token and the banner lines read
    to find it."""
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
    token_file: Path | None = None
    read = first.decode()
    while token_file is None:
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=30)).decode()
        assert line, "the banner ended without naming the control token's file"
        read += line
        named = re.search(r"control token:\s+in (\S+)", line)
        if named:
            token_file = Path(named.group(1))
    return process, match.group(1), token_file, read


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_serves_prints_no_secret_and_stops_cleanly(signum: signal.Signals) -> None:
    process, base_url, token_file, banner = await start(
        "--pat", PAT, "--org", "octo", "--poll-hold", "0.1"
    )
    control_token = token_file.read_text().strip()
    assert oct(token_file.stat().st_mode & 0o777) == oct(0o600)
    async with httpx2.AsyncClient() as http:
        reg = await http.post(
            f"{base_url}/api/v3/orgs/octo/actions/runners/registration-token",
            headers={"Authorization": f"Bearer {PAT}"},
        )
        assert reg.status_code == 201
        refused = await http.get(f"{base_url}/_fake/state")
        assert refused.status_code == 401
        state = await http.get(
            f"{base_url}/_fake/state", headers={"Authorization": f"Bearer {control_token}"}
        )
        assert state.json()["jobs"] == []
    process.send_signal(signum)
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0
    output = banner + stdout.decode() + stderr.decode()
    assert f"githubConfigUrl: {base_url}/octo" in output
    assert "/_fake/jobs" in output
    assert PAT not in output
    assert control_token not in output
    assert "stopping" in output
    assert not token_file.exists()  # removed with its directory on exit


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
    assert b"not a loopback address" in stderr
    assert b"--allow-non-loopback" in stderr
