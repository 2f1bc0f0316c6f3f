"""Prometheus counter of GitHub / Actions HTTP requests, registry injectable for tests.

`github_api_requests_total{method, endpoint, status_code}` counts every attempt (retries
included). `endpoint` is the path template (`_apis/runtime/runnerscalesets/{id}/sessions`),
never a concrete URL, so label cardinality stays bounded; `status_code` is the HTTP status or
`error` when no response arrived.
"""

from __future__ import annotations

import threading

from prometheus_client import REGISTRY, CollectorRegistry, Counter

TRANSPORT_ERROR_STATUS = "error"


class GitHubApiMetrics:
    """The client's metrics, registered once per registry."""

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self.requests = Counter(
            "github_api_requests",
            "HTTP requests sent to the GitHub API and the Actions service, per attempt.",
            ["method", "endpoint", "status_code"],
            registry=registry,
        )

    def record(self, method: str, endpoint: str, status: int | None) -> None:
        code = str(status) if status is not None else TRANSPORT_ERROR_STATUS
        self.requests.labels(method=method, endpoint=endpoint, status_code=code).inc()


_default: GitHubApiMetrics | None = None
_default_lock = threading.Lock()


def default_metrics() -> GitHubApiMetrics:
    """The process-wide instance on prometheus_client's global registry."""
    global _default  # one registration per process
    with _default_lock:
        if _default is None:
            _default = GitHubApiMetrics(REGISTRY)
        return _default
