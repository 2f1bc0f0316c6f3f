"""Prometheus counter of GitHub / Actions HTTP requests, registry injectable for tests.

`github_api_requests_total{method, endpoint, status_code}` counts every attempt (retries
included). `endpoint` is the path template (`_apis/runtime/runnerscalesets/{id}/sessions`),
never a concrete URL, so label cardinality stays bounded; `status_code` is the HTTP status or
`error` when no response arrived.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from scaleset.process_metrics import process_wide

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


def default_metrics() -> GitHubApiMetrics:
    """The process-wide instance on prometheus_client's global registry."""
    return process_wide(GitHubApiMetrics)
