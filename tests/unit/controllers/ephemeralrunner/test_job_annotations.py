"""Job ↔ pod traceability: the job fields the listener records on a runner at JobStarted are
copied onto its live pod's annotations once, by the controller (the listener may not patch
pods), and never onto a pod that is gone, being deleted or finished."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from tests.unit.controllers.ephemeralrunner.builders import (
    NOW,
    annotated_for,
    busy,
    container,
    kinds,
    notes,
    observed,
    pod,
    reasons,
    registered,
    runner,
)

from scaleset.api import format_kube_time, keys
from scaleset.controllers.ephemeralrunner.actions import AnnotatePod
from scaleset.controllers.ephemeralrunner.observed import PodPatchForbidden, PodView
from scaleset.controllers.ephemeralrunner.plan import plan

JOB = {
    "jobRepositoryName": "acme/app",
    "jobWorkflowRef": "acme/app/.github/workflows/ci.yml@refs/heads/main",
    "jobDisplayName": "build (ubuntu)",
    "workflowRunId": 9001,
    "jobId": "e5f0c1d2",
    "jobRequestId": 77,
}


def busy_runner(**job: object) -> dict[str, object]:
    return runner(**busy(**(job or JOB)))


def live_pod(
    *, deleting: bool = False, job_annotations: Mapping[str, str] | None = None
) -> PodView:
    return pod(
        runner_container=container("running"),
        ready=True,
        deleting=deleting,
        job_annotations=job_annotations,
    )


def annotate_of(actions: Sequence[object]) -> AnnotatePod:
    [action] = [a for a in actions if isinstance(a, AnnotatePod)]
    return action


def test_a_busy_runners_pod_gets_its_job_in_one_patch_without_an_event() -> None:
    actions = plan(observed(busy_runner(), pod=live_pod()), NOW)
    assert kinds(actions) == ["AnnotatePod", "Wait"]
    assert dict(annotate_of(actions).annotations) == {
        "scaleset.dev/job-repository": "acme/app",
        "scaleset.dev/job-workflow-ref": "acme/app/.github/workflows/ci.yml@refs/heads/main",
        "scaleset.dev/job-display-name": "build (ubuntu)",
        "scaleset.dev/workflow-run-id": "9001",
        "scaleset.dev/job-id": "e5f0c1d2",
        "scaleset.dev/job-request-id": "77",
    }
    # counted, not announced: an Event per job would be one more write
    [note] = notes(actions)
    assert note.reason == "PodJobAnnotated"
    assert not note.message


def test_the_keys_are_scalesets_own() -> None:
    assert all(key.startswith("scaleset.dev/") for key in keys.JOB_ANNOTATIONS)


def test_a_pod_that_shows_the_job_is_not_patched_again() -> None:
    raw = busy_runner()
    view = live_pod(job_annotations=annotated_for(raw))
    assert kinds(plan(observed(raw, pod=view), NOW)) == ["Wait"]


def test_a_pod_with_other_values_is_given_the_runners() -> None:
    raw = busy_runner()
    stale = {key: "x" for key in annotated_for(raw)}
    actions = plan(observed(raw, pod=live_pod(job_annotations=stale)), NOW)
    assert dict(annotate_of(actions).annotations) == annotated_for(raw)


def test_only_the_fields_the_runner_has_are_written() -> None:
    raw = busy_runner(jobRequestId=5, jobId="j1", workflowRunId=9)
    actions = plan(observed(raw, pod=live_pod()), NOW)
    assert dict(annotate_of(actions).annotations) == {
        keys.JOB_ID_ANNOTATION: "j1",
        keys.JOB_REQUEST_ID_ANNOTATION: "5",
        keys.WORKFLOW_RUN_ID_ANNOTATION: "9",
    }


def test_the_status_write_comes_first_and_the_patch_with_it() -> None:
    """A runner whose start and job the controller sees in one pass: the status write (guarded
    by the runner's resourceVersion) first, the pod's annotations in the same reconcile."""
    raw = runner(**registered(phase="Pending", **JOB))
    actions = plan(observed(raw, pod=live_pod()), NOW)
    assert kinds(actions) == ["WriteStatus", "AnnotatePod", "Wait"]


def test_no_job_no_annotations() -> None:
    raw = runner(**registered(runnerStartedAt=format_kube_time(NOW), ready=True))
    assert "AnnotatePod" not in kinds(plan(observed(raw, pod=live_pod()), NOW))


def test_no_patch_for_a_pod_being_deleted_finished_or_gone() -> None:
    raw = busy_runner()
    for view in (
        live_pod(deleting=True),
        pod(phase="Succeeded", runner_container=container("terminated", exit_code=0)),
        pod(phase="Failed", runner_container=container("terminated", exit_code=1)),
        None,
    ):
        assert "AnnotatePod" not in kinds(plan(observed(raw, pod=view), NOW)), view


def test_no_patch_for_a_runner_being_deleted_or_past_its_grace() -> None:
    deleting = runner(deleting=True, **registered(phase="Running", **JOB))
    assert "AnnotatePod" not in kinds(plan(observed(deleting, pod=live_pod()), NOW))
    completion = {
        "runnerId": 42,
        "runnerName": "arc-runner-abc",
        "jobId": JOB["jobId"],
        "workflowRunId": JOB["workflowRunId"],
    }
    ended = busy_runner(
        **JOB,
        jobCompletion=completion,
        jobCompletionDeadline=format_kube_time(NOW - timedelta(seconds=1)),
    )
    assert "AnnotatePod" not in kinds(plan(observed(ended, pod=live_pod()), NOW))


def test_a_forbidden_patch_is_reported_once_and_not_tried_again() -> None:
    raw = busy_runner()
    refused = PodPatchForbidden('pods "arc-runner-abc" is forbidden')
    actions = plan(observed(raw, pod=live_pod(), feedback=(refused,)), NOW)
    assert kinds(actions) == ["Report", "Wait"]
    assert reasons(actions) == ["PodPatchForbidden"]
    [note] = notes(actions)
    assert note.warning
    assert "patch on pods" in note.message
    assert "namespace ns" in note.message
    # later reconciles of the same process: nothing, silently
    known = PodPatchForbidden(refused.message, announced=True)
    assert kinds(plan(observed(raw, pod=live_pod(), feedback=(known,)), NOW)) == ["Wait"]
