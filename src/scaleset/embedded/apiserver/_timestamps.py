"""How the server writes the times it stamps on objects.

The times themselves come from the server's ``scaleset.clock.Clock`` (``clock.now()``), the one
clock every piece of scaleset takes. Kubernetes writes ``metav1.Time`` (creationTimestamp,
deletionTimestamp, condition transition times) as RFC 3339 with whole seconds in UTC
(``2024-05-01T10:00:00Z``).
"""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(moment: datetime) -> str:
    """metav1.Time: seconds precision, always UTC ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
