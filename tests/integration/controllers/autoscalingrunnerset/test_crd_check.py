"""L8: at start the controller reads the installed CRDs and refuses to run on ARC's older ones
(Helm never upgrades CRDs, and the API server would silently drop the fields scaleset writes),
in one line naming the missing fields and the command that installs the current CRDs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import SCALESET, Process, processes

from scaleset.api import BY_KIND
from scaleset.api.crds import crd
from scaleset.controllers.crd_check import FIX_COMMAND, installed_crd_problem
from scaleset.embedded.apiserver import serve_in_thread
from scaleset.kube import KubeClient
from scaleset.kube.resources import CUSTOM_RESOURCE_DEFINITION

ARC_STATUS_FIELDS = {
    "EphemeralRunner": {
        "ready", "phase", "reason", "message", "runnerId", "runnerName", "failures",
        "jobRequestId", "jobId", "jobRepositoryName", "jobWorkflowRef", "workflowRunId",
        "jobDisplayName",
    },
    "EphemeralRunnerSet": {
        "currentReplicas", "pendingEphemeralRunners", "runningEphemeralRunners",
        "failedEphemeralRunners", "phase",
    },
    "AutoscalingRunnerSet": {
        "currentRunners", "phase", "pendingEphemeralRunners", "runningEphemeralRunners",
        "failedEphemeralRunners",
    },
}  # fmt: skip
"""The status fields ARC's CRDs declare."""


def arc_era_crd(kind: str) -> dict[str, Any]:
    """Our CRD for ``kind`` cut down to ARC's status fields."""
    found = copy.deepcopy(crd(BY_KIND[kind]))
    schema = found["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    status = schema["properties"]["status"]["properties"]
    for name in list(status):
        if name not in ARC_STATUS_FIELDS[kind]:
            del status[name]
    return found


@pytest.mark.usefixtures("actions_crds")
async def test_L8_our_installed_crds_pass_the_check(kube_backend: KubeBackend) -> None:
    async with make_client(kube_backend) as client:
        assert await installed_crd_problem(client) is None


@pytest.mark.embedded_only(
    reason="installs ARC's CRDs on a private server: on the shared real server they would "
    "replace ours under every other suite"
)
async def test_L8_the_controller_refuses_to_start_on_arcs_crds_and_says_how_to_fix_it(
    kube_backend: KubeBackend, tmp_path: Path
) -> None:
    with serve_in_thread() as private:
        async with KubeClient.from_kubeconfig(private.kubeconfig_path) as client:
            for kind in ARC_STATUS_FIELDS:  # AutoscalingListener not installed at all
                await client.create(CUSTOM_RESOURCE_DEFINITION, arc_era_crd(kind))
            problem = await installed_crd_problem(client)
        assert problem is not None
        assert "autoscalinglisteners.actions.github.com is not installed" in problem
        assert "ephemeralrunners.actions.github.com lacks" in problem
        for field in ("status.jobCompletion", "status.runnerStartedAt", "status.conditions"):
            assert field in problem
        assert "status.idleEphemeralRunners" in problem
        assert problem.endswith(FIX_COMMAND)

        async with processes() as started:
            process = await Process.start(
                [
                    str(SCALESET),
                    "controller",
                    "--kubeconfig",
                    str(private.kubeconfig_path),
                    "--metrics-addr",
                    "0",
                    "--log-format",
                    "json",
                ],
                tmp_path / "controller.log",
                {
                    "CONTROLLER_MANAGER_POD_NAMESPACE": "arc-systems",
                    "CONTROLLER_MANAGER_CONTAINER_IMAGE": "ghcr.io/scaleset/scaleset:test",
                },
            )
            started.append(process)
            assert await process.wait() == 1
    lines = [line for line in process.output().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "cannot start" in lines[0]
    assert FIX_COMMAND in lines[0]
    assert "status.jobCompletion" in lines[0]
    assert "Traceback" not in process.output()
