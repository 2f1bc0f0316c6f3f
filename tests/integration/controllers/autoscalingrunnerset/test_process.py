"""The ``scaleset controller`` process runs the AutoscalingRunnerSet controller (registered in
``controllers.registry``, set up from ARC's flags and environment): a scale set created by the
chart is registered on the fake GitHub and gets its runner set and listener."""

from __future__ import annotations

from pathlib import Path

from tests.integration.controllers.autoscalingrunnerset.world import LISTENER_IMAGE, World
from tests.support.managers import SCALESET, Process, processes

from scaleset.api import keys


async def test_the_controller_process_runs_the_autoscaling_runner_set_controller(
    world: World, tmp_path: Path
) -> None:
    await world.create_scale_set("arc")
    async with processes() as started:
        process = await Process.start(
            [
                str(SCALESET),
                "controller",
                "--kubeconfig",
                str(world.backend.kubeconfig_path),
                "--namespaces",
                world.namespace,
                "--metrics-addr",
                "0",
                "--log-level",
                "info",
                "--log-format",
                "json",
                "--leader-election-id",
                f"ars-{world.namespace}",
                "--auto-scaler-image-pull-secrets",
                "regcred",
                "--allow-http-github-url",  # the fake GitHub serves http
            ],
            tmp_path / "controller.log",
            {
                "CONTROLLER_MANAGER_POD_NAMESPACE": world.namespace,
                "CONTROLLER_MANAGER_CONTAINER_IMAGE": LISTENER_IMAGE,
            },
        )
        started.append(process)
        ars = await world.ready("arc")
        process.terminate()
        assert await process.wait() == 0
    assert keys.RUNNER_SCALE_SET_ID_ANNOTATION in ars.metadata.annotations
    listener = await world.listener("arc")
    assert listener is not None
    assert listener.spec["image"] == LISTENER_IMAGE
    assert listener.spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert "autoscalingrunnerset" in process.output()
