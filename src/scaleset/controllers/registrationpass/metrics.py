"""The registration pass's metrics: its decisions counter (one count per applied note, by reason;
the row of docs/metrics.md).
"""

from __future__ import annotations

from scaleset.controllers.decisions import DecisionMetrics


class PassDecisionMetrics(DecisionMetrics):
    """``scaleset_registration_pass_decisions_total{reason}``."""

    name = "scaleset_registration_pass_decisions"
    documentation = "Registration pass decisions by reason (L6)."
