"""Values files written for ARC's controller chart that our chart must take as ARC's does.

Each test is one way a copied ARC values file went wrong: a partial ``metrics`` block rendered
``<nil>`` into the listener flags; quoted numbers, which ARC's templates take, were refused by
our schema; an image naming ARC's controller was silently replaced by an image nobody publishes.
The Deployment's command line goes through the real ``scaleset controller`` CLI (``start``).
"""

from __future__ import annotations

from typing import Any

import helm_python
import pytest
from tests.deploy.controller_chart.rendering import (
    TEST_IMAGE,
    manager_container,
    only,
    render_ours,
)
from tests.deploy.controller_chart.test_controller_args import start

from scaleset.controllers.autoscalinglistener.settings import Settings as ListenerSettings


def test_a_partial_metrics_block_renders_empty_flags_and_the_controller_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    container = manager_container(render_ours({"metrics": {"controllerManagerAddr": ":8080"}}))
    assert not [arg for arg in container["args"] if "<nil>" in arg or "<no value>" in arg]
    assert "--listener-metrics-addr=" in container["args"]
    options = start(container, monkeypatch)
    assert options.metrics_addr == ":8080"
    listener = ListenerSettings(
        metrics_addr=options.listener_metrics_addr,
        metrics_endpoint=options.listener_metrics_endpoint,
    )
    assert not listener.metrics_enabled  # no listenerAddr: listeners serve no metrics, as in ARC


def test_a_metrics_block_without_an_endpoint_defaults_it(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {"metrics": {"controllerManagerAddr": ":8080", "listenerAddr": ":8081"}}
    options = start(manager_container(render_ours(values)), monkeypatch)
    assert options.listener_metrics_addr == ":8081"
    assert options.listener_metrics_endpoint == "/metrics"


QUOTED: dict[str, Any] = {
    "replicaCount": "2",
    "terminationGracePeriodSeconds": "45",
    "flags": {
        "runnerMaxConcurrentReconciles": "3",
        "k8sClientRateLimiterQPS": "40",
        "k8sClientRateLimiterBurst": "80",
    },
}


def test_quoted_numbers_are_taken_as_arc_takes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = render_ours(QUOTED)
    pod = only(objects, "Deployment")["spec"]
    assert pod["replicas"] == 2
    assert pod["template"]["spec"]["terminationGracePeriodSeconds"] == 45
    options = start(manager_container(objects), monkeypatch)
    assert options.workers_for("ephemeralrunner") == 3
    assert (options.k8s_client_qps, options.k8s_client_burst) == (40.0, 80)


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"replicaCount": "two"}, "/replicaCount"),
        ({"replicaCount": "-1"}, "/replicaCount"),
        ({"flags": {"k8sClientRateLimiterQPS": "fast"}}, "/flags/k8sClientRateLimiterQPS"),
        ({"terminationGracePeriodSeconds": "soon"}, "/terminationGracePeriodSeconds"),
    ],
)
def test_strings_that_are_not_numbers_are_still_refused(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as refused:
        render_ours(values)
    assert f"at '{where}'" in str(refused.value)


def test_arcs_controller_image_is_refused_not_replaced() -> None:
    values = {"image": {"repository": "ghcr.io/actions/gha-runner-scale-set-controller"}}
    with pytest.raises(helm_python.HelmRenderError) as refused:
        render_ours(values, installable=False)
    message = str(refused.value)
    assert "ghcr.io/actions/gha-runner-scale-set-controller" in message
    assert "cannot run scaleset" in message
    assert "image.repository" in message


def test_the_chart_refuses_to_install_without_an_image() -> None:
    with pytest.raises(helm_python.HelmRenderError) as refused:
        render_ours({}, installable=False)
    message = str(refused.value)
    assert "image.repository is not set" in message
    assert "scripts/build-image" in message


def test_the_image_set_is_the_image_run() -> None:
    container = manager_container(render_ours({"image": TEST_IMAGE}, installable=False))
    assert container["image"] == f"{TEST_IMAGE['repository']}:{TEST_IMAGE['tag']}"
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["CONTROLLER_MANAGER_CONTAINER_IMAGE"] == container["image"]


def test_arc_0_15_max_concurrent_reconciles_values_set_the_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flags = {
        "autoscalingRunnerSetMaxConcurrentReconciles": 3,
        "autoscalingListenerMaxConcurrentReconciles": "4",
        "ephemeralRunnerSetMaxConcurrentReconciles": 5,
        "ephemeralRunnerMaxConcurrentReconciles": 6,
    }
    options = start(manager_container(render_ours({"flags": flags})), monkeypatch)
    assert [
        options.workers_for(name)
        for name in ("autoscalingrunnerset", "autoscalinglistener", "ephemeralrunnerset")
    ] == [3, 4, 5]
    assert options.workers_for("ephemeralrunner") == 6


def test_the_global_max_concurrent_reconciles_value_sets_arcs_controllers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = {"flags": {"defaultMaxConcurrentReconciles": 8, "runnerMaxConcurrentReconciles": None}}
    options = start(manager_container(render_ours(values)), monkeypatch)
    assert options.workers_for("autoscalinglistener") == 8
    assert options.workers_for("ephemeralrunner") == 8


def test_ignored_values_reach_the_controller_which_warns_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Argo CD and Flux never show Helm's NOTES: the chart hands the ignored keys to the
    controller, which logs each one when it starts."""
    values = {"flags": {"updateStrategy": "eventual", "logLevle": "info"}, "pprof": {"addr": ":6"}}
    options = start(manager_container(render_ours(values)), monkeypatch)
    assert {setting for setting, _ in options.ignored} == {
        "flags.updateStrategy",
        "flags.logLevle",
        "pprof.addr",
    }
    assert all(why for _, why in options.ignored)
    assert start(manager_container(render_ours({})), monkeypatch).ignored == ()
