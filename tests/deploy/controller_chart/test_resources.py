"""The controller pod has memory and CPU requests and limits by default (ARC's has none), the
memory limit well above what the controller was measured to use with 5,000 runners
(bench/results/controller_memory.md), so one controller cannot take a node's memory nor be the
first thing evicted. A key the user sets overrides ours; ``resources: null`` gives ARC's pod."""

from __future__ import annotations

import re
from pathlib import Path

from tests.deploy.controller_chart.rendering import manager_container, render_ours

MEMORY_BENCHMARK = Path(__file__).resolve().parents[3] / "bench/results/controller_memory.md"
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "m": 1e-3, "": 1}


def quantity(text: str | int) -> float:
    """A Kubernetes quantity (``512Mi``, ``100m``, ``2``) as a number (bytes, cores)."""
    match = re.fullmatch(r"([0-9.]+)(Ki|Mi|Gi|m|)", str(text))
    assert match, text
    return float(match.group(1)) * UNITS[match.group(2)]


def highest_measured_rss() -> float:
    """The controller's highest RSS with 5,000 runners cached, in bytes (the benchmark's table:
    ``| controller RSS, highest after any relist | 350.1 MB |``)."""
    found = re.search(
        r"controller RSS, highest after any relist \| ([0-9.]+) MB", MEMORY_BENCHMARK.read_text()
    )
    assert found, f"{MEMORY_BENCHMARK} no longer states the controller's highest RSS"
    return float(found.group(1)) * 1e6


def test_the_controller_has_requests_and_limits_by_default() -> None:
    resources = manager_container(render_ours({}))["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) == {"cpu", "memory"}
    assert quantity(resources["limits"]["memory"]) >= 2.5 * highest_measured_rss()
    assert quantity(resources["requests"]["memory"]) <= quantity(resources["limits"]["memory"])
    assert quantity(resources["requests"]["cpu"]) <= quantity(resources["limits"]["cpu"])


def test_a_key_the_user_sets_overrides_ours_and_keeps_the_rest() -> None:
    resources = manager_container(render_ours({"resources": {"limits": {"memory": "4Gi"}}}))[
        "resources"
    ]
    assert resources["limits"]["memory"] == "4Gi"
    assert set(resources["requests"]) == {"cpu", "memory"}


def test_null_resources_give_arcs_pod() -> None:
    assert "resources" not in manager_container(render_ours({"resources": None}))
