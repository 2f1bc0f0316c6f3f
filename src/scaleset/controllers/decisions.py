"""The decision counter every reconciler keeps (lifecycle.md L9), registered once per registry.

Each reconciler counts its decisions by reason (the Event reason when one is posted) on a
``<name>_total{reason}`` counter. Building a second manager in the same process (a controller
restart in the demo, a test that restarts its controller) must not register the counter twice,
so counters are made here, once per (registry, name), and shared.
"""

from __future__ import annotations

import threading
import weakref

from prometheus_client import REGISTRY, CollectorRegistry, Counter

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
