"""Metrics of the EphemeralRunnerSet controller.

ARC's gauges keep their names and labels:
``gha_controller_{pending,running,failed}_ephemeral_runners`` with ``name``, ``namespace``,
``repository``, ``organization``, ``enterprise`` (under L1 ``running`` counts runners with a job).
Ours add L0's five states (``scaleset_runner_set_runners{state}``), so dashboards can tell idle
from busy, and a counter per decision (L9).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from scaleset.api import EphemeralRunnerSetStatus, keys
from scaleset.api.naming import github_url_labels
from scaleset.process_metrics import process_wide

SET_LABELS = ("name", "namespace", "repository", "organization", "enterprise")


class RunnerSetMetrics:
    """Every metric the controller records, on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.pending = Gauge(
            "gha_controller_pending_ephemeral_runners",
            "Number of ephemeral runners in a pending state.",
            SET_LABELS,
            registry=r,
        )
        self.running = Gauge(
            "gha_controller_running_ephemeral_runners",
            "Number of ephemeral runners in a running state (under scaleset: with a job).",
            SET_LABELS,
            registry=r,
        )
        self.failed = Gauge(
            "gha_controller_failed_ephemeral_runners",
            "Number of ephemeral runners in a failed state.",
            SET_LABELS,
            registry=r,
        )
        self.runners = Gauge(
            "scaleset_runner_set_runners",
            "Runners of a scale set by state (starting, idle, busy, terminal, deleting).",
            [*SET_LABELS, "state"],
            registry=r,
        )
        self.decisions = Counter(
            "scaleset_ephemeral_runner_set_decisions",
            "Decisions of the EphemeralRunnerSet controller carried out, by reason.",
            ["namespace", "name", "reason"],
            registry=r,
        )
        self.terminal = Counter(
            "scaleset_runner_set_terminal_runners",
            "Terminal runners recorded (and then reaped), by reason.",
            ["namespace", "name", "reason"],
            registry=r,
        )
        self.creation_paused = Gauge(
            "scaleset_runner_set_creation_paused",
            "1 while the failure breaker stops runner creation.",
            ["namespace", "name"],
            registry=r,
        )

    def set_counts(
        self, namespace: str, name: str, url: str, status: EphemeralRunnerSetStatus
    ) -> None:
        """Publish a set's counts (``name`` is the scale set name label, as ARC reads it)."""
        try:
            url_labels = github_url_labels(url) if url else {}
        except ValueError:  # InvalidConfigUrl: the set's condition says so; no labels here
            url_labels = {}
        labels = {
            "name": name,
            "namespace": namespace,
            "repository": url_labels.get(keys.REPOSITORY_LABEL, ""),
            "organization": url_labels.get(keys.ORGANIZATION_LABEL, ""),
            "enterprise": url_labels.get(keys.ENTERPRISE_LABEL, ""),
        }
        self.pending.labels(**labels).set(status.pending_ephemeral_runners)
        self.running.labels(**labels).set(status.running_ephemeral_runners)
        self.failed.labels(**labels).set(status.failed_ephemeral_runners)
        for state, count in (
            ("starting", status.starting_ephemeral_runners),
            ("idle", status.idle_ephemeral_runners),
            ("busy", status.busy_ephemeral_runners),
            ("terminal", status.terminal_ephemeral_runners),
            ("deleting", status.deleting_ephemeral_runners),
        ):
            self.runners.labels(**labels, state=state).set(count)

    def forget(self, namespace: str, name: str) -> None:
        """Drop a deleted set's gauges."""
        for gauge in (self.pending, self.running, self.failed, self.runners):
            for labels in list(gauge._metrics):  # prometheus_client has no public listing
                if labels[0] == name and labels[1] == namespace:
                    gauge.remove(*labels)


def default_metrics() -> RunnerSetMetrics:
    """The process-wide metrics on the default registry (``/metrics``)."""
    return process_wide(RunnerSetMetrics)
