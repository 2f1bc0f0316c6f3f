"""The AutoscalingRunnerSet controller's metrics: its decisions counter (one count per applied
note, by reason; the row of docs/metrics.md).
"""

from __future__ import annotations

from scaleset.controllers.decisions import DecisionMetrics


class ScaleSetDecisionMetrics(DecisionMetrics):
    """``scaleset_autoscaling_runner_set_decisions_total{reason}``."""

    name = "scaleset_autoscaling_runner_set_decisions"
    documentation = "Decisions of the AutoscalingRunnerSet controller, by reason."
