"""``scaleset doctor`` as a process: JSON on stdout that a machine can read; exit 1 when it
found something, 0 on a healthy scale set, 3 with one line when it could not look (API server
unreachable, namespace mistyped, no scale set there); ``--context`` picks the cluster; a bad
option is one line on stderr and exit 2, never a traceback; GitHub credentials never go to a
host a runner spec names unless it is an approved GitHub host over https."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from tests.integration.doctor.world import PAT, Cluster
from tests.plugins.kube_backends import KubeBackend

from scaleset.embedded.actions import FakeGitHub

pytestmark = pytest.mark.timeout(180)


def run(*args: str, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m scaleset doctor ARGS`` without the caller's GITHUB_TOKEN or KUBECONFIG."""
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "KUBECONFIG")}
    return subprocess.run(
        [sys.executable, "-m", "scaleset", "doctor", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**env, **(environ or {})},
        timeout=150,
    )


def doctor(
    backend: KubeBackend, namespace: str, *args: str, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run(
        "--kubeconfig",
        str(backend.kubeconfig_path),
        "--namespace",
        namespace,
        "--output",
        "json",
        *args,
        environ=environ,
    )


def approving(fake: FakeGitHub) -> tuple[str, str]:
    """The option that approves the fake GitHub's host (the objects name it)."""
    return ("--github-host", fake.base_url.removeprefix("https://"))


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


async def healthy_scale_set(cluster: Cluster) -> None:
    """A registered scale set, its listener and listener pod, its controller leading."""
    await cluster.scale_set(
        "arc", conditions=[{"type": "ScaleSetRegistered", "status": "True", "reason": "R"}]
    )
    await cluster.listener("arc-listener")
    await cluster.listener_pod("arc-listener")
    await cluster.controller()
    await cluster.lease(renewed=datetime.now(UTC))


async def test_doctor_exits_3_on_an_empty_namespace_1_with_findings_0_when_healthy(
    cluster: Cluster, kube_backend: KubeBackend, fake: FakeGitHub
) -> None:
    empty = await asyncio.to_thread(doctor, kube_backend, cluster.namespace, *approving(fake))
    assert empty.returncode == 3, empty.stderr
    data = json.loads(empty.stdout)
    assert data["healthy"] is False
    assert "no scale sets in namespace" in data["could_not_look"]
    await healthy_scale_set(cluster)
    healthy = await asyncio.to_thread(doctor, kube_backend, cluster.namespace, *approving(fake))
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert json.loads(healthy.stdout)["healthy"] is True
    await cluster.runner("set-runner-failed", phase="Failed", reason="TooManyPodFailures")
    result = await asyncio.to_thread(doctor, kube_backend, cluster.namespace, *approving(fake))
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["healthy"] is False
    [finding] = data["findings"]
    assert finding["check"] == "terminal-holding-slot"
    assert finding["target"] == f"EphemeralRunner {cluster.namespace}/set-runner-failed"
    assert "kubectl delete ephemeralrunner" in finding["action"]
    assert [s["check"] for s in data["skipped"]] == ["registration-missing"]


def test_an_unreachable_api_server_is_one_line_and_exit_3(tmp_path: Path) -> None:
    """Never "healthy" when it could not look: the line names the server."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"nowhere": "https://127.0.0.1:1"})
    result = run("--kubeconfig", str(kubeconfig))
    assert result.returncode == 3, result.stdout + result.stderr
    line = one_line(result.stdout)
    assert line.startswith("could not look: cannot reach the Kubernetes API server at ")
    assert "https://127.0.0.1:1" in line
    assert "healthy" not in result.stdout
    assert "Traceback" not in result.stderr


async def test_a_mistyped_namespace_is_one_line_and_exit_3(
    cluster: Cluster, kube_backend: KubeBackend
) -> None:
    await cluster.runner("set-runner-failed", phase="Failed")  # something the typo hides
    mistyped = cluster.namespace + "x"
    result = await asyncio.to_thread(
        run, "--kubeconfig", str(kube_backend.kubeconfig_path), "--namespace", mistyped
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert one_line(result.stdout) == (
        f"could not look: namespace {mistyped!r} does not exist (kubectl get namespaces)"
    )


async def test_context_picks_the_cluster(
    cluster: Cluster, kube_backend: KubeBackend, tmp_path: Path
) -> None:
    """The current context points nowhere; ``--context`` names the backend's."""
    admin = yaml.safe_load(kube_backend.kubeconfig_path.read_text())
    config = {
        **admin,
        "clusters": [
            *admin["clusters"],
            {"name": "gone", "cluster": {"server": "https://127.0.0.1:1"}},
        ],
        "contexts": [
            *admin["contexts"],
            {"name": "gone", "context": {"cluster": "gone", "user": admin["users"][0]["name"]}},
        ],
        "current-context": "gone",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    await cluster.runner("set-runner-failed", phase="Failed")
    base = ("--kubeconfig", str(path), "--namespace", cluster.namespace, "--output", "json")
    current = await asyncio.to_thread(run, *base)
    assert current.returncode == 3, current.stdout
    chosen = await asyncio.to_thread(run, *base, "--context", admin["current-context"])
    assert chosen.returncode == 1, chosen.stdout + chosen.stderr
    assert "terminal-holding-slot" in {f["check"] for f in json.loads(chosen.stdout)["findings"]}


def write_kubeconfig(path: Path, servers: dict[str, str]) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": name, "cluster": {"server": server}}
                    for name, server in servers.items()
                ],
                "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
                "contexts": [
                    {"name": name, "context": {"cluster": name, "user": "u"}} for name in servers
                ],
                "current-context": next(iter(servers)),
            }
        )
    )
    return path


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--kubeconfig", "{tmp}/missing"), "not found"),
        (("--context", "nope"), "Context 'nope' not found"),
        (
            ("--github-app-id", "1", "--github-app-installation-id", "2"),
            "also needs --github-app-private-key-file",
        ),
        (
            (
                "--github-app-id",
                "1",
                "--github-app-installation-id",
                "2",
                "--github-app-private-key-file",
                "{tmp}/missing.pem",
            ),
            "cannot read it",
        ),
        (
            (
                "--github-app-id",
                "1",
                "--github-app-installation-id",
                "2",
                "--github-app-private-key-file",
                "{tmp}/kubeconfig",
            ),
            "not a PEM RSA private key",
        ),
        (("--github-host", "https://ghes.example.com/"), "not a URL"),
        (("--github-ca-file", "{tmp}/kubeconfig"), "not a PEM certificate"),
    ],
    ids=["kubeconfig", "context", "app-incomplete", "key-unreadable", "key-not-pem", "host", "ca"],
)
def test_a_bad_option_is_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"nowhere": "https://127.0.0.1:1"})
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    if "--kubeconfig" not in argv:
        argv = ["--kubeconfig", str(kubeconfig), *argv]
    result = run(*argv)
    assert result.returncode == 2, result.stdout + result.stderr
    line = one_line(result.stderr)
    assert line.startswith("scaleset doctor: ")
    assert says in line
    assert result.stdout == ""


class Attacker:
    """A loopback TCP server that records every byte anyone sends it (TLS or not) and answers
    404: what a tenant's ``githubConfigUrl`` would point the doctor at."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read(65536)
        self.received.append(data)
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    async def __aenter__(self) -> Attacker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


@pytest.fixture
async def attacker() -> AsyncIterator[Attacker]:
    async with Attacker() as server:
        yield server


async def test_a_runner_naming_another_host_gets_no_credential_and_is_a_finding(
    cluster: Cluster, kube_backend: KubeBackend, attacker: Attacker
) -> None:
    """A tenant writes ``http://<attacker>/org`` into a runner spec, another runner names the
    attacker over https; the on-call engineer runs the doctor with a token. The attacker sees
    no byte; both runners are findings."""
    await cluster.runner(
        "set-runner-tenant", url=f"http://127.0.0.1:{attacker.port}/acme", phase="Pending"
    )
    await cluster.runner_pod("set-runner-tenant")
    await cluster.runner(
        "set-runner-elsewhere", url=f"https://localhost:{attacker.port}/x/y", phase="Pending"
    )
    await cluster.runner_pod("set-runner-elsewhere")
    result = await asyncio.to_thread(
        doctor, kube_backend, cluster.namespace, environ={"GITHUB_TOKEN": PAT}
    )
    assert attacker.received == []
    assert result.returncode == 1, result.stdout + result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    refused = {f["target"]: f for f in data["findings"] if f["check"] == "github-host-not-allowed"}
    ns = cluster.namespace
    assert set(refused) == {
        f"EphemeralRunner {ns}/set-runner-tenant",
        f"EphemeralRunner {ns}/set-runner-elsewhere",
    }
    assert "not https" in refused[f"EphemeralRunner {ns}/set-runner-tenant"]["detail"]
    assert "not a GitHub host" in refused[f"EphemeralRunner {ns}/set-runner-elsewhere"]["detail"]
    assert PAT not in result.stdout + result.stderr


async def test_the_approved_host_gets_the_token_over_tls_and_only_there(
    cluster: Cluster,
    kube_backend: KubeBackend,
    attacker: Attacker,
    fake: FakeGitHub,
    github_ca: trustme.CA,
    tmp_path: Path,
) -> None:
    """The fake GitHub, approved with --github-host and served over TLS, gets the token and
    answers (a registration it does not list is found). The attacker's host:port is approved
    too, but a runner names it over http: it still sees no byte."""
    await cluster.runner("set-runner-gone", phase="Pending", runnerId=4242)
    await cluster.runner_pod("set-runner-gone")
    await cluster.runner(
        "set-runner-tenant", url=f"http://127.0.0.1:{attacker.port}/acme", phase="Pending"
    )
    await cluster.runner_pod("set-runner-tenant")
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(github_ca.cert_pem.bytes())
    result = await asyncio.to_thread(
        doctor,
        kube_backend,
        cluster.namespace,
        *approving(fake),
        "--github-host",
        f"127.0.0.1:{attacker.port}",
        "--github-ca-file",
        str(ca_file),
        environ={"GITHUB_TOKEN": PAT},
    )
    assert attacker.received == []
    assert result.returncode == 1, result.stdout + result.stderr
    found = {(f["check"], f["target"]) for f in json.loads(result.stdout)["findings"]}
    ns = cluster.namespace
    assert found == {
        ("registration-missing", f"EphemeralRunner {ns}/set-runner-gone"),
        ("github-host-not-allowed", f"EphemeralRunner {ns}/set-runner-tenant"),
    }
    assert [r.status for r in fake.control.requests_to("/actions/runners", "GET")] == [200]


async def test_an_approved_host_without_tls_gets_nothing(
    cluster: Cluster, kube_backend: KubeBackend
) -> None:
    """GitHub over plain http — even named with --github-host — is never sent the token."""
    async with FakeGitHub() as plain:
        plain.add_pat(PAT)
        url = plain.config_url("acme")
        await cluster.runner("set-runner-plain", url=url, phase="Pending", runnerId=7)
        await cluster.runner_pod("set-runner-plain")
        host = plain.base_url.removeprefix("http://")
        result = await asyncio.to_thread(
            doctor,
            kube_backend,
            cluster.namespace,
            "--github-host",
            host,
            environ={"GITHUB_TOKEN": PAT},
        )
        assert plain.control.requests == []
    data = json.loads(result.stdout)
    assert [f["check"] for f in data["findings"]] == ["github-host-not-allowed"]


async def test_a_github_app_checks_the_registrations(
    cluster: Cluster,
    kube_backend: KubeBackend,
    fake: FakeGitHub,
    github_ca: trustme.CA,
    tmp_path: Path,
) -> None:
    """Most fleets use a GitHub App: app id, installation id and key file instead of a PAT."""
    app = fake.add_github_app(31337, 4242)
    key_file = tmp_path / "app.pem"
    key_file.write_text(app.private_key_pem)
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(github_ca.cert_pem.bytes())
    await cluster.runner("set-runner-gone", phase="Pending", runnerId=4242)
    await cluster.runner_pod("set-runner-gone")
    result = await asyncio.to_thread(
        doctor,
        kube_backend,
        cluster.namespace,
        *approving(fake),
        "--github-ca-file",
        str(ca_file),
        "--github-app-id",
        "31337",
        "--github-app-installation-id",
        "4242",
        "--github-app-private-key-file",
        str(key_file),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["skipped"] == []
    assert [(f["check"], f["target"]) for f in data["findings"]] == [
        ("registration-missing", f"EphemeralRunner {cluster.namespace}/set-runner-gone")
    ]
    assert fake.control.requests_to("/app/installations/4242/access_tokens", "POST")
    assert app.private_key_pem not in result.stdout + result.stderr


async def test_arc_reporting_healthy_while_github_refuses_the_runner_version(
    cluster: Cluster, kube_backend: KubeBackend, fake: FakeGitHub
) -> None:
    """ARC #4601: the scale set registered and Running, its listener up, its controller
    leading; the runner containers exit 7 one after the other. The doctor says why."""
    await healthy_scale_set(cluster)
    for name in ("arc-runner-a", "arc-runner-b"):
        await cluster.refused_runner(name)
    result = await asyncio.to_thread(doctor, kube_backend, cluster.namespace, *approving(fake))
    assert result.returncode == 1, result.stdout + result.stderr
    found = {(f["check"], f["target"]) for f in json.loads(result.stdout)["findings"]}
    assert found == {
        ("runner-version-deprecated", f"EphemeralRunner {cluster.namespace}/arc-runner-a"),
        ("runner-version-deprecated", f"EphemeralRunner {cluster.namespace}/arc-runner-b"),
    }


async def test_a_scale_set_without_a_controller_or_with_a_bad_condition(
    cluster: Cluster, kube_backend: KubeBackend, fake: FakeGitHub
) -> None:
    conflict = {
        "type": "ControllerConflict",
        "status": "True",
        "reason": "ArcControllerRunning",
        "message": "ARC's controller pod arc-systems/arc-gha-rs-controller-0 runs",
    }
    await cluster.scale_set("arc", conditions=[conflict])
    result = await asyncio.to_thread(doctor, kube_backend, cluster.namespace, *approving(fake))
    assert result.returncode == 1, result.stdout + result.stderr
    found = {f["check"]: f for f in json.loads(result.stdout)["findings"]}
    assert set(found) == {"controller-missing", "scale-set-condition"}
    assert found["controller-missing"]["target"] == f"Namespace {cluster.namespace}"
    assert (
        "ControllerConflict=True (ArcControllerRunning)" in found["scale-set-condition"]["detail"]
    )
