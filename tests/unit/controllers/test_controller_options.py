"""`scaleset controller` options: ARC's flags map onto validated settings, bad ones are one line."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest

from scaleset import cli
from scaleset.controllers.manager_process import (
    DEFAULT_PROBE_ADDRESS,
    ControllerOptions,
    OptionsError,
    build_manager,
    parse_duration,
    parse_workers,
    split_list,
    validate,
)
from scaleset.kube.client import KubeClient
from scaleset.runtime.informer import ALL_NAMESPACES
from scaleset.runtime.probes import parse_bind_address


def options(**overrides: object) -> ControllerOptions:
    base: dict[str, object] = {"controller_namespace": "arc-systems", "listener_image": "img"}
    base.update(overrides)
    return ControllerOptions(**base)  # type: ignore[arg-type]


def test_defaults_follow_arc() -> None:
    opts = options()
    validate(opts)
    assert opts.namespaces() == ALL_NAMESPACES
    # no --*-max-concurrent-reconciles flag: each controller's own default (EphemeralRunner: 2)
    assert opts.workers_for("ephemeralrunner", 2) == 2
    assert opts.workers_for("ephemeralrunnerset") == 1
    assert opts.leader_election_id == "actions-runner-controller"
    assert opts.queue_settings().rate == 50.0
    assert math.isinf(options(workqueue_rate_limiter="typed_rate_limiter").queue_settings().rate)


def test_watched_namespaces_always_include_the_controllers() -> None:
    assert options(watch_single_namespace="runners").namespaces() == ("runners", "arc-systems")
    assert options(watch_namespaces=("a", "b")).namespaces() == ("a", "b", "arc-systems")


def test_per_controller_workers() -> None:
    workers = parse_workers(["EphemeralRunner=5", "ephemeralrunnerset=3"])
    opts = options(workers=workers, runner_max_concurrent_reconciles=2)
    assert opts.workers_for("ephemeralrunner") == 5
    assert opts.workers_for("ephemeralrunnerset") == 3
    with pytest.raises(OptionsError, match="unknown controller"):
        parse_workers(["nonsense=2"])
    with pytest.raises(OptionsError, match="NAME=N"):
        parse_workers(["ephemeralrunner"])
    with pytest.raises(OptionsError, match="not a number"):
        parse_workers(["ephemeralrunner=many"])


@pytest.mark.parametrize(
    ("text", "seconds"), [("1m", 60.0), ("90s", 90.0), ("1h30m", 5400.0), ("500ms", 0.5)]
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1x", "m", "10", "1m garbage"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(OptionsError, match="not a duration"):
        parse_duration(text)


def test_split_list_accepts_repeats_and_commas() -> None:
    assert split_list(["a,b", " c ", ""]) == ("a", "b", "c")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"controller_namespace": ""}, "CONTROLLER_MANAGER_POD_NAMESPACE"),
        ({"listener_image": ""}, "CONTROLLER_MANAGER_CONTAINER_IMAGE"),
        ({"log_level": "loud"}, "--log-level"),
        ({"log_format": "xml"}, "--log-format"),
        ({"metrics_addr": "nope"}, "--metrics-addr"),
        ({"health_probe_bind_address": ":http"}, "--health-probe-bind-address"),
        ({"runner_max_concurrent_reconciles": 0}, "--runner-max-concurrent-reconciles"),
        ({"k8s_client_qps": 0.0}, "--k8s-client-rate-limiter-qps"),
        ({"workqueue_rate_limiter": "fast"}, "--workqueue-rate-limiter"),
        ({"lease_duration": 5.0, "renew_deadline": 10.0}, "leader election"),
        ({"workers": {"ephemeralrunner": 0}}, "at least 1"),
    ],
)
def test_invalid_options_are_named(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(OptionsError, match=message):
        validate(options(**overrides))


def test_probes_are_on_by_default() -> None:
    # ARC's chart always passes --health-probe-bind-address; ours defaults to :8081 (kubebuilder).
    assert options().health_probe_bind_address == DEFAULT_PROBE_ADDRESS == ":8081"
    assert parse_bind_address(DEFAULT_PROBE_ADDRESS) == ("0.0.0.0", 8081)  # noqa: S104 - Go's ":port"
    flag = inspect.signature(cli.controller).parameters["health_probe_bind_address"]
    assert flag.default == DEFAULT_PROBE_ADDRESS  # `scaleset controller` without the flag


def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig for a server nobody serves: building a manager makes no request."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return kubeconfig


async def test_the_manager_serves_probes_unless_disabled(tmp_path: Path) -> None:
    kubeconfig = unreachable_kubeconfig(tmp_path)
    async with KubeClient.from_kubeconfig(kubeconfig) as client:
        assert build_manager(options(), client).settings.probe_address == ":8081"
        off = build_manager(options(health_probe_bind_address="0"), client)
        assert off.settings.probe_address == "0"
        assert parse_bind_address(off.settings.probe_address) is None


@pytest.mark.parametrize(
    ("limiter", "rate"), [("bucket_rate_limiter", 50.0), ("typed_rate_limiter", math.inf)]
)
async def test_every_controller_takes_the_workqueue_rate_limiter_flag(
    tmp_path: Path, limiter: str, rate: float
) -> None:
    # ARC's --workqueue-rate-limiter applies to every controller of the process: the
    # EphemeralRunnerSet controller once kept the default bucket whatever the flag said
    kubeconfig = unreachable_kubeconfig(tmp_path)
    async with KubeClient.from_kubeconfig(kubeconfig) as client:
        manager = build_manager(options(workqueue_rate_limiter=limiter), client)
        rates = {c.name: c.queue._bucket.rate for c in manager.controllers}
    assert rates == dict.fromkeys(rates, rate)
    assert "ephemeralrunnerset" in rates


def test_a_sync_period_of_zero_disables_the_resync() -> None:
    assert parse_duration("0") == 0.0
    validate(options(sync_period=0.0))
    with pytest.raises(OptionsError, match="--sync-period"):
        validate(options(sync_period=-1.0))
