"""The listener process's exit codes (``scaleset listener --help`` lists them): only what a
restart (after someone fixes the cause) can cure ends the process."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from tests.integration.listener.runners import runner_set_body
from tests.integration.listener.world import PAT
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source

from scaleset.clock import SystemClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET
from scaleset.listener.config import parse_config
from scaleset.listener.exits import EXIT_CONFIG, EXIT_GITHUB_REFUSED, EXIT_RUNNER_SET_GONE
from scaleset.listener.main import serve


def config_for(fake: FakeGitHub, namespace: str, scale_set_id: int) -> dict[str, object]:
    return {
        "configure_url": fake.config_url("acme"),
        "github_token": PAT,
        "ephemeral_runner_set_namespace": namespace,
        "ephemeral_runner_set_name": "arc-runners",
        "max_runners": 5,
        "runner_scale_set_id": scale_set_id,
    }


@pytest.mark.usefixtures("actions_crds")
async def test_a_missing_runner_set_exits_4(kube_backend: KubeBackend, namespace: str) -> None:
    async with FakeGitHub(clock=SystemClock(), poll_hold_seconds=0.1) as fake:
        register_secret_source(fake.control.issued_secrets)
        fake.add_pat(register_secret(PAT))
        scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
        code = await serve(
            parse_config(config_for(fake, namespace, scale_set_id)),
            owner="listener-pod",
            kubeconfig=str(kube_backend.kubeconfig_path),
        )
    assert code == EXIT_RUNNER_SET_GONE


@pytest.mark.usefixtures("actions_crds")
async def test_an_unknown_scale_set_exits_3(
    kube_backend: KubeBackend, namespace: str, client: KubeClient
) -> None:
    await client.create(EPHEMERAL_RUNNER_SET, runner_set_body("arc-runners", namespace))
    async with FakeGitHub(clock=SystemClock(), poll_hold_seconds=0.1) as fake:
        register_secret_source(fake.control.issued_secrets)
        fake.add_pat(register_secret(PAT))
        fake.control.create_scale_set(fake.config_url("acme"), "arc")
        code = await serve(
            parse_config(config_for(fake, namespace, 999)),
            owner="listener-pod",
            kubeconfig=str(kube_backend.kubeconfig_path),
        )
    assert code == EXIT_GITHUB_REFUSED


def listener_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``scaleset listener`` in its own process (it configures logging for the whole process)."""
    return subprocess.run(
        [sys.executable, "-m", "scaleset", "listener"],
        env={k: v for k, v in os.environ.items() if k != "LISTENER_CONFIG_PATH"} | env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_no_config_path_or_a_bad_config_exits_1(tmp_path: Path) -> None:
    unset = listener_process({})
    assert unset.returncode == EXIT_CONFIG
    assert "LISTENER_CONFIG_PATH is not set" in unset.stderr
    bad = tmp_path / "config.json"
    bad.write_text('{"configure_url": "https://github.com/acme", "max_runners": -1}')
    invalid = listener_process({"LISTENER_CONFIG_PATH": str(bad)})
    assert invalid.returncode == EXIT_CONFIG
    assert "ephemeral_runner_set_namespace: is required" in invalid.stderr


@pytest.mark.usefixtures("actions_crds")
async def test_metrics_are_served_and_a_taken_port_does_not_stop_the_listener(
    kube_backend: KubeBackend, namespace: str, client: KubeClient
) -> None:
    await client.create(EPHEMERAL_RUNNER_SET, runner_set_body("arc-runners", namespace))
    with socket.socket() as taken, socket.socket() as free:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        free.bind(("127.0.0.1", 0))
        free_port = free.getsockname()[1]
        free.close()
        async with FakeGitHub(clock=SystemClock(), poll_hold_seconds=0.1) as fake:
            register_secret_source(fake.control.issued_secrets)
            fake.add_pat(register_secret(PAT))
            scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
            for port, served in ((free_port, True), (taken.getsockname()[1], False)):
                config = config_for(fake, namespace, scale_set_id) | {
                    "metrics_addr": f"127.0.0.1:{port}",
                    "metrics_endpoint": "/listener-metrics",
                }
                stop = asyncio.Event()
                task = asyncio.create_task(
                    serve(
                        parse_config(config),
                        owner="listener-pod",
                        kubeconfig=str(kube_backend.kubeconfig_path),
                        stop=stop,
                        handle_signals=False,
                    )
                )
                await fake.control.wait_for(
                    lambda truth: any(s.polls > 0 for s in truth.sessions), within=30
                )
                if served:
                    async with httpx2.AsyncClient(trust_env=False) as http:
                        answer = await http.get(f"http://127.0.0.1:{port}/listener-metrics")
                    assert answer.status_code == 200
                    assert "gha_max_runners" in answer.text
                stop.set()
                assert await asyncio.wait_for(task, 30) == 0
