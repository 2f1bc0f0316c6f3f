"""One instance per process of each metrics class, on prometheus-client's default registry.

A metrics class registers its collectors when it is built, so building it twice on one registry
registers the same names twice, which prometheus-client refuses. Production code gets the one
instance that ``/metrics`` serves from ``process_wide(SomeMetrics)``; tests build
``SomeMetrics(CollectorRegistry())`` so their counts start at zero.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from prometheus_client import REGISTRY, CollectorRegistry

_Metrics = TypeVar("_Metrics")

_instances: dict[Callable[..., Any], Any] = {}
_lock = threading.Lock()


def process_wide(build: Callable[[CollectorRegistry], _Metrics]) -> _Metrics:
    """The process's one ``build(REGISTRY)``: made on the first call, the same object after."""
    with _lock:
        found = _instances.get(build)
        if found is None:
            found = _instances[build] = build(REGISTRY)
        return cast(_Metrics, found)
