"""kubectl against ``scaleset apiserver``: get, create, apply, delete, get -w and explain.

Runs the real CLI in a subprocess (HTTPS with a throwaway CA, token auth from the written
kubeconfig) and the real kubectl binary; skipped where kubectl is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.waiting import eventually_sync

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


def kubectl_result(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    result = kubectl_result(kubeconfig, *args, stdin=stdin)
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


# -- explain -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One kubectl cache for the module, so later calls read what earlier ones cached."""
    return str(tmp_path_factory.mktemp("kubectl-cache"))


@pytest.fixture(scope="module")
def scaleset_crds(kubeconfig: Path) -> None:
    from scaleset.api.crds import all_crds

    manifest = "".join(f"---\n{json.dumps(crd)}\n" for crd in all_crds())
    kubectl(kubeconfig, "apply", "-f", "-", stdin=manifest)


def explain(kubeconfig: Path, cache_dir: str, path: str) -> str:
    return kubectl(kubeconfig, "--cache-dir", cache_dir, "explain", path)


def _fields(out: str) -> list[str]:
    """Field names listed under FIELDS: (two-space indent, then the name and a tab)."""
    _, _, listing = out.partition("FIELDS:\n")
    return [line.split("\t")[0].strip() for line in listing.splitlines() if "\t" in line]


@pytest.mark.usefixtures("scaleset_crds")
def test_explain_shows_a_custom_resource_field_from_its_crd(
    kubeconfig: Path, cache_dir: str
) -> None:
    out = explain(kubeconfig, cache_dir, "ephemeralrunners.status.jobCompletion")

    assert out.splitlines()[:3] == [
        "GROUP:      actions.github.com",
        "KIND:       EphemeralRunner",
        "VERSION:    v1alpha1",
    ]
    assert "FIELD: jobCompletion <Object>" in out
    assert "JobCompleted recorded by the listener (scaleset)." in out
    assert _fields(out) == [
        "finishTime",
        "jobId",
        "patchId",
        "result",
        "runnerId",
        "runnerName",
        "workflowRunId",
    ]
    assert "GitHub's job result, e.g. succeeded, failed, canceled." in out


@pytest.mark.usefixtures("scaleset_crds")
def test_explain_custom_resource_metadata_is_object_meta(kubeconfig: Path, cache_dir: str) -> None:
    out = explain(kubeconfig, cache_dir, "autoscalingrunnersets.metadata")

    assert "FIELD: metadata <ObjectMeta>" in out
    assert {"name", "namespace", "labels", "ownerReferences", "finalizers"} <= set(_fields(out))


def test_explain_pod_spec_fields(kubeconfig: Path, cache_dir: str) -> None:
    restart = explain(kubeconfig, cache_dir, "pods.spec.restartPolicy")
    spec = explain(kubeconfig, cache_dir, "pods.spec")
    secret_ref = explain(kubeconfig, cache_dir, "pods.spec.containers.env.valueFrom.secretKeyRef")

    assert restart.splitlines()[:2] == ["KIND:       Pod", "VERSION:    v1"]
    assert "FIELD: restartPolicy <string>" in restart
    assert "Restart policy for all containers within the pod. One of Always, OnFailure," in restart
    assert {"containers", "initContainers", "restartPolicy", "volumes", "serviceAccountName"} <= (
        set(_fields(spec))
    )
    assert "containers\t<[]Container> -required-" in spec
    assert _fields(secret_ref) == ["key", "name", "optional"]


@pytest.mark.parametrize(
    ("resource", "header", "field"),
    [
        ("namespaces", "KIND:       Namespace", "spec"),
        ("secrets", "KIND:       Secret", "stringData"),
        ("configmaps", "KIND:       ConfigMap", "binaryData"),
        ("serviceaccounts", "KIND:       ServiceAccount", "automountServiceAccountToken"),
        ("events", "KIND:       Event", "involvedObject"),
        ("roles", "GROUP:      rbac.authorization.k8s.io", "rules"),
        ("rolebindings", "GROUP:      rbac.authorization.k8s.io", "roleRef"),
        ("leases", "GROUP:      coordination.k8s.io", "spec"),
        ("customresourcedefinitions", "GROUP:      apiextensions.k8s.io", "spec"),
    ],
)
def test_explain_every_builtin_kind(
    kubeconfig: Path, cache_dir: str, resource: str, header: str, field: str
) -> None:
    out = explain(kubeconfig, cache_dir, resource)

    assert out.splitlines()[0] == header
    assert {"apiVersion", "kind", "metadata", field} <= set(_fields(out))


WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.explain.scaleset.dev
spec:
  group: explain.scaleset.dev
  names: {{kind: Widget, plural: widgets}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A widget, to explain.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {{type: integer, description: How big the widget is.}}
{extra}
"""
WIDGET_COLOR = "              color: {type: string, description: What colour to paint it.}"


def _explains(kubeconfig: Path, cache_dir: str, path: str, text: str) -> bool:
    result = kubectl_result(kubeconfig, "--cache-dir", cache_dir, "explain", path)
    return result.returncode == 0 and text in result.stdout


def test_a_crd_created_after_start_becomes_explainable_and_follows_updates(
    kubeconfig: Path, cache_dir: str
) -> None:
    before = kubectl_result(kubeconfig, "--cache-dir", cache_dir, "explain", "widgets")
    assert before.returncode != 0

    kubectl(kubeconfig, "apply", "-f", "-", stdin=WIDGET_CRD.format(extra=""))
    eventually_sync(
        lambda: _explains(kubeconfig, cache_dir, "widgets.spec", "How big the widget"), within=10.0
    )
    out = explain(kubeconfig, cache_dir, "widgets.spec")
    assert _fields(out) == ["size"]
    assert "What the widget should be." in out

    kubectl(kubeconfig, "apply", "-f", "-", stdin=WIDGET_CRD.format(extra=WIDGET_COLOR))
    eventually_sync(
        lambda: _explains(kubeconfig, cache_dir, "widgets.spec", "What colour"), within=10.0
    )
    assert _fields(explain(kubeconfig, cache_dir, "widgets.spec")) == ["color", "size"]

    kubectl(kubeconfig, "delete", "crd", "widgets.explain.scaleset.dev")
    eventually_sync(
        lambda: (
            kubectl_result(kubeconfig, "--cache-dir", cache_dir, "explain", "widgets").returncode
            != 0
        ),
        within=10.0,
    )
