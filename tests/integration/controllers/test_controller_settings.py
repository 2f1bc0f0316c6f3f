"""``scaleset controller`` with a controller setting from the environment it cannot use exits 1
with one line naming the variable (L8: no traceback, no crash loop of unexplained restarts)."""

from __future__ import annotations

from pathlib import Path

from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import install_actions_crds
from tests.support.managers import SCALESET, Process, processes


async def test_L8_a_bad_controller_setting_exits_1_naming_the_variable(
    kube_backend: KubeBackend, namespace: str, tmp_path: Path
) -> None:
    await install_actions_crds(kube_backend)
    async with processes() as started:
        process = await Process.start(
            [
                str(SCALESET),
                "controller",
                "--kubeconfig",
                str(kube_backend.kubeconfig_path),
                "--namespaces",
                namespace,
                "--metrics-addr",
                "0",
                "--leader-election-id",
                f"settings-{namespace}",
            ],
            tmp_path / "controller.log",
            {
                "CONTROLLER_MANAGER_POD_NAMESPACE": namespace,
                "CONTROLLER_MANAGER_CONTAINER_IMAGE": "ghcr.io/scaleset/scaleset:test",
                "SCALESET_JOB_COMPLETION_GRACE": "half a minute",
            },
        )
        started.append(process)
        assert await process.wait() == 1
    output = process.output()
    assert "SCALESET_JOB_COMPLETION_GRACE" in output
    assert "Traceback" not in output
