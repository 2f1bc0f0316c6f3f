"""The Grafana dashboard (deploy/grafana/scaleset-dashboard.json) queries only metrics that exist.

Every PromQL expression of every panel and every ``label_values`` variable query is reduced to
the metric names it selects (``tests.support.promql``), and each name must be on a ``/metrics``
page our code really serves: the controller manager's registry scraped over HTTP (the
production ``ProbeServer``) after the demo system ran a job through it — so what the
reconcilers, the work queues, the GitHub client and the Kubernetes client registered while
working is there — and the listener's registry (``ListenerMetrics`` with ARC's default metric
set, as a listener without ``listenerMetrics`` exports) scraped from its ``ProbeServer``.
Exported names include the suffixes Prometheus sees (``_total``, ``_bucket``, ``_count``,
``_sum``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client import REGISTRY
from tests.support.promql import exposed_names, label_values_metric, metric_names
from tests.support.waiting import eventually

from scaleset.clock import SystemClock
from scaleset.demo.system import RUNNER_NAMESPACE, SCALE_SET_NAME, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.embedded.actions.model import JobState
from scaleset.listener.metrics import ListenerMetrics, ScaleSetIdentity
from scaleset.runtime.probes import ProbeServer

pytestmark = pytest.mark.timeout(240)

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "scaleset-dashboard.json"


def dashboard() -> dict[str, Any]:
    document = json.loads(DASHBOARD.read_text())
    assert isinstance(document, dict)
    return document


def panels(document: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for panel in document.get("panels") or []:
        found.append(panel)
        found.extend(panel.get("panels") or [])  # collapsed rows keep theirs inside
    return found


def queries(document: dict[str, Any]) -> list[tuple[str, str]]:
    """``(where, expression)`` for every panel target and every variable query."""
    found: list[tuple[str, str]] = []
    for panel in panels(document):
        for target in panel.get("targets") or []:
            found.append((f"panel {panel.get('title')!r} {target.get('refId')}", target["expr"]))
    for variable in document.get("templating", {}).get("list") or []:
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query or "")
        metric = label_values_metric(text)
        assert metric is not None, f"variable {variable.get('name')}: not label_values: {text!r}"
        found.append((f"variable ${variable.get('name')}", metric))
    return found


async def scrape(url: str) -> str:
    async with httpx2.AsyncClient() as http:
        answer = await http.get(url)
    answer.raise_for_status()
    return answer.text


@pytest.fixture(scope="module")
async def exported() -> set[str]:
    """Every name the controller manager's and a listener's ``/metrics`` carry."""
    clock = SystemClock()
    system = DemoSystem(
        clock=clock,
        truth=Truth(zombie_bound=15.0),
        min_runners=0,
        max_runners=2,
        grace=3.0,
        kubeconfig=None,
        started_at=clock.monotonic(),
    )
    await system.start()
    try:
        assert system.fake is not None
        control = system.fake.control
        await control.wait_for(
            lambda t: any(s.polls > 0 for s in t.sessions), within=60, what="listener session"
        )
        job = control.queue_job([SCALE_SET_NAME], duration_seconds=0.5)
        await eventually(
            lambda: control.snapshot().job(job).state == JobState.COMPLETED,
            within=60,
            what="a job run through the system",
            interval=0.1,
        )
        server = ProbeServer("127.0.0.1", 0, registry=REGISTRY)  # the manager's registry
        await server.start()
        try:
            controller = await scrape(f"http://127.0.0.1:{server.bound_port}/metrics")
        finally:
            await server.stop()
    finally:
        await system.stop()
    metrics = ListenerMetrics(ScaleSetIdentity(SCALE_SET_NAME, RUNNER_NAMESPACE))
    listener_server = ProbeServer("127.0.0.1", 0, registry=metrics.registry)
    await listener_server.start()
    try:
        listener = await scrape(f"http://127.0.0.1:{listener_server.bound_port}/metrics")
    finally:
        await listener_server.stop()
    return exposed_names(controller) | exposed_names(listener)


def test_the_dashboard_is_grafana_json_with_queries() -> None:
    document = dashboard()
    assert document["uid"]
    assert document["title"]
    found = queries(document)
    assert len(found) >= 20
    datasource = {v["name"] for v in document["templating"]["list"] if v["type"] == "datasource"}
    for panel in panels(document):
        if panel.get("type") == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert "datasource" in datasource
        for target in panel["targets"]:
            assert metric_names(target["expr"]), f"{panel['title']}: selects no metric"


def test_the_panels_have_unique_ids_and_do_not_overlap() -> None:
    document = dashboard()
    ids = [panel["id"] for panel in panels(document)]
    assert len(ids) == len(set(ids))
    taken: dict[tuple[int, int], str] = {}
    for panel in document["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']} overlaps {taken[(x, y)]}"
                taken[(x, y)] = panel["title"]


def test_the_dashboard_covers_what_operators_ask() -> None:
    """Idle vs busy, queue depth, job start latency, decisions by reason, conflicts, reconcile
    errors and listener health each have a panel."""
    used = {name for _, expr in queries(dashboard()) for name in metric_names(expr)}
    for wanted in (
        "scaleset_runner_set_runners",
        "gha_idle_runners",
        "gha_busy_runners",
        "gha_assigned_jobs",
        "gha_running_jobs",
        "gha_job_startup_duration_seconds_bucket",
        "scaleset_ephemeral_runner_decisions_total",
        "scaleset_ephemeral_runner_set_decisions_total",
        "scaleset_conflict_retries_total",
        "controller_runtime_reconcile_errors_total",
        "scaleset_listener_messages_total",
        "scaleset_listener_session_events_total",
    ):
        assert wanted in used, wanted


async def test_every_metric_of_the_dashboard_is_exported(exported: set[str]) -> None:
    missing = sorted(
        f"{where}: {name}"
        for where, expr in queries(dashboard())
        for name in metric_names(expr)
        if name not in exported
    )
    assert missing == [], "the dashboard queries metrics nobody exports:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'sum by (state) (scaleset_runner_set_runners{namespace=~"$namespace"})',
            {"scaleset_runner_set_runners"},
        ),
        (
            "histogram_quantile(0.95, sum by (le, controller) "
            "(rate(controller_runtime_reconcile_time_seconds_bucket[$__rate_interval])))",
            {"controller_runtime_reconcile_time_seconds_bucket"},
        ),
        (
            'sum(clamp_min(gha_assigned_jobs{name=~"a|b"} - gha_running_jobs, 0)) or vector(0)',
            {"gha_assigned_jobs", "gha_running_jobs"},
        ),
        (
            "rate(a_total[5m] offset 1h) / on (pod) group_left(node) b_info > bool 2e3",
            {"a_total", "b_info"},
        ),
        ('up{job="by (x)"} unless ignoring(le) c', {"up", "c"}),
        ("max_over_time(d[${__range}:1m])", {"d"}),
    ],
)
def test_metric_names_are_read_from_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_a_name_only_selector_is_refused() -> None:
    with pytest.raises(ValueError, match="__name__"):
        metric_names('{__name__=~"gha_.*"}')


def test_exposed_names_include_the_suffixes_prometheus_sees() -> None:
    text = (
        "# HELP a_total h\n# TYPE a_total counter\n"
        "# HELP lat h\n# TYPE lat histogram\n"
        'g{x="1"} 2.0\n'
    )
    assert exposed_names(text) == {
        "a_total",
        "a_created",
        "lat",
        "lat_bucket",
        "lat_count",
        "lat_sum",
        "lat_created",
        "g",
    }
