"""The Deployment our chart renders starts a controller the way the values say: its command and
args go through the real ``scaleset controller`` command line (typer) into ``ControllerOptions``,
which ``validate`` accepts, and its environment through the controllers' own
``ENVIRONMENT.read``. Only ``manager_process.run`` (serving) is replaced, to capture the
options instead of connecting to a cluster."""

from __future__ import annotations

from typing import Any

import pytest
from tests.deploy.controller_chart.cases import NAMESPACE, case, case_names
from tests.deploy.controller_chart.compare import RECONCILE_VALUES
from tests.deploy.controller_chart.rendering import (
    default_values,
    manager_container,
    merged_values,
    render_ours,
)
from typer.testing import CliRunner

from scaleset.cli import app
from scaleset.controllers import manager_process
from scaleset.controllers.ephemeralrunner import setup as ephemeralrunner_setup
from scaleset.controllers.ephemeralrunner.settings import Settings as RunnerSettings
from scaleset.controllers.ephemeralrunnerset import setup as runnerset
from scaleset.controllers.registrationpass import setup as registrationpass_setup
from scaleset.controllers.registrationpass.settings import Settings as PassSettings
from scaleset.runtime.informer import ALL_NAMESPACES


def start(
    container: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> manager_process.ControllerOptions:
    """Run the container's command line through the real CLI; the options it would serve."""
    command = container.get("command", [])
    assert command[:2] == ["scaleset", "controller"], "the image's entrypoint is `scaleset`"
    captured: list[manager_process.ControllerOptions] = []

    def capture(options: manager_process.ControllerOptions) -> int:
        manager_process.validate(options)
        captured.append(options)
        return 0

    monkeypatch.setattr(manager_process, "run", capture)
    env = {item["name"]: item.get("value", "from-a-ref") for item in container["env"]}
    env["CONTROLLER_MANAGER_POD_NAMESPACE"] = NAMESPACE  # the fieldRef's value
    result = CliRunner().invoke(app, [*command[1:], *container["args"]], env=env)
    assert result.exit_code == 0, result.output
    return captured[0]


def environment(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container["env"] if "value" in item}


@pytest.mark.parametrize("name", case_names())
def test_args_parse_into_the_options_the_values_say(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = case(name).values
    merged = merged_values(values)
    objects = render_ours(values)
    container = manager_container(objects)
    options = start(container, monkeypatch)
    flags = merged["flags"]
    deployment = next(o for o in objects if o["kind"] == "Deployment")

    assert options.listener_image == container["image"]
    assert options.controller_namespace == NAMESPACE
    assert options.leader_election_id == deployment["metadata"]["name"]
    assert options.log_level == flags["logLevel"]
    assert options.log_format == flags["logFormat"]
    assert options.runner_max_concurrent_reconciles == int(flags["runnerMaxConcurrentReconciles"])
    for name, value in RECONCILE_VALUES.items():
        if flags.get(value) is not None:  # ARC 0.15's per-controller counts
            controller = name.removeprefix("--").removesuffix("-max-concurrent-reconciles")
            assert options.workers_for(controller.replace("-", "")) == int(flags[value])
    assert options.watch_single_namespace == flags.get("watchSingleNamespace", "")
    metrics = merged.get("metrics") or {}
    unset = "" if metrics else "0"  # a key left out of a metrics block is empty, as in ARC
    assert options.metrics_addr == metrics.get("controllerManagerAddr", unset)
    assert options.listener_metrics_addr == metrics.get("listenerAddr", unset)
    assert options.listener_metrics_endpoint == (metrics.get("listenerEndpoint") or "/metrics")
    assert options.health_probe_bind_address == (flags.get("healthProbeBindAddress") or "0")
    assert options.image_pull_secrets == tuple(s["name"] for s in merged["imagePullSecrets"])
    assert options.exclude_label_propagation_prefixes == tuple(
        flags.get("excludeLabelPropagationPrefixes") or ()
    )
    assert options.k8s_client_qps == float(flags.get("k8sClientRateLimiterQPS", 20))
    assert options.k8s_client_burst == int(flags.get("k8sClientRateLimiterBurst", 30))
    assert options.workqueue_rate_limiter == (flags.get("rateLimiter") or {}).get("name", "")
    ours = merged["scaleset"]
    assert options.lease_duration == ours["leaderElection"]["leaseDuration"]
    assert options.renew_deadline == ours["leaderElection"]["renewDeadline"]
    assert options.retry_period == ours["leaderElection"]["retryPeriod"]
    assert options.graceful_shutdown == ours["gracefulShutdownTimeout"]
    assert options.sync_period == manager_process.parse_duration(ours["syncPeriod"])
    assert options.allow_http_github_url is ours["allowHttpGitHubUrl"]
    assert options.allow_full_listener_template is ours["allowFullListenerTemplate"]
    assert (
        options.graceful_shutdown
        < deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    )


def test_scaleset_values_reach_the_controllers(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "namespaces": ["team-a", "team-b"],
        "flags": {"watchSingleNamespace": "team-c"},
        "scaleset": {
            "jobCompletionGrace": 45,
            "runnerPodPendingTimeout": 600,
            "registrationPass": {"interval": 120, "maxDeletions": 3},
            "runnerOfflineBound": 900,
            "maxRunnerAge": 86400,
            "runnerSet": {"maxConcurrentCreates": 16, "breakerThreshold": 8},
            "workers": {"ephemeralrunner": 6, "ephemeralrunnerset": 3, "registrationpass": 2},
            "syncPeriod": "5m",
            "leaderElection": {"leaseDuration": 30, "renewDeadline": 20, "retryPeriod": 4},
            "gracefulShutdownTimeout": 25,
            "allowHttpGitHubUrl": True,
            "allowFullListenerTemplate": True,
        },
        "terminationGracePeriodSeconds": 40,
    }
    container = manager_container(render_ours(values))
    options = start(container, monkeypatch)
    assert options.allow_http_github_url
    assert options.allow_full_listener_template
    assert set(options.namespaces()) == {"team-a", "team-b", "team-c", NAMESPACE}
    assert options.workers_for("ephemeralrunner") == 6
    assert options.workers_for("ephemeralrunnerset") == 3
    assert options.workers_for("registrationpass") == 2
    assert options.workers_for("autoscalingrunnerset") == 1
    assert (options.sync_period, options.lease_duration, options.graceful_shutdown) == (
        300.0,
        30.0,
        25.0,
    )
    env = environment(container)
    runner = ephemeralrunner_setup.ENVIRONMENT.read(env)
    assert (runner.grace_period, runner.pod_pending_timeout) == (45.0, 600.0)
    registration_pass = registrationpass_setup.ENVIRONMENT.read(env)
    assert (registration_pass.interval, registration_pass.max_deletions) == (120.0, 3)
    assert (registration_pass.offline_bound, registration_pass.max_runner_age) == (900.0, 86400.0)
    runner_set = runnerset.ENVIRONMENT.read(env)
    assert runner_set.apply.max_concurrent_creates == 16
    assert runner_set.plan.breaker_threshold == 8


def test_chart_defaults_are_the_controllers_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our values.yaml states each default; it must be the one the code would use anyway."""
    container = manager_container(render_ours({}))
    options = start(container, monkeypatch)
    code = manager_process.ControllerOptions(controller_namespace="x", listener_image="y")
    assert options.namespaces() == ALL_NAMESPACES
    for field in (
        "lease_duration",
        "renew_deadline",
        "retry_period",
        "sync_period",
        "allow_http_github_url",
        "allow_full_listener_template",
    ):
        assert getattr(options, field) == getattr(code, field), field
    assert options.health_probe_bind_address == manager_process.DEFAULT_PROBE_ADDRESS
    assert options.workers_for("ephemeralrunner") == ephemeralrunner_setup.DEFAULT_WORKERS
    env = environment(container)
    runner, runner_defaults = ephemeralrunner_setup.ENVIRONMENT.read(env), RunnerSettings()
    assert runner.grace_period == runner_defaults.grace_period
    assert runner.pod_pending_timeout == runner_defaults.pod_pending_timeout
    assert registrationpass_setup.ENVIRONMENT.read(env) == PassSettings()
    assert runnerset.ENVIRONMENT.read(env) == runnerset.ENVIRONMENT.read({})
    assert default_values()["scaleset"]["workers"] == {}
