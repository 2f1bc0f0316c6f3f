"""Decision counters are registered once per registry, so a second manager in one process (a
controller restart in the demo or a test) builds without a duplicate-metric error."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry

from scaleset.controllers import manager_process
from scaleset.controllers.decisions import DecisionMetrics, decision_counter
from scaleset.kube import KubeClient


def test_one_counter_per_registry_and_name() -> None:
    registry = CollectorRegistry()
    first = decision_counter("scaleset_test_decisions", "help", registry)
    assert decision_counter("scaleset_test_decisions", "help", registry) is first
    other = CollectorRegistry()
    assert decision_counter("scaleset_test_decisions", "help", other) is not first
    first.labels(reason="Created").inc()
    assert registry.get_sample_value("scaleset_test_decisions_total", {"reason": "Created"}) == 1


async def test_the_manager_builds_twice_in_one_process(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    client = KubeClient.from_kubeconfig(kubeconfig)
    options = manager_process.ControllerOptions(
        controller_namespace="arc-systems", listener_image="ghcr.io/scaleset/scaleset:test"
    )
    try:
        first = manager_process.build_manager(options, client)
        second = manager_process.build_manager(options, client)
        assert [c.name for c in first.controllers] == [c.name for c in second.controllers]
        assert len(second.controllers) == 5  # four reconcilers and the registration pass
    finally:
        await client.close()


class _First(DecisionMetrics):
    name = "scaleset_test_first_decisions"
    documentation = "help"


class _Second(DecisionMetrics):
    name = "scaleset_test_second_decisions"
    documentation = "help"


def test_one_default_per_decision_metrics_class() -> None:
    assert _First.default() is _First.default()
    assert isinstance(_Second.default(), _Second)
    assert _Second.default().decisions is not _First.default().decisions
    assert _First(REGISTRY).decisions is _First.default().decisions  # one counter per registry
