"""Properties of ``plan`` over random runners, pods, Secrets and GitHub answers: it never writes
``Running`` (L1), never makes a terminal runner anything else (L2), never gives a JIT config to a
second pod once its runner started (L5), and every pod it creates follows the status write that
records it (the write-ahead that makes "vanished without proof" detectable)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from tests.unit.controllers.ephemeralrunner.builders import (
    FINALIZERS,
    NAME,
    NOW,
    RUNNER_ID,
    SCALE_SET_ID,
    annotated_for,
    container,
    observed,
    pod,
    runner,
    secret,
)

from scaleset.api import TERMINAL_PHASES, format_kube_time
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.ephemeralrunner.actions import (
    AnnotatePod,
    CreatePod,
    DeletePod,
    DeleteSecret,
    RegisterRunner,
    Wait,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunner.observed import (
    HookPodsDeleted,
    NameTaken,
    Observed,
    PodPatchForbidden,
    PodRefused,
    RegistrationBusy,
    RegistrationRemoved,
)
from scaleset.controllers.ephemeralrunner.plan import decides_without_secret, plan

PHASES = ["", "Pending", "Running", "Failed", "Succeeded", "Outdated"]
OFFSETS = st.integers(-2000, 2000).map(lambda s: NOW + timedelta(seconds=s))


@st.composite
def statuses(draw: st.DrawFn) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": draw(st.sampled_from(PHASES))}
    if draw(st.booleans()):
        status["runnerId"] = RUNNER_ID
        status["runnerName"] = NAME
    status["ready"] = draw(st.booleans())
    if draw(st.booleans()):
        status["runnerStartedAt"] = format_kube_time(draw(OFFSETS))
    if draw(st.booleans()):
        status.update(jobId="j1", jobRequestId=5, workflowRunId=9)
    if draw(st.booleans()):
        status["jobCompletion"] = {
            "runnerId": draw(st.sampled_from([RUNNER_ID, 1])),
            "runnerName": draw(st.sampled_from([NAME, "other"])),
            "jobId": draw(st.sampled_from(["j1", "j2"])),
            "workflowRunId": draw(st.sampled_from([9, 10])),
        }
        if draw(st.booleans()):
            status["jobCompletionDeadline"] = format_kube_time(draw(OFFSETS))
    count = draw(st.integers(0, 6))
    if count:
        status["failures"] = {f"p{n}": format_kube_time(draw(OFFSETS)) for n in range(count)}
    if draw(st.booleans()):
        status["conditions"] = [
            {
                "type": draw(st.sampled_from(["RetryPod", "Configured"])),
                "status": draw(st.sampled_from(["True", "False"])),
                "reason": draw(st.sampled_from(["QuotaExceeded", "ImagePullFailed", "X"])),
                "lastTransitionTime": format_kube_time(draw(OFFSETS)),
            }
        ]
    return status


@st.composite
def pods(draw: st.DrawFn) -> Any:
    state = draw(st.sampled_from(["", "waiting", "running", "terminated"]))
    runner_container = None
    if state:
        runner_container = container(
            state,
            reason=draw(
                st.sampled_from(["", "ImagePullBackOff", "OOMKilled", "Error", "Completed"])
            ),
            exit_code=draw(st.sampled_from([0, 1, 7, 137])) if state == "terminated" else None,
            ran=draw(st.booleans()) if state == "waiting" else None,
        )
    return pod(
        phase=draw(st.sampled_from(["Pending", "Running", "Failed", "Succeeded"])),
        runner_container=runner_container,
        ready=draw(st.booleans()),
        reason=draw(st.sampled_from(["", "Evicted", "OutOfcpu", "Unschedulable"])),
        deleting=draw(st.booleans()),
        created=draw(OFFSETS),
        failed_init=draw(st.sampled_from(["", "setup"])),
    )


FEEDBACK = st.lists(
    st.sampled_from(
        [
            NameTaken(True, 99, SCALE_SET_ID),
            NameTaken(True, 99, 1234),
            NameTaken(False),
            RegistrationBusy(RUNNER_ID),
            RegistrationRemoved(RUNNER_ID),
            RegistrationRemoved(99),
            GitHubProblem("GitHubSecretMissing", "spec.githubConfigSecret", "missing"),
            PodRefused("quota", "exceeded quota: q"),
            PodRefused("invalid", "bad"),
            HookPodsDeleted(),
            PodPatchForbidden("pods is forbidden"),
            PodPatchForbidden("pods is forbidden", announced=True),
        ]
    ),
    max_size=3,
).map(tuple)


@st.composite
def observations(draw: st.DrawFn) -> Observed:
    raw = runner(
        finalizers=draw(st.sampled_from([FINALIZERS, [], ["other.io/x", *FINALIZERS]])),
        deleting=draw(st.booleans()),
        created=draw(OFFSETS),
        **draw(statuses()),
    )
    return observed(
        raw,
        pod=draw(st.none() | pods()),
        secret=draw(st.none() | st.just(secret())),
        feedback=draw(FEEDBACK),
    )


def started(case: Observed) -> bool:
    status = case.runner.status
    return (
        status.runner_started_at is not None
        or status.has_job
        or (case.pod is not None and case.pod.runner_started)
    )


@hypothesis_settings(max_examples=3000, deadline=None)
@given(case=observations(), now=OFFSETS)
def test_L1_L2_L5_plan_never_sets_running_resurrects_or_reuses_a_spent_jit_config(
    case: Observed, now: Any
) -> None:
    actions = plan(case, now)
    writes = [a for a in actions if isinstance(a, WriteStatus)]
    phases = [w.changes["phase"] for w in writes if "phase" in w.changes]
    # L1: the controller never writes Running.
    assert "Running" not in phases
    # L2: a terminal runner only loses its pod and Secret; it is never made non-terminal.
    if case.runner.status.phase in TERMINAL_PHASES:
        assert all(isinstance(a, DeletePod | DeleteSecret | Wait) for a in actions) or (
            case.runner.metadata.is_deleting
        )
        assert not phases
    # L5: a runner that started never gets another pod (nor a fresh registration).
    if started(case):
        assert not any(isinstance(a, CreatePod | RegisterRunner) for a in actions)
    # A pod is only ever created right after the status write that records it.
    for index, action in enumerate(actions):
        if isinstance(action, CreatePod):
            assert index > 0
            assert isinstance(actions[index - 1], WriteStatus)
            assert case.pod is None
    # At most one status write per plan, first; at most one Wait, last.
    assert len(writes) <= 1
    if writes:
        assert actions.index(writes[0]) == 0 or not isinstance(actions[0], WriteStatus)
    waits = [a for a in actions if isinstance(a, Wait)]
    assert len(waits) <= 1
    assert not waits or actions[-1] is waits[0]


@st.composite
def registered_with_unstarted_pods(draw: st.DrawFn) -> Observed:
    """A registered runner, not being deleted, not terminal, whose pod has not started its
    runner — everything else random."""
    status = draw(statuses())
    status.pop("runnerStartedAt", None)
    status.update(runnerId=RUNNER_ID, runnerName=NAME)
    if status["phase"] in TERMINAL_PHASES:
        status["phase"] = draw(st.sampled_from(["", "Pending", "Running"]))
    raw = runner(
        finalizers=draw(st.sampled_from([FINALIZERS, [], ["other.io/x", *FINALIZERS]])),
        created=draw(OFFSETS),
        **status,
    )
    unstarted = pods().filter(lambda view: not view.runner_started)
    return observed(raw, pod=draw(unstarted), secret=secret(), feedback=draw(FEEDBACK))


@hypothesis_settings(max_examples=1000, deadline=None)
@given(case=observations() | registered_with_unstarted_pods(), now=OFFSETS)
def test_the_plan_of_a_runner_whose_pod_has_not_started_does_not_depend_on_its_jit_secret(
    case: Observed, now: Any
) -> None:
    """What lets the reconciler skip the JIT Secret GET while a pod starts
    (``decides_without_secret``): the plan is the same with the Secret and without it."""
    if not decides_without_secret(case.runner, case.pod):
        return
    with_secret = replace(case, secret=secret())
    without = replace(case, secret=None)
    assert plan(with_secret, now) == plan(without, now)


JOB_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "jobRepositoryName": st.sampled_from(["acme/app", "acme/other"]),
        "jobWorkflowRef": st.just("acme/app/.github/workflows/ci.yml@refs/heads/main"),
        "jobDisplayName": st.sampled_from(["build", "test (3.12, ubuntu)"]),
        "workflowRunId": st.integers(0, 3),
        "jobId": st.sampled_from(["", "j1"]),
        "jobRequestId": st.integers(0, 3),
    },
)


@st.composite
def job_observations(draw: st.DrawFn) -> Observed:
    """Any observation, its runner given random job fields and its pod (if any) none, some or
    all of the job annotations (or stale values)."""
    case = draw(observations())
    raw = dict(case.obj.raw)
    raw["status"] = {**raw["status"], **draw(JOB_FIELDS)}
    fresh = observed(raw, pod=case.pod, secret=case.secret, feedback=case.feedback)
    if fresh.pod is None:
        return fresh
    wanted = annotated_for(raw)
    shown = draw(st.sampled_from(["none", "all", "some", "stale"]))
    if shown == "all":
        annotations = wanted
    elif shown == "some":
        annotations = dict(list(wanted.items())[: len(wanted) // 2])
    elif shown == "stale":
        annotations = {key: f"old-{value}" for key, value in wanted.items()}
    else:
        annotations = {}
    return replace(fresh, pod=replace(fresh.pod, job_annotations=annotations))


@hypothesis_settings(max_examples=2000, deadline=None)
@given(case=job_observations(), now=OFFSETS)
def test_a_runners_job_is_written_on_its_live_pod_exactly_once(case: Observed, now: Any) -> None:
    actions = plan(case, now)
    annotate = [a for a in actions if isinstance(a, AnnotatePod)]
    assert len(annotate) <= 1
    if not annotate:
        return
    pod_view = case.pod
    # only a live pod (never one being deleted or finished), of a live runner with a job
    assert pod_view is not None
    assert pod_view.alive
    assert not case.runner.metadata.is_deleting
    assert case.runner.status.phase not in TERMINAL_PHASES
    assert case.runner.status.has_job
    # exactly the runner's job fields, none made up
    assert dict(annotate[0].annotations) == annotated_for(case.obj.raw)
    assert not isinstance(case.learned(PodPatchForbidden), PodPatchForbidden)
    # once: with the patch applied (a merge of the annotations), the next plan writes nothing
    merged = {**pod_view.job_annotations, **annotate[0].annotations}
    again = replace(case, pod=replace(pod_view, job_annotations=merged))
    assert not any(isinstance(a, AnnotatePod) for a in plan(again, now))
