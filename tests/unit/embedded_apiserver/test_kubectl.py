"""kubectl against ``scaleset apiserver``: get, create, apply, delete and get -w.

Runs the real CLI in a subprocess (HTTPS with a throwaway CA, token auth from the written
kubeconfig) and the real kubectl binary; skipped where kubectl is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
START_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("kubectl") / "kubeconfig"
    server = subprocess.Popen(
        [sys.executable, "-m", "scaleset", "apiserver", "--kubeconfig", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        lines = []
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            lines.append(line)
            if line.startswith("kubeconfig written to"):
                break
        else:
            raise AssertionError(f"scaleset apiserver did not start: {lines}")
        assert lines[0].startswith("embedded Kubernetes API server listening on https://127.0.0.1:")
        yield path
    finally:
        server.terminate()
        assert server.wait(timeout=START_TIMEOUT_S) == 0  # SIGTERM is a clean shutdown


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


MANIFEST = """
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  color: {color}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  containers:
  - name: web
    image: nginx:1.25
"""


def test_get_lists_the_initial_namespaces_as_a_table(kubeconfig: Path) -> None:
    out = kubectl(kubeconfig, "get", "namespaces")

    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "STATUS", "AGE"]
    assert {row.split()[0] for row in rows} >= {"default", "kube-system", "kube-public"}


def test_create_subcommands_send_protobuf_and_work(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "create", "namespace", "team")
    kubectl(kubeconfig, "create", "configmap", "cfg", "-n", "team", "--from-literal=a=b")
    kubectl(kubeconfig, "create", "secret", "generic", "pw", "-n", "team", "--from-literal=k=v")

    data = kubectl(kubeconfig, "get", "configmap", "cfg", "-n", "team", "-o", "jsonpath={.data}")
    secret = kubectl(kubeconfig, "get", "secret", "pw", "-n", "team", "-o", "jsonpath={.data.k}")

    assert data == '{"a":"b"}'
    assert secret == "dg=="


def test_apply_creates_then_patches(kubeconfig: Path) -> None:
    first = kubectl(kubeconfig, "apply", "-f", "-", stdin=MANIFEST.format(color="red"))
    second = kubectl(kubeconfig, "apply", "-f", "-", stdin=MANIFEST.format(color="blue"))

    assert "configmap/settings created" in first
    assert "configmap/settings configured" in second
    assert "pod/web unchanged" in second
    color = kubectl(
        kubeconfig, "get", "configmap", "settings", "-n", "shop", "-o", "jsonpath={.data.color}"
    )
    assert color == "blue"
    pods = kubectl(kubeconfig, "get", "pods", "-n", "shop")
    assert pods.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert pods.splitlines()[1].split()[:3] == ["web", "0/1", "Pending"]


def test_watch_sees_changes_and_delete_removes(kubeconfig: Path) -> None:
    assert KUBECTL is not None
    kubectl(kubeconfig, "create", "namespace", "watched")
    kubectl(kubeconfig, "run", "p1", "-n", "watched", "--image=busybox:1.36")
    watcher = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(kubeconfig),
            "get",
            "pods",
            "-n",
            "watched",
            "-w",
            "--output-watch-events",
            "--request-timeout=30s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        first = watcher.stdout.readline()
        assert first.split()[:2] == ["EVENT", "NAME"]
        assert watcher.stdout.readline().split()[:2] == ["ADDED", "p1"]
        kubectl(kubeconfig, "label", "pod", "p1", "-n", "watched", "seen=yes")
        assert watcher.stdout.readline().split()[:2] == ["MODIFIED", "p1"]
        kubectl(kubeconfig, "delete", "pod", "p1", "-n", "watched", "--wait=false")
        events = [watcher.stdout.readline().split()[0] for _ in range(2)]
        assert events == ["MODIFIED", "DELETED"]
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
    gone = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "get", "pod", "p1", "-n", "watched"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr
