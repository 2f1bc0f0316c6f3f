"""The server's notion of wall time, injectable so tests can pin timestamps.

Kubernetes writes ``metav1.Time`` as RFC 3339 with whole seconds (``2024-05-01T10:00:00Z``) and
``metav1.MicroTime`` with microseconds (``2024-05-01T10:00:00.000000Z``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Anything with ``now()`` returning an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """metav1.Time: seconds precision, always UTC ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: datetime) -> str:
    """metav1.MicroTime: microseconds, always UTC ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
