"""``scaleset apiserver`` on a shared host: a random token per start, written only into the
kubeconfig; the control routes (``/_scaleset/*``) want it too; a non-loopback ``--host`` is
refused unless asked for explicitly.

Runs the real CLI in a subprocess, talks to it over HTTPS with the kubeconfig's CA.
"""

from __future__ import annotations

import base64
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import yaml

from scaleset.embedded.apiserver import DEFAULT_TOKEN

START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Started:
    output: list[str]
    kubeconfig: Path
    url: str
    token: str
    tls: ssl.SSLContext


@contextmanager
def apiserver(*args: str) -> Iterator[Started]:
    process = subprocess.Popen(
        [sys.executable, "-m", "scaleset", "apiserver", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        lines: list[str] = []
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("kubeconfig written to"):
                break
        else:
            raise AssertionError(f"scaleset apiserver did not start: {lines}")
        assert lines, "no output"
        assert lines[-1].startswith("kubeconfig written to"), lines
        kubeconfig = Path(lines[-1].removeprefix("kubeconfig written to").strip())
        document = yaml.safe_load(kubeconfig.read_text())
        cluster = document["clusters"][0]["cluster"]
        tls = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
        yield Started(
            lines, kubeconfig, cluster["server"], document["users"][0]["user"]["token"], tls
        )
    finally:
        process.terminate()
        assert process.wait(timeout=START_TIMEOUT_S) == 0


def status_of(started: Started, path: str, token: str | None) -> int:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with httpx2.Client(base_url=started.url, verify=started.tls, trust_env=False) as http:
        return http.get(path, headers=headers).status_code


def test_each_start_has_its_own_token_known_only_to_its_kubeconfig(tmp_path: Path) -> None:
    with apiserver("--kubeconfig", str(tmp_path / "one")) as first:
        first_token = first.token
        assert first.token != DEFAULT_TOKEN
        assert len(first.token) >= 32
        assert first.token not in "".join(first.output)
        assert oct(first.kubeconfig.stat().st_mode & 0o777) == oct(0o600)
        assert status_of(first, "/api/v1/namespaces", first.token) == 200
        assert status_of(first, "/api/v1/namespaces", DEFAULT_TOKEN) == 401
        assert status_of(first, "/api/v1/namespaces", None) == 401
    with apiserver("--kubeconfig", str(tmp_path / "two")) as second:
        assert second.token != first_token


def test_without_a_kubeconfig_option_it_writes_one_to_a_private_directory() -> None:
    with apiserver() as started:
        assert started.kubeconfig.is_file()
        assert oct(started.kubeconfig.parent.stat().st_mode & 0o777) == oct(0o700)
        assert status_of(started, "/version", started.token) == 200


def test_the_control_routes_need_the_token(tmp_path: Path) -> None:
    with apiserver("--kubeconfig", str(tmp_path / "kubeconfig")) as started:
        for path in ("/_scaleset/access", "/_scaleset/faults/counts"):
            assert status_of(started, path, None) == 401, path
            assert status_of(started, path, DEFAULT_TOKEN) == 401, path
            assert status_of(started, path, started.token) == 200, path


def test_a_non_loopback_host_is_refused_unless_asked_for() -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "scaleset", "apiserver", "--host", "10.1.2.3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "not a loopback address" in refused.stderr
    assert "--allow-non-loopback" in refused.stderr
