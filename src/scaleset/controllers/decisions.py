"""The vocabulary every reconciler decides in, and the counter it keeps (lifecycle.md L9).

- ``Note``: why an action happens — a stable reason (the Event reason and the counter label) and,
  when there is something to say, a message (then also an Event; ``warning`` for type Warning).
- ``Report``: nothing to change, something to say. ``Wait``: look again after ``seconds`` (or when
  something changes), or after the work queue's per-key back-off.
- ``decision_counter``: each reconciler counts its decisions by reason on a
  ``<name>_total{reason}`` counter. Building a second manager in the same process (a controller
  restart in the demo, a test that restarts its controller) must not register the counter twice,
  so counters are made here, once per (registry, name), and shared.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter


@dataclass(frozen=True)
class Note:
    """Why an action happens. ``message`` non-empty: also an Event (``warning``: type Warning)."""

    reason: str
    message: str = ""
    warning: bool = False


@dataclass(frozen=True)
class Report:
    """Nothing to change, something to say (an Event and a count)."""

    note: Note


@dataclass(frozen=True)
class Wait:
    """Look again after ``seconds`` (None: when something changes); ``backoff``: after the work
    queue's per-key back-off instead."""

    seconds: float | None = None
    backoff: bool = False


_counters: weakref.WeakKeyDictionary[CollectorRegistry, dict[str, Counter]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def decision_counter(
    name: str, documentation: str, registry: CollectorRegistry | None = REGISTRY
) -> Counter:
    """The ``name`` counter labelled by ``reason`` on ``registry`` (made on first use).

    ``registry=None`` gives an unregistered counter (tests that want a private one).
    """
    if registry is None:
        return Counter(name, documentation, ["reason"], registry=None)
    with _lock:
        known = _counters.setdefault(registry, {})
        counter = known.get(name)
        if counter is None:
            counter = known[name] = Counter(name, documentation, ["reason"], registry=registry)
        return counter
