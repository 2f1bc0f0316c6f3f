"""The listener's metrics: ARC's names, labels and buckets, the config's
``metrics`` (the chart's ``listenerMetrics``) honoured, workflow-ref labels, and ours."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from scaleset.github import JobCompleted, JobStarted, RunnerScaleSetStatistic
from scaleset.listener.config import MetricSpec, MetricsSpec
from scaleset.listener.metrics import (
    DEFAULT_BUCKETS,
    ArcMetrics,
    ListenerMetrics,
    ScaleSetIdentity,
    WorkflowRef,
    parse_workflow_ref,
)

IDENTITY = ScaleSetIdentity("arc-runners", "arc", enterprise="", organization="acme")
SCALE_SET = {
    "enterprise": "",
    "organization": "acme",
    "repository": "",
    "name": "arc-runners",
    "namespace": "arc",
}
JOB = {
    "enterprise": "",
    "organization": "acme",
    "repository": "app",
    "job_name": "build",
    "event_name": "push",
}


def job(kind: type[JobStarted] | type[JobCompleted], **changes: Any) -> Any:
    body: dict[str, Any] = {
        "ownerName": "acme",
        "repositoryName": "app",
        "jobDisplayName": "build",
        "eventName": "push",
        "jobWorkflowRef": "acme/app/.github/workflows/ci.yml@refs/heads/main",
        "queueTime": "2027-01-15T08:00:00Z",
        "scaleSetAssignTime": "2027-01-15T08:00:02Z",
        "runnerAssignTime": "2027-01-15T08:00:09.900Z",
        "finishTime": "2027-01-15T08:01:10Z",
        "runnerName": "r1",
        "result": "succeeded",
    }
    body.update(changes)
    return kind.model_validate(body)


def sample(registry: CollectorRegistry, name: str, labels: dict[str, str]) -> float | None:
    return registry.get_sample_value(name, labels)


def test_the_default_set_is_arcs_with_arcs_labels() -> None:
    registry = CollectorRegistry()
    metrics = ArcMetrics(registry, IDENTITY)
    assert sorted(metrics.installed) == sorted(
        [
            "gha_assigned_jobs",
            "gha_running_jobs",
            "gha_registered_runners",
            "gha_busy_runners",
            "gha_idle_runners",
            "gha_min_runners",
            "gha_max_runners",
            "gha_desired_runners",
            "gha_started_jobs_total",
            "gha_completed_jobs_total",
            "gha_job_startup_duration_seconds",
            "gha_job_execution_duration_seconds",
        ]
    )
    metrics.record_static(1, 5)
    metrics.record_statistics(
        RunnerScaleSetStatistic(
            total_assigned_jobs=3,
            total_running_jobs=2,
            total_registered_runners=4,
            total_busy_runners=2,
            total_idle_runners=2,
            total_available_jobs=9,
        )
    )
    metrics.record_desired(4)
    expected = {
        "gha_min_runners": 1,
        "gha_max_runners": 5,
        "gha_assigned_jobs": 3,
        "gha_running_jobs": 2,
        "gha_registered_runners": 4,
        "gha_busy_runners": 2,
        "gha_idle_runners": 2,
        "gha_desired_runners": 4,
    }
    for name, value in expected.items():
        assert sample(registry, name, SCALE_SET) == value, name
    names = {m.name for m in registry.collect()}
    assert not any("available" in n or "acquired" in n for n in names)  # not exported by ARC


def test_job_metrics_use_the_message_labels_and_whole_seconds() -> None:
    registry = CollectorRegistry()
    metrics = ArcMetrics(registry, IDENTITY)
    metrics.record_job_started(job(JobStarted))
    metrics.record_job_completed(job(JobCompleted))
    assert sample(registry, "gha_started_jobs_total", JOB) == 1
    completed = {**JOB, "job_result": "succeeded"}
    assert sample(registry, "gha_completed_jobs_total", completed) == 1
    # startup: runnerAssignTime - scaleSetAssignTime in whole seconds (9 - 2 = 7)
    assert sample(registry, "gha_job_startup_duration_seconds_sum", JOB) == 7
    # execution: finishTime - runnerAssignTime in whole seconds (70 - 9 = 61)
    assert sample(registry, "gha_job_execution_duration_seconds_sum", completed) == 61
    assert sample(registry, "gha_job_startup_duration_seconds_bucket", {**JOB, "le": "0.01"}) == 0
    buckets = [
        s.labels["le"]
        for m in registry.collect()
        if m.name == "gha_job_startup_duration_seconds"
        for s in m.samples
        if s.name.endswith("_bucket")
    ]
    assert len(buckets) == len(DEFAULT_BUCKETS) + 1  # + Inf


def test_a_job_that_never_reached_a_runner_is_not_counted_as_completed() -> None:
    registry = CollectorRegistry()
    metrics = ArcMetrics(registry, IDENTITY)
    metrics.record_job_completed(
        job(JobCompleted, runnerAssignTime=None, runnerName="", result="canceled")
    )
    assert sample(registry, "gha_completed_jobs_total", {**JOB, "job_result": "canceled"}) is None


def test_listener_metrics_from_the_config_are_honoured() -> None:
    registry = CollectorRegistry()
    spec = MetricsSpec(
        counters={"gha_started_jobs_total": MetricSpec(labels=("repository", "job_workflow_name"))},
        gauges={"gha_desired_runners": MetricSpec(labels=()), "gha_made_up": MetricSpec()},
        histograms={
            "gha_job_startup_duration_seconds": MetricSpec(
                labels=("job_workflow_target",), buckets=(1, 10)
            )
        },
    )
    metrics = ArcMetrics(registry, IDENTITY, spec)
    assert sorted(metrics.installed) == [
        "gha_desired_runners",
        "gha_job_startup_duration_seconds",
        "gha_started_jobs_total",
    ]  # the unknown name is skipped
    metrics.record_desired(3)
    metrics.record_statistics(RunnerScaleSetStatistic(total_assigned_jobs=3))  # not installed
    metrics.record_job_started(job(JobStarted))
    assert sample(registry, "gha_desired_runners", {}) == 3
    labels = {"repository": "app", "job_workflow_name": "ci"}
    assert sample(registry, "gha_started_jobs_total", labels) == 1
    bucket = {"job_workflow_target": "heads/main", "le": "10.0"}
    assert sample(registry, "gha_job_startup_duration_seconds_bucket", bucket) == 1
    assert sample(registry, "gha_assigned_jobs", SCALE_SET) is None


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("acme/app/.github/workflows/ci.yml@refs/heads/main", WorkflowRef("ci", "heads/main")),
        ("acme/app/.github/workflows/ci.yml@refs/heads/feat/x", WorkflowRef("ci", "heads/feat/x")),
        ("acme/app/.github/workflows/rel.yaml@refs/tags/v1.2", WorkflowRef("rel", "tags/v1.2")),
        ("acme/app/.github/workflows/pr.yml@refs/pull/42/merge", WorkflowRef("pr", "pull/42")),
        ("acme/my-app/.github/workflows/a.b-c.yml@refs/heads/x", WorkflowRef("a.b-c", "heads/x")),
        ("", WorkflowRef()),
        ("acme/app/.github/workflows/ci.yml", WorkflowRef()),
        ("acme/app/.github/workflows/ci.yml@sha", WorkflowRef("ci", "")),
    ],
)
def test_workflow_ref_parsing(ref: str, expected: WorkflowRef) -> None:
    assert parse_workflow_ref(ref) == expected


def test_queue_duration_per_job_is_ours() -> None:
    metrics = ListenerMetrics(IDENTITY, registry=CollectorRegistry())
    metrics.record_queue_duration(job(JobStarted))
    assert sample(metrics.registry, "scaleset_listener_job_queue_duration_seconds_sum", JOB) == 9
    metrics.record_queue_duration(job(JobStarted, queueTime=None))  # unknown: not observed
    assert sample(metrics.registry, "scaleset_listener_job_queue_duration_seconds_count", JOB) == 1
