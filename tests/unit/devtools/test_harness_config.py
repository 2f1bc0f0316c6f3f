"""What the harness starts: the kube-apiserver flags and the kubeconfig it writes."""

from __future__ import annotations

import base64
from pathlib import Path

from scaleset.devtools.pki import Pki
from scaleset.devtools.real_apiserver import (
    RunningHarness,
    apiserver_command,
    env_line,
    etcd_command,
    kubeconfig_document,
)


def test_apiserver_serves_loopback_only_with_rbac_and_service_account_admission() -> None:
    command = apiserver_command(
        Path("/bin/kube-apiserver"), Pki(Path("/s/pki")), "http://127.0.0.1:1", 6443, Path("/c")
    )

    assert "--bind-address=127.0.0.1" in command
    assert "--insecure-port=0" in command
    assert "--secure-port=6443" in command
    assert "--authorization-mode=RBAC" in command
    assert "--endpoint-reconciler-type=none" in command
    # ServiceAccount admission stays on (default plugins), with the bound token volume so that
    # no token controller is needed
    assert not any(flag.startswith("--disable-admission-plugins") for flag in command)
    assert "--feature-gates=BoundServiceAccountTokenVolume=true" in command
    assert "--token-auth-file=/s/pki/tokens.csv" in command


def test_etcd_listens_on_loopback_only() -> None:
    command = etcd_command(Path("/dev/shm/x"), 2379, 2380)

    urls = [arg for arg in command if "urls=" in arg]
    assert urls
    assert all("127.0.0.1" in arg or arg.endswith("=") for arg in urls)


def test_kubeconfig_embeds_ca_and_token() -> None:
    document = kubeconfig_document("https://127.0.0.1:6443", b"PEM", "tok")

    cluster = document["clusters"][0]["cluster"]  # type: ignore[index]
    assert cluster["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"PEM"
    assert document["users"][0]["user"] == {"token": "tok"}  # type: ignore[index]


def test_env_line_quotes_the_path() -> None:
    harness = RunningHarness("https://x", Path("/tmp/a b/kubeconfig"), Path("/tmp/a b"))

    assert env_line(harness) == "export SCALESET_TEST_KUBECONFIG='/tmp/a b/kubeconfig'"
