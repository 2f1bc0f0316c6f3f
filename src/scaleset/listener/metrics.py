"""The listener's Prometheus metrics: ARC's listener set and ours, on one
private registry, served on ``metrics_addr`` at ``metrics_endpoint`` by the runtime's probe server
(``scaleset.runtime.probes``, started by ``main``).

ARC's metrics keep ARC's names, label keys and default buckets. The config's ``metrics`` object
(the chart's ``listenerMetrics``) decides which are installed and with which labels; unknown names
are logged and skipped; without it ARC's default set applies. Label values: scale-set gauges
carry ``name``/``namespace`` of the EphemeralRunnerSet and ``enterprise``/``organization``/
``repository`` from the configure URL; job metrics carry ``enterprise`` from the URL and
``organization``/``repository``/``job_name``/``event_name``/``job_result`` (and the opt-in
``job_workflow_ref``/``job_workflow_name``/``job_workflow_target``) from the message. Durations
are whole seconds, as ARC computes them; a job message missing a timestamp is not observed
(ARC would observe a nonsense value from Go's zero time).

Ours (``scaleset_listener_*``): queue duration per job (ARC #4431), messages by outcome, message
handling latency, JobStarted-received-to-Running-written latency, job events by outcome, phase
writes deferred after conflict exhaustion, poison messages, job messages of an unknown type,
empty 200 replies, session events,
ERS patches and the stale assigned jobs held back (ARC #4397). Conflict retries and exhaustion
are ``scaleset_conflict_retries_total`` / ``scaleset_conflict_retries_exhausted_total``
``{operation="listener_job_started"}`` (the shared ``retry_on_conflict`` metrics), and the
clients' request counters (``rest_client_requests_total``, ``github_api_requests_total``) are on
the same registry.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from scaleset.github import GitHubApiMetrics, JobCompleted, JobStarted, RunnerScaleSetStatistic
from scaleset.github.models import JobMessageBase
from scaleset.kube import RuntimeMetrics
from scaleset.listener.config import MetricSpec, MetricsSpec
from scaleset.logs import get_logger

log = get_logger(__name__)

ASSIGNED_JOBS = "gha_assigned_jobs"
RUNNING_JOBS = "gha_running_jobs"
REGISTERED_RUNNERS = "gha_registered_runners"
BUSY_RUNNERS = "gha_busy_runners"
IDLE_RUNNERS = "gha_idle_runners"
MIN_RUNNERS = "gha_min_runners"
MAX_RUNNERS = "gha_max_runners"
DESIRED_RUNNERS = "gha_desired_runners"
STARTED_JOBS = "gha_started_jobs_total"
COMPLETED_JOBS = "gha_completed_jobs_total"
STARTUP_DURATION = "gha_job_startup_duration_seconds"
EXECUTION_DURATION = "gha_job_execution_duration_seconds"

GAUGE_HELP = {
    ASSIGNED_JOBS: "Number of jobs assigned to this scale set.",
    RUNNING_JOBS: "Number of jobs running (or about to be run).",
    REGISTERED_RUNNERS: "Number of runners registered by the scale set.",
    BUSY_RUNNERS: "Number of registered runners running a job.",
    MIN_RUNNERS: "Minimum number of runners.",
    MAX_RUNNERS: "Maximum number of runners.",
    DESIRED_RUNNERS: "Number of runners desired by the scale set.",
    IDLE_RUNNERS: "Number of registered runners not running a job.",
}
COUNTER_HELP = {
    STARTED_JOBS: "Total number of jobs started.",
    COMPLETED_JOBS: "Total number of jobs completed.",
}
HISTOGRAM_HELP = {
    STARTUP_DURATION: "Time spent waiting for workflow job to get started on the runner owned by "
    "the scale set (in seconds).",
    EXECUTION_DURATION: "Time spent executing workflow jobs by the scale set (in seconds).",
}

SCALE_SET_LABELS = ("enterprise", "organization", "repository", "name", "namespace")
JOB_LABELS = ("enterprise", "organization", "repository", "job_name", "event_name")
COMPLETED_JOB_LABELS = (*JOB_LABELS, "job_result")

DEFAULT_BUCKETS: tuple[float, ...] = (
    0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50, 60, 70,
    80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900, 1200, 1800,
    2400, 3000, 3600,
)  # fmt: skip
"""ARC's default histogram buckets (seconds)."""

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


def default_metrics_spec() -> MetricsSpec:
    """ARC's default set, used when the config has no ``metrics``."""
    scale_set = MetricSpec(labels=SCALE_SET_LABELS)
    return MetricsSpec(
        gauges={name: scale_set for name in GAUGE_HELP},
        counters={
            STARTED_JOBS: MetricSpec(labels=JOB_LABELS),
            COMPLETED_JOBS: MetricSpec(labels=COMPLETED_JOB_LABELS),
        },
        histograms={
            STARTUP_DURATION: MetricSpec(labels=JOB_LABELS),
            EXECUTION_DURATION: MetricSpec(labels=COMPLETED_JOB_LABELS),
        },
    )


@dataclass(frozen=True)
class WorkflowRef:
    """``job_workflow_name`` and ``job_workflow_target`` parsed from a ``jobWorkflowRef``."""

    name: str = ""
    target: str = ""


def parse_workflow_ref(ref: str) -> WorkflowRef:
    """``owner/repo/.github/workflows/ci.yml@refs/heads/main`` -> ``ci``, ``heads/main``;
    tags -> ``tags/<tag>``; ``refs/pull/<n>/merge`` -> ``pull/<n>``; anything else -> empty."""
    path, sep, git_ref = ref.partition("@")
    if not sep or "@" in git_ref:
        return WorkflowRef()
    file_name = path.rsplit("/", 1)[-1]
    for suffix in (".yaml", ".yml"):
        if file_name.endswith(suffix):
            file_name = file_name[: -len(suffix)]
            break
    target = ""
    if git_ref.startswith("refs/heads/"):
        target = "heads/" + git_ref.removeprefix("refs/heads/")
    elif git_ref.startswith("refs/tags/"):
        target = "tags/" + git_ref.removeprefix("refs/tags/")
    elif git_ref.startswith("refs/pull/"):
        number = git_ref.removeprefix("refs/pull/").split("/", 1)[0]
        target = f"pull/{number}" if number else ""
    return WorkflowRef(file_name, target)


def _unix(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp())


@dataclass(frozen=True)
class ScaleSetIdentity:
    """The label values of the scale-set gauges."""

    name: str
    namespace: str
    enterprise: str = ""
    organization: str = ""
    repository: str = ""

    def labels(self) -> dict[str, str]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "enterprise": self.enterprise,
            "organization": self.organization,
            "repository": self.repository,
        }


class ArcMetrics:
    """ARC's listener metrics, installed as the config says (``metrics``) or ARC's defaults."""

    def __init__(
        self,
        registry: CollectorRegistry,
        identity: ScaleSetIdentity,
        spec: MetricsSpec | None = None,
    ) -> None:
        spec = spec if spec is not None else default_metrics_spec()
        self._scale_set = identity.labels()
        self._gauges: dict[str, tuple[Gauge, tuple[str, ...]]] = {}
        self._counters: dict[str, tuple[Counter, tuple[str, ...]]] = {}
        self._histograms: dict[str, tuple[Histogram, tuple[str, ...]]] = {}
        for name, metric, help_text in _known(spec.gauges, GAUGE_HELP, "gauge"):
            gauge = Gauge(name, help_text, metric.labels, registry=registry)
            self._gauges[name] = (gauge, metric.labels)
        for name, metric, help_text in _known(spec.counters, COUNTER_HELP, "counter"):
            counter = Counter(name, help_text, metric.labels, registry=registry)
            self._counters[name] = (counter, metric.labels)
        for name, metric, help_text in _known(spec.histograms, HISTOGRAM_HELP, "histogram"):
            histogram = Histogram(
                name,
                help_text,
                metric.labels,
                buckets=metric.buckets or DEFAULT_BUCKETS,
                registry=registry,
            )
            self._histograms[name] = (histogram, metric.labels)

    @property
    def installed(self) -> tuple[str, ...]:
        return (*self._gauges, *self._counters, *self._histograms)

    # --- ARC's recorder interface ----------------------------------------------------------

    def record_static(self, min_runners: int, max_runners: int) -> None:
        self._set(MIN_RUNNERS, min_runners)
        self._set(MAX_RUNNERS, max_runners)

    def record_statistics(self, statistics: RunnerScaleSetStatistic) -> None:
        self._set(ASSIGNED_JOBS, statistics.total_assigned_jobs)
        self._set(RUNNING_JOBS, statistics.total_running_jobs)
        self._set(REGISTERED_RUNNERS, statistics.total_registered_runners)
        self._set(BUSY_RUNNERS, statistics.total_busy_runners)
        self._set(IDLE_RUNNERS, statistics.total_idle_runners)

    def record_desired(self, count: int) -> None:
        self._set(DESIRED_RUNNERS, count)

    def record_job_started(self, job: JobStarted) -> None:
        labels = self.job_labels(job)
        self._inc(STARTED_JOBS, labels)
        assigned, started = _unix(job.scale_set_assign_time), _unix(job.runner_assign_time)
        if assigned is not None and started is not None:
            self._observe(STARTUP_DURATION, labels, started - assigned)

    def record_job_completed(self, job: JobCompleted) -> None:
        if job.runner_assign_time is None:
            return  # ARC-HEAD: a job that never reached a runner is not counted
        labels = {**self.job_labels(job), "job_result": job.result}
        self._inc(COMPLETED_JOBS, labels)
        started, finished = _unix(job.runner_assign_time), _unix(job.finish_time)
        if started is not None and finished is not None:
            self._observe(EXECUTION_DURATION, labels, finished - started)

    def job_labels(self, job: JobMessageBase) -> dict[str, str]:
        ref = parse_workflow_ref(job.job_workflow_ref)
        return {
            "enterprise": self._scale_set["enterprise"],
            "organization": job.owner_name,
            "repository": job.repository_name,
            "job_name": job.job_display_name,
            "event_name": job.event_name,
            "job_workflow_ref": job.job_workflow_ref,
            "job_workflow_name": ref.name,
            "job_workflow_target": ref.target,
        }

    # --- plumbing -------------------------------------------------------------------------

    def _set(self, name: str, value: float) -> None:
        entry = self._gauges.get(name)
        if entry is not None:
            gauge, keys = entry
            _child(gauge, keys, self._scale_set).set(value)

    def _inc(self, name: str, labels: Mapping[str, str]) -> None:
        entry = self._counters.get(name)
        if entry is not None:
            counter, keys = entry
            _child(counter, keys, labels).inc()

    def _observe(self, name: str, labels: Mapping[str, str], value: float) -> None:
        entry = self._histograms.get(name)
        if entry is not None:
            histogram, keys = entry
            _child(histogram, keys, labels).observe(value)


def _known(
    specs: Mapping[str, MetricSpec], helps: Mapping[str, str], kind: str
) -> Iterator[tuple[str, MetricSpec, str]]:
    """The configured metrics of one kind that ARC has, with their help text; an unknown name
    is logged and skipped."""
    for name, metric in specs.items():
        if name not in helps:
            log.error("unknown metric name; skipped", name=name, kind=kind)
            continue
        yield name, metric, helps[name]


_Metric = TypeVar("_Metric", Gauge, Counter, Histogram)


def _child(metric: _Metric, keys: tuple[str, ...], values: Mapping[str, str]) -> _Metric:
    if not keys:
        return metric
    return metric.labels(*(values.get(key, "") for key in keys))


class ListenerMetrics:
    """Everything the listener exports: ARC's set plus ours, on one registry."""

    def __init__(
        self,
        identity: ScaleSetIdentity,
        spec: MetricsSpec | None = None,
        *,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.arc = ArcMetrics(r, identity, spec)
        self.runtime = RuntimeMetrics(r)
        self.github = GitHubApiMetrics(r)
        self.messages = Counter(
            "scaleset_listener_messages",
            "Messages from the queue by outcome: handled (acknowledged after its side effects), "
            "retried (not acknowledged, delivered again), poison (acknowledged after the cap).",
            ["outcome"],
            registry=r,
        )
        self.message_seconds = Histogram(
            "scaleset_listener_message_handling_seconds",
            "Time from receiving a message to acknowledging it.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.started_to_running_seconds = Histogram(
            "scaleset_listener_job_started_to_running_seconds",
            "Time from receiving a JobStarted to writing the runner's status.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_seconds = Histogram(
            "scaleset_listener_job_queue_duration_seconds",
            "Time a job waited from being queued to being assigned a runner (runnerAssignTime - "
            "queueTime of JobStarted, whole seconds).",
            list(JOB_LABELS),
            buckets=DEFAULT_BUCKETS,
            registry=r,
        )
        self.job_events = Counter(
            "scaleset_listener_job_events",
            "JobStarted/JobCompleted handled, by outcome (promoted, fields_only, unchanged, "
            "recorded, deferred, not_found, skipped).",
            ["type", "outcome"],
            registry=r,
        )
        self.phase_deferred = Counter(
            "scaleset_listener_phase_writes_deferred",
            "Running phase writes given up after conflict retries ran out (job fields written "
            "without the phase; the phase is retried later).",
            registry=r,
        )
        self.poison = Counter(
            "scaleset_listener_poison_messages",
            "Messages acknowledged without being fully handled after the retry cap.",
            ["reason"],
            registry=r,
        )
        self.unknown_jobs = Counter(
            "scaleset_listener_unknown_job_messages",
            "Job messages of a type the listener does not know, ignored (the message is "
            "acknowledged; a new type never blocks the queue).",
            registry=r,
        )
        self.empty_replies = Counter(
            "scaleset_listener_empty_replies",
            "200 answers to a poll whose body held no decodable message (treated as no message).",
            registry=r,
        )
        self.sessions = Counter(
            "scaleset_listener_session_events",
            "Message session events: created, resumed, stale_deleted, conflict, lost, handed_over "
            "(kept for the next listener on a graceful stop), closed (deleted).",
            ["event"],
            registry=r,
        )
        self.ers_patches = Counter(
            "scaleset_listener_ers_patches",
            "Desired-count patches of the EphemeralRunnerSet.",
            registry=r,
        )
        self.stale_assigned = Gauge(
            "scaleset_listener_stale_assigned_jobs",
            "Assigned jobs not counted because they stayed unstarted while runners sat idle "
            "(only while those idle runners remain; never on statistics from failed polls).",
            registry=r,
        )

    def record_queue_duration(self, job: JobStarted) -> None:
        queued, assigned = _unix(job.queue_time), _unix(job.runner_assign_time)
        if queued is None or assigned is None:
            return
        labels = self.arc.job_labels(job)
        self.queue_seconds.labels(*(labels[key] for key in JOB_LABELS)).observe(assigned - queued)
