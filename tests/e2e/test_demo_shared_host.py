"""The demo as a user meets it on a shared machine: ``kubectl`` works with the kubeconfig it
prints (HTTPS, a token of its own: kubectl sends tokens only over TLS), nobody else's token gets
in, its listeners bind no fixed port (two demos at once must not fight over :8080), and its
components log to a file while the terminal shows the demo's own progress and report.

The kubectl tests skip where kubectl is not installed; CI installs Debian's kubernetes-client
and runs kubectl against a running demo itself (``.ci/run``)."""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import shutil
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
import yaml

from scaleset.clock import SystemClock
from scaleset.demo.system import RUNNER_NAMESPACE, SCALE_SET_NAME, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.embedded.apiserver import DEFAULT_TOKEN

pytestmark = pytest.mark.timeout(240)

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Running:
    system: DemoSystem
    listener_logs: Collected


@pytest.fixture(scope="module")
async def demo() -> AsyncIterator[Running]:
    listener_logs = Collected()
    logging.getLogger("scaleset.listener").addHandler(listener_logs)
    clock = SystemClock()
    system = DemoSystem(
        clock=clock,
        truth=Truth(zombie_bound=60.0),
        min_runners=0,
        max_runners=2,
        grace=3.0,
        kubeconfig=None,
        started_at=clock.monotonic(),
    )
    await system.start()
    try:
        assert system.fake is not None
        await system.fake.control.wait_for(
            lambda t: any(s.polls > 0 for s in t.sessions), within=60, what="listener session"
        )
        yield Running(system, listener_logs)
    finally:
        await system.stop()
        logging.getLogger("scaleset.listener").removeHandler(listener_logs)


def kubeconfig_of(system: DemoSystem) -> dict[str, str]:
    document = yaml.safe_load(system.kubeconfig.read_bytes())
    cluster = document["clusters"][0]["cluster"]
    return {
        "server": cluster["server"],
        "ca": base64.b64decode(cluster.get("certificate-authority-data", "")).decode(),
        "token": document["users"][0]["user"]["token"],
    }


async def test_the_demo_api_server_is_https_with_a_token_of_its_own(demo: Running) -> None:
    config = kubeconfig_of(demo.system)
    assert config["server"].startswith("https://127.0.0.1:")
    assert config["token"] != DEFAULT_TOKEN
    tls = ssl.create_default_context(cadata=config["ca"])
    async with httpx2.AsyncClient(base_url=config["server"], verify=tls) as http:
        ours = await http.get("/api", headers={"Authorization": f"Bearer {config['token']}"})
        guessed = await http.get("/api", headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"})
    assert (ours.status_code, guessed.status_code) == (200, 401)


@needs_kubectl
async def test_kubectl_reads_the_demo_with_the_kubeconfig_it_prints(demo: Running) -> None:
    assert KUBECTL is not None
    kubeconfig = str(demo.system.kubeconfig)

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, "--kubeconfig", kubeconfig, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    runners = await asyncio.to_thread(kubectl, "get", "ephemeralrunners", "-n", RUNNER_NAMESPACE)
    assert runners.returncode == 0, runners.stderr
    sets = await asyncio.to_thread(
        kubectl, "get", "autoscalingrunnersets", "-n", RUNNER_NAMESPACE, "-o", "name"
    )
    assert sets.returncode == 0, sets.stderr
    assert f"autoscalingrunnerset.actions.github.com/{SCALE_SET_NAME}" in sets.stdout


async def test_the_listener_binds_no_fixed_port(demo: Running) -> None:
    seen = [
        (record.levelno, record.msg)
        for record in demo.listener_logs.records
        if isinstance(record.msg, dict)
        and record.msg.get("event") in ("serving metrics", "metrics not served: cannot listen")
    ]
    assert seen, "the listener said nothing about its metrics endpoint"
    for level, fields in seen:
        assert level < logging.WARNING, fields
        assert fields["address"] == "127.0.0.1:0", fields


async def test_component_logs_go_to_a_file_and_the_terminal_gets_the_demo() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scaleset",
        "demo",
        "--jobs",
        "2",
        "--duration",
        "2",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=220)
    out = stdout.decode()
    assert process.returncode == 0, out + stderr.decode()
    named = re.search(r"component logs: (\S+)", out)
    assert named, out
    logged = await asyncio.to_thread(Path(named.group(1)).read_text)
    assert "level=" in logged  # the components' own lines, there
    assert "level=" not in out
    assert stderr.decode() == ""
    assert "invariants: all held" in out
