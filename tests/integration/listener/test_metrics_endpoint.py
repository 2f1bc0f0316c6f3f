"""The listener's metrics endpoint over HTTP, served by the runtime's probe server as the
listener process starts it: the configured path serves the registry (ARC's metrics and ours
together); any other path is a 404."""

from __future__ import annotations

import httpx2
from prometheus_client import CollectorRegistry

from scaleset.listener.metrics import ListenerMetrics, ScaleSetIdentity
from scaleset.runtime.probes import ProbeServer

IDENTITY = ScaleSetIdentity("arc-runners", "arc", enterprise="", organization="acme")


async def test_the_endpoint_serves_the_registry() -> None:
    metrics = ListenerMetrics(IDENTITY, registry=CollectorRegistry())
    metrics.arc.record_desired(2)
    server = ProbeServer("127.0.0.1", 0, registry=metrics.registry, metrics_path="/custom-metrics")
    await server.start()
    try:
        async with httpx2.AsyncClient(trust_env=False) as http:
            base = f"http://127.0.0.1:{server.bound_port}"
            answer = await http.get(base + "/custom-metrics")
            missing = await http.get(base + "/metrics")
    finally:
        await server.stop()
    assert answer.status_code == 200
    assert 'gha_desired_runners{enterprise="",name="arc-runners"' in answer.text
    assert "scaleset_listener_ers_patches_total 0.0" in answer.text  # ours, same endpoint
    assert missing.status_code == 404
