"""The AutoscalingListener controller's metrics: its decisions counter (one count per applied note,
by reason) and ARC's ``gha_controller_running_listeners`` gauge (rows of docs/metrics.md).
"""

from __future__ import annotations

import threading
import weakref

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from scaleset.api import keys
from scaleset.api.naming import github_url_labels
from scaleset.controllers.autoscalinglistener.observed import Observed
from scaleset.controllers.decisions import DecisionMetrics
from scaleset.kube.objects import ObjectKey

LISTENER_LABELS = ("name", "namespace", "repository", "organization", "enterprise")
_gauges: weakref.WeakKeyDictionary[CollectorRegistry, Gauge] = weakref.WeakKeyDictionary()
_gauges_lock = threading.Lock()


def _running_listeners(registry: CollectorRegistry | None) -> Gauge:
    """ARC's ``gha_controller_running_listeners`` on ``registry``, made once per registry (a
    second manager in the same process shares it)."""
    documentation = "Whether the listener container of a scale set runs (1) or not (0)."
    if registry is None:
        return Gauge(
            "gha_controller_running_listeners", documentation, LISTENER_LABELS, registry=None
        )
    with _gauges_lock:
        gauge = _gauges.get(registry)
        if gauge is None:
            gauge = _gauges[registry] = Gauge(
                "gha_controller_running_listeners",
                documentation,
                LISTENER_LABELS,
                registry=registry,
            )
        return gauge


class ListenerDecisionMetrics(DecisionMetrics):
    """``scaleset_autoscaling_listener_decisions_total{reason}``: one count per applied note; and
    ARC's ``gha_controller_running_listeners`` (1 while the listener container runs, 0 once it
    does not or the listener is gone; ``name``/``namespace`` are the listener's, spec §7.1)."""

    name = "scaleset_autoscaling_listener_decisions"
    documentation = (
        "AutoscalingListener controller decisions, by reason (the Event reason when posted)."
    )

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        super().__init__(registry)
        self.running_listeners = _running_listeners(registry)
        self._labels: dict[ObjectKey, dict[str, str]] = {}

    def listener_state(self, key: ObjectKey, observed: Observed | None) -> None:
        """Publish whether the listener runs (0 for a listener that is gone)."""
        if observed is None:
            labels = self._labels.pop(key, None)
            if labels is not None:
                self.running_listeners.labels(**labels).set(0)
            return
        try:
            url = github_url_labels(observed.listener.spec.github_config_url)
        except ValueError:  # an invalid URL: the Configured condition says so
            url = {}
        labels = {
            "name": key.name,
            "namespace": key.namespace,
            "repository": url.get(keys.REPOSITORY_LABEL, ""),
            "organization": url.get(keys.ORGANIZATION_LABEL, ""),
            "enterprise": url.get(keys.ENTERPRISE_LABEL, ""),
        }
        self._labels[key] = labels
        running = observed.pod is not None and observed.pod.running
        self.running_listeners.labels(**labels).set(1 if running else 0)
