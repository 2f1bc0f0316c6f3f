"""The EphemeralRunner controller's metrics: its decisions counter (one count per applied note,
by reason; the row of docs/metrics.md).
"""

from __future__ import annotations

from scaleset.controllers.decisions import DecisionMetrics


class RunnerDecisionMetrics(DecisionMetrics):
    """``scaleset_ephemeral_runner_decisions_total{reason}``: one count per applied note."""

    name = "scaleset_ephemeral_runner_decisions"
    documentation = (
        "EphemeralRunner controller decisions, by reason (the Event reason when posted)."
    )
