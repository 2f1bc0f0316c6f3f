"""``scaleset doctor`` as a process against each backend's kubeconfig: JSON on stdout that a
machine can read, exit 1 when it found something and 0 on a healthy namespace; no token in
the environment, so it names the GitHub check it skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.integration.doctor.world import Cluster
from tests.plugins.kube_backends import KubeBackend


def doctor(backend: KubeBackend, namespace: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "scaleset",
            "doctor",
            "--kubeconfig",
            str(backend.kubeconfig_path),
            "--namespace",
            namespace,
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=environ,
        timeout=120,
    )


async def test_doctor_exits_1_with_json_findings_then_0_when_healthy(
    cluster: Cluster, kube_backend: KubeBackend
) -> None:
    healthy = doctor(kube_backend, cluster.namespace)
    assert healthy.returncode == 0, healthy.stderr
    assert json.loads(healthy.stdout)["healthy"] is True
    await cluster.runner("set-runner-failed", phase="Failed", reason="TooManyPodFailures")
    result = doctor(kube_backend, cluster.namespace)
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["healthy"] is False
    [finding] = data["findings"]
    assert finding["check"] == "terminal-holding-slot"
    assert finding["target"] == f"EphemeralRunner {cluster.namespace}/set-runner-failed"
    assert "kubectl delete ephemeralrunner" in finding["action"]
    assert [s["check"] for s in data["skipped"]] == ["registration-missing"]
