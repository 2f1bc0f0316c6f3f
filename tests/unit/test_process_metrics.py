"""``process_wide``: one instance per process of each metrics class, on the default registry."""

from __future__ import annotations

import threading

from prometheus_client import REGISTRY, CollectorRegistry

from scaleset.controllers.ephemeralrunner.metrics import RunnerDecisionMetrics
from scaleset.controllers.ephemeralrunnerset import metrics as runner_set_metrics
from scaleset.github import metrics as github_metrics
from scaleset.kube import metrics as kube_metrics
from scaleset.process_metrics import process_wide


class _Built:
    """Stands for a metrics class: counts how often it is built, registers nothing."""

    builds = 0

    def __init__(self, registry: CollectorRegistry) -> None:
        type(self).builds += 1
        self.registry = registry


class _Other(_Built):
    builds = 0


def test_the_first_call_builds_on_the_default_registry_and_later_calls_get_that_object() -> None:
    first = process_wide(_Built)
    assert first.registry is REGISTRY
    assert process_wide(_Built) is first
    assert _Built.builds == 1


def test_each_class_has_its_own_instance() -> None:
    other = process_wide(_Other)
    assert isinstance(other, _Other)
    assert other is not process_wide(_Built)
    assert _Other.builds == 1


def test_threads_asking_at_once_get_one_instance() -> None:
    class Slow(_Built):
        builds = 0

        def __init__(self, registry: CollectorRegistry) -> None:
            barrier_passed.wait(timeout=5)
            super().__init__(registry)

    barrier_passed = threading.Event()
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(process_wide(Slow))) for _ in range(8)]
    for thread in threads:
        thread.start()
    barrier_passed.set()
    for thread in threads:
        thread.join(timeout=10)
    assert len(got) == 8
    assert all(instance is got[0] for instance in got)
    assert Slow.builds == 1


def test_the_products_process_wide_metrics_are_built_once() -> None:
    assert kube_metrics.default_metrics() is kube_metrics.default_metrics()
    assert github_metrics.default_metrics() is github_metrics.default_metrics()
    assert runner_set_metrics.default_metrics() is runner_set_metrics.default_metrics()
    assert RunnerDecisionMetrics.default() is RunnerDecisionMetrics.default()
