"""``scaleset controller`` runs the AutoscalingListener controller: registered by static import,
one worker (ARC's), listener pods watched by their label in the controller namespace only, and
the controller's flags passed on to every listener's config and pod."""

from __future__ import annotations

import httpx2

from scaleset.controllers.autoscalinglistener.setup import settings_from_context
from scaleset.controllers.manager_process import ControllerOptions, build_manager
from scaleset.controllers.registry import registered_names
from scaleset.controllers.setup import ProcessContext
from scaleset.kube.client import KubeClient
from scaleset.kube.resources import AUTOSCALING_LISTENER, AUTOSCALING_RUNNER_SET, POD

OPTIONS = ControllerOptions(
    controller_namespace="arc-systems",
    listener_image="scaleset:test",
    watch_single_namespace="arc-runners",
    metrics_addr="0",
    log_level="info",
    log_format="json",
    listener_metrics_addr=":9090",
    listener_metrics_endpoint="/m",
    exclude_label_propagation_prefixes=("team/",),
)


async def test_the_controller_process_registers_the_listener_controller() -> None:
    assert "autoscalinglistener" in registered_names()
    client = KubeClient(httpx2.AsyncClient(base_url="http://127.0.0.1:9"))  # never called
    try:
        manager = build_manager(OPTIONS, client)
        [controller] = [c for c in manager.controllers if c.name == "autoscalinglistener"]
        assert controller.kind == AUTOSCALING_LISTENER
        assert controller.workers == 1
        assert controller.informer.namespaces == ("arc-systems",)
        pods = [informer for informer in controller.sources if informer.kind == POD]
        assert [(i.label_selector, i.namespaces) for i in pods] == [
            ("auto-scaling-listener-name", ("arc-systems",))
        ]
        assert any(i.kind == AUTOSCALING_RUNNER_SET for i in controller.sources)
    finally:
        await client.close()


async def test_the_controller_flags_reach_the_listener_settings() -> None:
    client = KubeClient(httpx2.AsyncClient(base_url="http://127.0.0.1:9"))  # never called
    try:
        context = ProcessContext(OPTIONS, client)
        settings = settings_from_context(context, {"LISTENER_ENTRYPOINT": "/ghalistener"})
        assert (settings.log_level, settings.log_format) == ("info", "json")
        assert (settings.metrics_addr, settings.metrics_endpoint) == (":9090", "/m")
        assert settings.command == ("/ghalistener",)
        assert settings.exclude_label_prefixes == ("team/",)
        assert settings_from_context(context, {}).command == ("scaleset", "listener")
    finally:
        await client.close()
