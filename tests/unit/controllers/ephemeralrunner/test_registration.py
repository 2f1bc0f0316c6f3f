"""``scaleset controller`` runs the EphemeralRunner controller: registered by static import,
with ARC's worker count and an owned-pod cache of runner pods only."""

from __future__ import annotations

import httpx2

from scaleset.controllers.ephemeralrunner.setup import URGENT_WORKERS
from scaleset.controllers.manager_process import ControllerOptions, build_manager
from scaleset.controllers.registry import registered_names
from scaleset.kube.client import KubeClient
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD


async def test_the_controller_process_registers_the_ephemeral_runner_controller() -> None:
    assert "ephemeralrunner" in registered_names()
    client = KubeClient(httpx2.AsyncClient(base_url="http://127.0.0.1:9"))  # never called
    try:
        options = ControllerOptions(
            controller_namespace="arc-systems",
            listener_image="scaleset:test",
            runner_max_concurrent_reconciles=3,
            metrics_addr="0",
        )
        manager = build_manager(options, client)
        [controller] = [c for c in manager.controllers if c.name == "ephemeralrunner"]
        assert controller.kind == EPHEMERAL_RUNNER
        # --runner-max-concurrent-reconciles, plus the worker reserved for urgent runners
        assert controller.workers == 3 + URGENT_WORKERS
        pods = [informer for informer in controller.sources if informer.kind == POD]
        assert [informer.label_selector for informer in pods] == ["actions-ephemeral-runner=True"]
    finally:
        await client.close()
