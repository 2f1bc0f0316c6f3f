"""Prometheus metrics of the controller runtime, under the names controller-runtime uses.

Work queue metrics keep client-go's names and label (``workqueue_*{name}``), reconcile metrics
controller-runtime's (``controller_runtime_*{controller}``), the API client client-go's
(``rest_client_requests_total``), leader election client-go's (``leader_election_master_status``),
so existing ARC dashboards keep working. Ours are prefixed ``scaleset_``.

All metrics live on one ``RuntimeMetrics`` object bound to a registry: production uses
``default_metrics()`` (the process-wide prometheus-client registry that ``/metrics`` serves);
tests pass ``RuntimeMetrics(CollectorRegistry())`` so their counts start at zero.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from scaleset.process_metrics import process_wide

# client-go's workqueue buckets: 10ns .. 10^3 s, factor 10.
_QUEUE_BUCKETS = tuple(10.0**exp for exp in range(-8, 4))
_RECONCILE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5.0,
    6.0,
    7.0,
    8.0,
    9.0,
    10.0,
    15.0,
    20.0,
    25.0,
    30.0,
    40.0,
    50.0,
    60.0,
)


class RuntimeMetrics:
    """Every metric the runtime records, registered on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        r = registry
        # --- work queue (client-go names) ---
        self.queue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", ["name"], registry=r
        )
        self.queue_adds = Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", ["name"], registry=r
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.queue_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.queue_retries = Counter(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            ["name"],
            registry=r,
        )
        self.queue_unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration",
            ["name"],
            registry=r,
        )
        self.queue_longest_running = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            ["name"],
            registry=r,
        )
        # --- reconciles (controller-runtime names) ---
        self.reconcile_total = Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=_RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent_reconciles = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )
        # --- API client (client-go names) ---
        self.client_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code and method",
            ["code", "method"],
            registry=r,
        )
        self.client_throttle_seconds = Counter(
            "scaleset_rest_client_throttled_seconds",
            "Seconds requests waited for the client-side QPS/burst limiter",
            registry=r,
        )
        # --- optimistic lock ---
        self.conflict_retries = Counter(
            "scaleset_conflict_retries",
            "Conflicts answered by re-reading and re-deciding (retry_on_conflict)",
            ["operation"],
            registry=r,
        )
        self.conflict_exhausted = Counter(
            "scaleset_conflict_retries_exhausted",
            "retry_on_conflict gave up after its last attempt",
            ["operation"],
            registry=r,
        )
        # --- informers ---
        self.informer_relists = Counter(
            "scaleset_informer_relists",
            "Full lists by an informer (first sync, 410 Gone, broken watch)",
            ["kind"],
            registry=r,
        )
        self.informer_watch_restarts = Counter(
            "scaleset_informer_watch_restarts",
            "Watch requests restarted, by cause",
            ["kind", "cause"],
            registry=r,
        )
        self.informer_events = Counter(
            "scaleset_informer_events",
            "Watch events applied to informer caches",
            ["kind", "type"],
            registry=r,
        )
        # --- events recorder ---
        self.events_posted = Counter(
            "scaleset_kube_events_posted",
            "Kubernetes Events created or aggregated (count bumped)",
            ["action"],
            registry=r,
        )
        self.events_dropped = Counter(
            "scaleset_kube_events_dropped",
            "Kubernetes Events not posted, by cause (rate_limited, post_failed, queue_full)",
            ["cause"],
            registry=r,
        )
        # --- leader election (client-go name) ---
        self.leader_status = Gauge(
            "leader_election_master_status",
            "1 when this process leads the named lease, else 0",
            ["name"],
            registry=r,
        )
        # --- supervision ---
        self.task_restarts = Counter(
            "scaleset_supervised_task_restarts",
            "Supervised background tasks restarted after a crash",
            ["task"],
            registry=r,
        )


def default_metrics() -> RuntimeMetrics:
    """The process-wide metrics on prometheus-client's default registry (created once)."""
    return process_wide(RuntimeMetrics)
