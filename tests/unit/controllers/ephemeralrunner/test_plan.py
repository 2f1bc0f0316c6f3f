"""``plan`` rule by rule (no server): every row of its decision table, and the lifecycle rules
(L1, L2, L4, L5, L8, L9) each row keeps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.unit.controllers.ephemeralrunner.builders import (
    NAME,
    NOW,
    POD_UID,
    POD_VERSION,
    RUNNER_ID,
    SCALE_SET_ID,
    SECRET_UID,
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
    secret,
    template,
    wait_of,
)

from scaleset.api import format_kube_time, keys
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.ephemeralrunner.actions import (
    FINALIZERS_ADDED,
    FINALIZERS_REMOVED,
    AddFinalizers,
    CreatePod,
    DeletePod,
    DeleteRunner,
    DeleteSecret,
    RemoveFinalizers,
    RemoveRegistration,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunner.observed import (
    HookPodsDeleted,
    NameTaken,
    PodRefused,
    RegistrationBusy,
    RegistrationRemoved,
)
from scaleset.controllers.ephemeralrunner.plan import plan
from scaleset.controllers.ephemeralrunner.settings import Settings


def status_write(actions: list[object]) -> dict[str, object]:
    writes = [a for a in actions if isinstance(a, WriteStatus)]
    assert len(writes) == 1, actions
    assert actions[0] is writes[0] or not isinstance(actions[0], WriteStatus)
    return dict(writes[0].changes)


# --- finalizers, registration and the first pod --------------------------------------------


def test_missing_finalizers_are_added_first() -> None:
    actions = plan(observed(runner(finalizers=["other.io/keep"])), NOW)
    assert actions == [
        AddFinalizers(
            ("other.io/keep",),
            (keys.EPHEMERAL_RUNNER_FINALIZER, keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER),
            FINALIZERS_ADDED,
        )
    ]


def test_a_new_runner_is_registered() -> None:
    assert kinds(plan(observed(), NOW)) == ["RegisterRunner"]


def test_L1_registered_runner_gets_pending_with_its_id_then_its_pod() -> None:
    actions = plan(observed(secret=secret()), NOW)
    assert kinds(actions) == ["WriteStatus", "CreatePod", "Wait"]
    changes = status_write(actions)
    assert changes["phase"] == "Pending"
    assert (changes["runnerId"], changes["runnerName"]) == (RUNNER_ID, NAME)
    [record] = changes["conditions"]  # type: ignore[misc]
    assert (record["type"], record["status"]) == ("RunnerPod", "True")
    assert record["lastTransitionTime"] == format_kube_time(NOW)


def test_a_secret_without_a_runner_id_is_recreated() -> None:
    actions = plan(observed(secret=secret(runner_id=0)), NOW)
    assert kinds(actions) == ["DeleteSecret"]
    assert reasons(actions) == ["JitSecretInvalid"]


def test_agent_exists_in_our_scale_set_removes_the_idle_registration_then_registers() -> None:
    taken = NameTaken(True, 99, SCALE_SET_ID)
    actions = plan(observed(feedback=(taken,)), NOW)
    assert actions[0] == RemoveRegistration(99, actions[0].note)  # type: ignore[union-attr]
    assert reasons(actions) == ["StaleRegistration"]
    after = plan(observed(feedback=(taken, RegistrationRemoved(99))), NOW)
    assert kinds(after) == ["RegisterRunner"]


def test_agent_exists_and_busy_waits_with_an_event() -> None:
    actions = plan(observed(feedback=(NameTaken(True, 99, 7), RegistrationBusy(99))), NOW)
    assert kinds(actions) == ["Report", "Wait"]
    assert notes(actions)[0].reason == "RunnerNameBusy"
    assert notes(actions)[0].warning
    assert wait_of(actions).seconds == 30.0


def test_agent_exists_in_another_scale_set_replaces_the_runner() -> None:
    actions = plan(observed(feedback=(NameTaken(True, 99, 1234),)), NOW)
    assert kinds(actions) == ["DeleteRunner"]
    assert reasons(actions) == ["RunnerNameInOtherScaleSet"]


def test_agent_exists_but_not_found_by_name_backs_off() -> None:
    actions = plan(observed(feedback=(NameTaken(False),)), NOW)
    assert kinds(actions) == ["Report", "Wait"]
    assert wait_of(actions).seconds == 30.0


# --- L8: bad input ---------------------------------------------------------------------------


def test_L5_a_template_asking_for_restarts_is_failed_invalid_pod_before_registering() -> None:
    raw = runner(spec={"spec": template(restartPolicy="OnFailure")})
    actions = plan(observed(raw), NOW)
    assert kinds(actions) == ["WriteStatus"]
    changes = status_write(actions)
    assert (changes["phase"], changes["reason"]) == ("Failed", "InvalidPod")
    assert "spec.spec.restartPolicy" in str(changes["message"])
    [condition] = changes["conditions"]  # type: ignore[misc]
    assert condition["type"] == "Configured"
    assert condition["status"] == "False"
    assert "spec.spec.restartPolicy" in condition["message"]
    assert notes(actions)[0].reason == "InvalidPod"
    assert notes(actions)[0].warning


def test_L8_a_template_without_a_runner_container_is_failed_naming_the_field() -> None:
    raw = runner(spec={"spec": {"containers": [{"name": "sidecar", "image": "x"}]}})
    changes = status_write(plan(observed(raw), NOW))
    assert changes["phase"] == "Failed"
    assert str(changes["message"]).startswith("spec.spec.containers")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"githubConfigSecret": ""}, "spec.githubConfigSecret"),
        ({"githubConfigUrl": "not a url"}, "spec.githubConfigUrl"),
        ({"runnerScaleSetId": "7"}, "spec.runnerScaleSetId"),
    ],
)
def test_L8_a_malformed_spec_gets_a_condition_naming_the_field_and_backs_off(
    spec: dict[str, object], field: str
) -> None:
    actions = plan(observed(runner(spec=spec)), NOW)
    assert kinds(actions) == ["WriteStatus", "Wait"]
    [condition] = status_write(actions)["conditions"]  # type: ignore[misc]
    assert condition["reason"] == "InvalidSpec"
    assert condition["message"].startswith(field)
    assert notes(actions)[0].message.startswith(field)
    assert wait_of(actions).seconds == 10.0


def test_L8_the_back_off_grows_while_the_problem_lasts_without_rewriting_status() -> None:
    since = NOW - timedelta(seconds=200)
    message = "spec.githubConfigSecret: is required (the Secret with the GitHub credentials)"
    condition = {
        "type": "Configured",
        "status": "False",
        "reason": "InvalidSpec",
        "message": message,
        "lastTransitionTime": format_kube_time(since),
    }
    raw = runner(spec={"githubConfigSecret": ""}, conditions=[condition])
    actions = plan(observed(raw), NOW)
    assert kinds(actions) == ["Report", "Wait"]
    assert wait_of(actions).seconds == 100.0


def test_L8_a_missing_github_secret_is_a_condition_naming_the_field() -> None:
    unusable = GitHubProblem(
        "GitHubSecretMissing", "spec.githubConfigSecret", "Secret ns/github-config does not exist"
    )
    actions = plan(observed(feedback=(unusable,)), NOW)
    [condition] = status_write(actions)["conditions"]  # type: ignore[misc]
    assert condition["reason"] == "GitHubSecretMissing"
    assert condition["message"].startswith("spec.githubConfigSecret: Secret ns/github-config")


def test_L8_a_resolved_problem_clears_its_condition_in_the_next_status_write() -> None:
    condition = {"type": "Configured", "status": "False", "reason": "GitHubSecretMissing"}
    actions = plan(observed(runner(conditions=[condition]), secret=secret()), NOW)
    assert [c["type"] for c in status_write(actions)["conditions"]] == ["RunnerPod"]  # type: ignore[attr-defined]


# --- L1 / L2: what the phase may become -------------------------------------------------------


def test_L1_status_ready_follows_the_pod_and_never_sets_running() -> None:
    view = pod(runner_container=container("running"), ready=True)
    raw = runner(**registered(runnerStartedAt=format_kube_time(NOW)))
    actions = plan(observed(raw, pod=view), NOW)
    changes = status_write(actions)
    assert changes == {"ready": True}


def test_L1_takeover_demotes_an_idle_running_runner_once_with_an_event() -> None:
    raw = runner(**registered(phase="Running", ready=True, runnerStartedAt=format_kube_time(NOW)))
    view = pod(runner_container=container("running"), ready=True)
    actions = plan(observed(raw, pod=view), NOW)
    assert status_write(actions) == {"phase": "Pending"}
    [note] = notes(actions)
    assert note.reason == "DemotedIdleRunner"
    assert note.message


def test_L1_a_running_runner_with_a_job_keeps_running() -> None:
    raw = runner(
        **registered(phase="Running", ready=True, jobId="j1", jobRequestId=5),
        runnerStartedAt=format_kube_time(NOW),
    )
    view = pod(
        runner_container=container("running"), ready=True, job_annotations=annotated_for(raw)
    )
    assert kinds(plan(observed(raw, pod=view), NOW)) == ["Wait"]


def test_L1_an_empty_phase_with_a_pod_becomes_pending() -> None:
    raw = runner(runnerId=RUNNER_ID)
    view = pod(phase="Pending", runner_container=container("waiting", "ContainerCreating"))
    assert status_write(plan(observed(raw, pod=view), NOW))["phase"] == "Pending"


@pytest.mark.parametrize("phase", ["Failed", "Succeeded", "Outdated"])
def test_L2_a_terminal_runner_only_loses_its_pod_and_secret(phase: str) -> None:
    view = pod(runner_container=container("running"), ready=True)
    actions = plan(observed(runner(**registered(phase=phase)), pod=view, secret=secret()), NOW)
    assert actions[:2] == [DeletePod(POD_UID), DeleteSecret(SECRET_UID)]
    assert kinds(actions) == ["DeletePod", "DeleteSecret", "Wait"]


# --- L5: the runner starts once ---------------------------------------------------------------


def test_L5_runner_start_is_recorded_then_the_jit_secret_is_deleted() -> None:
    view = pod(runner_container=container("running"), ready=True)
    actions = plan(observed(runner(**registered()), pod=view, secret=secret()), NOW)
    assert kinds(actions) == ["WriteStatus", "DeleteSecret", "Wait"]
    assert status_write(actions) == {"runnerStartedAt": format_kube_time(NOW), "ready": True}
    assert "RunnerStarted" in reasons(actions)


def test_L5_a_jit_secret_left_after_a_recorded_start_is_deleted() -> None:
    raw = runner(**registered(ready=True, runnerStartedAt=format_kube_time(NOW)))
    view = pod(runner_container=container("running"), ready=True)
    assert kinds(plan(observed(raw, pod=view, secret=secret()), NOW)) == ["DeleteSecret", "Wait"]


def test_L5_exit_0_is_done() -> None:
    view = pod(phase="Succeeded", runner_container=container("terminated", "Completed", 0))
    actions = plan(observed(runner(**registered()), pod=view), NOW)
    assert kinds(actions) == ["DeleteRunner"]
    assert reasons(actions) == ["RunnerSucceeded"]
    # decided on the runner container's exit, which no write to the runner can undo: the
    # listener's JobCompleted landing meanwhile must not make the deletion a 409 and a retry
    assert actions[0] == DeleteRunner(actions[0].note, guarded=False)  # type: ignore[union-attr]


def test_L5_exit_7_is_outdated_and_the_registration_removed() -> None:
    view = pod(phase="Failed", runner_container=container("terminated", "Error", 7))
    actions = plan(observed(runner(**registered()), pod=view), NOW)
    assert kinds(actions) == ["WriteStatus", "RemoveRegistration"]
    changes = status_write(actions)
    assert (changes["phase"], changes["reason"]) == ("Outdated", "Outdated")
    assert actions[1] == RemoveRegistration(RUNNER_ID)


@pytest.mark.parametrize(
    ("runner_container", "has_job", "reason"),
    [
        (container("terminated", "Error", 1), False, "RunnerFailed"),
        (container("terminated", "Error", 1), True, "RunnerFailed"),
        (container("terminated", "OOMKilled", 137), True, "RunnerOOMKilled"),
        (container("terminated", "OOMKilled", 137), False, "RunnerOOMKilled"),
    ],
)
def test_L5_a_runner_that_ran_and_failed_is_replaced_never_restarted(
    runner_container: object, has_job: bool, reason: str
) -> None:
    job = {"jobId": "j1", "jobRequestId": 5, "phase": "Running"} if has_job else {}
    view = pod(phase="Failed", runner_container=runner_container)  # type: ignore[arg-type]
    actions = plan(observed(runner(**registered(**job)), pod=view), NOW)
    assert kinds(actions) == ["DeleteRunner"]
    assert reasons(actions) == [reason]
    assert actions[0] == DeleteRunner(actions[0].note, guarded=False)  # type: ignore[union-attr]


def test_L5_an_evicted_pod_whose_runner_ran_is_replaced() -> None:
    view = pod(
        phase="Failed", reason="Evicted", runner_container=container("terminated", "Error", 137)
    )
    assert reasons(plan(observed(runner(**registered()), pod=view), NOW)) == [
        "PodEvictedAfterStart"
    ]


@pytest.mark.parametrize(
    ("view", "proof"),
    [
        (
            pod(phase="Pending", runner_container=container("waiting", "ImagePullBackOff")),
            "ImagePullFailed",
        ),
        (
            pod(phase="Pending", runner_container=container("waiting", "ErrImagePull")),
            "ImagePullFailed",
        ),
        (
            pod(
                phase="Pending", runner_container=container("waiting", "CreateContainerConfigError")
            ),
            "ContainerConfigError",
        ),
        (pod(phase="Failed", reason="OutOfcpu"), "AdmissionRejected"),
        (pod(phase="Failed", reason="OutOfmemory"), "AdmissionRejected"),
        (pod(phase="Pending", failed_init="setup"), "InitContainerFailed"),
        (pod(phase="Failed", reason="Evicted"), "PodFailedBeforeStart"),
    ],
)
def test_L5_a_pod_proving_its_runner_never_started_is_retried_with_the_same_config(
    view: object, proof: str
) -> None:
    actions = plan(observed(runner(**registered()), pod=view, secret=secret()), NOW)  # type: ignore[arg-type]
    # L5: the pod is deleted only as it was read (a runner that started since keeps it), and
    # only then is the retry granted
    assert kinds(actions) == ["DeletePod", "WriteStatus", "Wait"]
    assert (actions[0].uid, actions[0].resource_version) == (POD_UID, POD_VERSION)  # type: ignore[union-attr]
    changes = status_write(actions)
    assert changes["failures"] == {POD_UID: format_kube_time(NOW)}
    [condition] = changes["conditions"]  # type: ignore[misc]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "RetryPod",
        "True",
        proof,
    )
    assert reasons(actions) == [proof]  # announced once the deletion went through
    assert wait_of(actions).seconds == 5.0


def test_L5_a_failed_pod_already_recorded_is_deleted_again_without_a_second_decision() -> None:
    # The pass that recorded the failure deleted the pod, but the pod cache does not show the
    # deletion yet: the next pass finishes the deletion and decides (and counts) nothing twice.
    view = pod(phase="Pending", runner_container=container("waiting", "ImagePullBackOff"))
    failures = {POD_UID: format_kube_time(NOW - timedelta(seconds=1))}
    actions = plan(observed(runner(**registered(failures=failures)), pod=view), NOW)
    assert kinds(actions) == ["DeletePod", "Wait"]  # no status write
    assert actions[0] == DeletePod(POD_UID, resource_version=POD_VERSION)
    assert "ImagePullFailed" not in reasons(actions)


def test_L5_an_init_container_failure_after_a_job_started_replaces_the_runner() -> None:
    raw = runner(**registered(jobId="j1", jobRequestId=5))
    view = pod(phase="Pending", failed_init="setup")
    assert kinds(plan(observed(raw, pod=view), NOW)) == ["DeleteRunner"]


def test_L5_the_fifth_failure_replaces_the_runner() -> None:
    failures = {f"old-{n}": format_kube_time(NOW - timedelta(seconds=100 - n)) for n in range(4)}
    view = pod(phase="Pending", runner_container=container("waiting", "ImagePullBackOff"))
    actions = plan(observed(runner(**registered(failures=failures)), pod=view), NOW)
    assert kinds(actions) == ["DeleteRunner"]
    assert reasons(actions) == ["ReplacedAfterFailures"]


def test_L5_the_failure_cap_is_configurable() -> None:
    view = pod(phase="Pending", runner_container=container("waiting", "ImagePullBackOff"))
    settings = Settings(max_failures=1)
    actions = plan(observed(runner(**registered()), pod=view, settings=settings), NOW)
    assert reasons(actions) == ["ReplacedAfterFailures"]


def retry_condition(reason: str, at: object) -> dict[str, object]:
    return {
        "type": "RetryPod",
        "status": "True",
        "reason": reason,
        "message": "m",
        "lastTransitionTime": format_kube_time(at),  # type: ignore[arg-type]
    }


@pytest.mark.parametrize(("count", "backoff"), [(1, 5.0), (2, 10.0), (3, 20.0), (4, 40.0)])
def test_L5_the_retry_waits_its_backoff_then_consumes_the_retry_before_the_pod(
    count: int, backoff: float
) -> None:
    last = NOW - timedelta(seconds=2)
    failures = {f"p{n}": format_kube_time(last - timedelta(seconds=n)) for n in range(count)}
    raw = runner(
        **registered(failures=failures, conditions=[retry_condition("ImagePullFailed", last)])
    )
    waiting = plan(observed(raw, secret=secret()), NOW)
    assert kinds(waiting) == ["Wait"]
    assert wait_of(waiting).seconds == pytest.approx(backoff - 2)
    due = plan(observed(raw, secret=secret()), last + timedelta(seconds=backoff))
    assert kinds(due) == ["WriteStatus", "CreatePod", "Wait"]
    [record] = status_write(due)["conditions"]  # type: ignore[misc]
    assert record["type"] == "RunnerPod"
    assert record["lastTransitionTime"] == format_kube_time(last + timedelta(seconds=backoff))
    assert "PodRetry" in reasons(due)


def test_L5_a_due_retry_without_its_jit_secret_replaces_the_runner() -> None:
    raw = runner(
        **registered(
            failures={"p": format_kube_time(NOW - timedelta(seconds=60))},
            conditions=[retry_condition("ImagePullFailed", NOW - timedelta(seconds=60))],
        )
    )
    assert reasons(plan(observed(raw), NOW)) == ["JitSecretMissing"]


def test_L5_a_pod_gone_after_its_runner_started_replaces_the_runner() -> None:
    raw = runner(**registered(runnerStartedAt=format_kube_time(NOW)))
    actions = plan(observed(raw, secret=secret()), NOW)
    assert kinds(actions) == ["DeleteRunner"]
    assert reasons(actions) == ["PodLostAfterStart"]


def test_L5_a_pod_gone_with_a_job_replaces_the_runner() -> None:
    raw = runner(**registered(phase="Running", jobId="j1", jobRequestId=5))
    assert reasons(plan(observed(raw, secret=secret()), NOW)) == ["PodLostAfterStart"]


def test_L5_a_pod_that_vanished_without_proof_is_never_recreated() -> None:
    """The seed incident: the pod ran and vanished between two reconciles, so no start was ever
    recorded. Pending (written before the pod was created) without a pod and without a retry
    earned means: replace."""
    actions = plan(observed(runner(**registered()), secret=secret()), NOW)
    assert kinds(actions) == ["DeleteRunner"]
    assert reasons(actions) == ["PodLost"]


def test_L5_quota_refusal_earns_a_retry_with_backoff() -> None:
    refused = PodRefused("quota", 'pods "x" is forbidden: exceeded quota: q')
    actions = plan(observed(runner(**registered()), secret=secret(), feedback=(refused,)), NOW)
    assert kinds(actions) == ["WriteStatus", "Wait"]
    [condition] = status_write(actions)["conditions"]  # type: ignore[misc]
    assert (condition["type"], condition["reason"]) == ("RetryPod", "QuotaExceeded")
    assert wait_of(actions).seconds == 15.0  # a 60 s old runner: age / 4


def test_L5_quota_retry_is_due_after_its_backoff() -> None:
    since = NOW - timedelta(seconds=30)
    raw = runner(**registered(conditions=[retry_condition("QuotaExceeded", since)]))
    assert kinds(plan(observed(raw, secret=secret()), NOW)) == ["WriteStatus", "CreatePod", "Wait"]


def test_L5_quota_refusal_for_ten_minutes_replaces_the_runner() -> None:
    raw = runner(created=NOW - timedelta(minutes=10), **registered())
    refused = PodRefused("quota", "exceeded quota: q")
    actions = plan(observed(raw, secret=secret(), feedback=(refused,)), NOW)
    assert reasons(actions) == ["QuotaExceededTooLong"]


def test_L5_an_invalid_pod_fails_the_runner_and_removes_its_registration() -> None:
    refused = PodRefused("invalid", 'Pod "x" is invalid: spec.priorityClassName: not found')
    actions = plan(observed(runner(**registered()), secret=secret(), feedback=(refused,)), NOW)
    assert kinds(actions) == ["WriteStatus", "RemoveRegistration"]
    changes = status_write(actions)
    assert (changes["phase"], changes["reason"]) == ("Failed", "InvalidPod")
    assert "Failed to create the pod:" in str(changes["message"])


def test_a_pod_stuck_pending_past_the_timeout_is_replaced() -> None:
    view = pod(
        phase="Pending",
        runner_container=None,
        created=NOW - timedelta(minutes=15),
        reason="Unschedulable",
    )
    actions = plan(observed(runner(**registered()), pod=view, secret=secret()), NOW)
    assert reasons(actions) == ["PodPendingTimeout"]
    assert "Unschedulable" in notes(actions)[0].message
    # decided on the runner not having started: a Running written meanwhile must stop it
    assert actions[0] == DeleteRunner(actions[0].note, guarded=True)  # type: ignore[union-attr]


def test_a_pending_pod_is_looked_at_again_at_its_timeout() -> None:
    view = pod(phase="Pending", created=NOW - timedelta(minutes=5))
    actions = plan(observed(runner(**registered()), pod=view, secret=secret()), NOW)
    assert kinds(actions) == ["Wait"]
    assert wait_of(actions).seconds == 600.0


def test_the_pending_timeout_runs_from_our_own_record_of_the_pod_creation() -> None:
    """The pod's creationTimestamp is the API server's clock; our record is the controller's."""
    record = {
        "type": "RunnerPod",
        "status": "True",
        "reason": "Created",
        "lastTransitionTime": format_kube_time(NOW - timedelta(minutes=1)),
    }
    view = pod(phase="Pending", created=NOW - timedelta(days=30))
    actions = plan(observed(runner(**registered(conditions=[record])), pod=view), NOW)
    assert wait_of(actions).seconds == 14 * 60.0


def test_the_pending_timeout_is_configurable() -> None:
    view = pod(phase="Pending", created=NOW - timedelta(seconds=61))
    settings = Settings(pod_pending_timeout=60)
    actions = plan(observed(runner(**registered()), pod=view, settings=settings), NOW)
    assert reasons(actions) == ["PodPendingTimeout"]


# --- L4: a finished job ends its runner -------------------------------------------------------


def completion(**fields: object) -> dict[str, object]:
    return {
        "result": "succeeded",
        "runnerId": RUNNER_ID,
        "runnerName": NAME,
        "jobId": "j1",
        "workflowRunId": 9,
        **fields,
    }


def live_pod() -> object:
    """The pod of a ``busy()`` runner, its job annotations written."""
    return pod(
        runner_container=container("running"),
        ready=True,
        job_annotations=annotated_for(runner(**busy())),
    )


def test_L4_a_matching_completion_stores_the_grace_deadline_once() -> None:
    raw = runner(**busy(jobCompletion=completion()))
    grace = Settings().grace_period  # the default
    actions = plan(observed(raw, pod=live_pod()), NOW)  # type: ignore[arg-type]
    assert status_write(actions) == {
        "jobCompletionDeadline": format_kube_time(NOW + timedelta(seconds=grace))
    }
    assert "JobCompletionObserved" in reasons(actions)
    assert wait_of(actions).seconds == grace


def test_L4_the_grace_period_is_configurable() -> None:
    raw = runner(**busy(jobCompletion=completion()))
    settings = Settings(grace_period=5)
    changes = status_write(plan(observed(raw, pod=live_pod(), settings=settings), NOW))  # type: ignore[arg-type]
    assert changes["jobCompletionDeadline"] == format_kube_time(NOW + timedelta(seconds=5))


def test_L4_before_the_deadline_nothing_is_deleted() -> None:
    deadline = format_kube_time(NOW + timedelta(seconds=12))
    raw = runner(**busy(jobCompletion=completion(), jobCompletionDeadline=deadline))
    actions = plan(observed(raw, pod=live_pod()), NOW)  # type: ignore[arg-type]
    assert kinds(actions) == ["Wait"]
    assert wait_of(actions).seconds == 12.0


def test_L4_after_the_deadline_pod_then_registration_then_runner() -> None:
    deadline = format_kube_time(NOW - timedelta(seconds=1))
    raw = runner(**busy(jobCompletion=completion(), jobCompletionDeadline=deadline))
    actions = plan(observed(raw, pod=live_pod()), NOW)  # type: ignore[arg-type]
    assert kinds(actions) == ["DeletePod", "RemoveRegistration"]
    assert reasons(actions)[0] == "JobCompletedRunnerAlive"
    # the job is over and a hung process ignores SIGTERM: no 30 s termination grace
    assert actions[0].grace_seconds == 1  # type: ignore[union-attr]
    after = plan(
        observed(raw, pod=pod(deleting=True), feedback=(RegistrationRemoved(RUNNER_ID),)), NOW
    )
    assert kinds(after) == ["DeleteRunner"]
    assert reasons(after) == ["JobCompletedRunnerEnded"]


def test_L4_a_busy_registration_after_the_deadline_is_retried_with_an_event() -> None:
    deadline = format_kube_time(NOW - timedelta(seconds=1))
    raw = runner(**busy(jobCompletion=completion(), jobCompletionDeadline=deadline))
    actions = plan(
        observed(raw, pod=pod(deleting=True), feedback=(RegistrationBusy(RUNNER_ID),)), NOW
    )
    assert kinds(actions) == ["Report", "Wait"]
    assert reasons(actions) == ["RegistrationBusy"]
    assert wait_of(actions).seconds == 30.0


def test_L4_without_job_fields_runner_id_and_name_suffice() -> None:
    raw = runner(
        **registered(runnerStartedAt=format_kube_time(NOW), ready=True),
        jobCompletion=completion(jobId="j-unknown", workflowRunId=1),
    )
    actions = plan(observed(raw, pod=live_pod()), NOW)  # type: ignore[arg-type]
    assert "jobCompletionDeadline" in status_write(actions)


@pytest.mark.parametrize(
    "fields",
    [{"runnerId": 43}, {"runnerName": "someone-else"}, {"jobId": "j2"}, {"workflowRunId": 10}],
)
def test_L4_a_mismatched_completion_deletes_nothing_and_says_so(fields: dict[str, object]) -> None:
    deadline = format_kube_time(NOW - timedelta(seconds=100))
    raw = runner(**busy(jobCompletion=completion(**fields), jobCompletionDeadline=deadline))
    actions = plan(observed(raw, pod=live_pod()), NOW)  # type: ignore[arg-type]
    assert kinds(actions) == ["Report", "Wait"]
    assert reasons(actions) == ["JobCompletionMismatch"]
    assert notes(actions)[0].warning


def test_L4_a_runner_that_exits_within_the_grace_period_ends_normally() -> None:
    deadline = format_kube_time(NOW + timedelta(seconds=10))
    raw = runner(**busy(jobCompletion=completion(), jobCompletionDeadline=deadline))
    view = pod(phase="Succeeded", runner_container=container("terminated", "Completed", 0))
    assert reasons(plan(observed(raw, pod=view), NOW)) == ["RunnerSucceeded"]


# --- deletion ----------------------------------------------------------------------------------


def test_deletion_removes_the_registration_first() -> None:
    raw = runner(deleting=True, **registered())
    view = live_pod()
    actions = plan(observed(raw, pod=view, secret=secret()), NOW)  # type: ignore[arg-type]
    assert actions == [RemoveRegistration(RUNNER_ID)]


def test_deletion_of_an_unregistered_runner_looks_the_registration_up_by_name() -> None:
    actions = plan(observed(runner(deleting=True)), NOW)
    assert actions == [RemoveRegistration(0)]


def test_deletion_then_deletes_pod_and_secret_and_drops_our_finalizers_only() -> None:
    finalizers = ["other.io/keep", *FINALIZERS_OURS]
    raw = runner(deleting=True, finalizers=finalizers, **registered())
    actions = plan(
        observed(
            raw,
            pod=live_pod(),  # type: ignore[arg-type]
            secret=secret(),
            feedback=(RegistrationRemoved(RUNNER_ID),),
        ),
        NOW,
    )
    assert actions == [
        DeletePod(POD_UID, grace_seconds=1),  # the registration is gone: see below
        DeleteSecret(SECRET_UID),
        RemoveFinalizers(tuple(finalizers), ("other.io/keep",), FINALIZERS_REMOVED),
    ]


@pytest.mark.parametrize("removed", [RUNNER_ID, 0], ids=["removed", "none-found-by-name"])
def test_deletion_after_the_registration_is_gone_kills_the_pod_with_the_short_grace(
    removed: int,
) -> None:
    """Problem 7 of the soak: a hung runner ended by deleting its EphemeralRunner (registration
    pass, scale-down, replacement) waited out the pod's own termination grace (30 s by default)
    while the L4 path waits 1 s. Once GitHub removed the registration (or had none) the runner
    process has no job and can get none: nothing is left for a graceful stop to finish."""
    raw = runner(deleting=True, **registered())
    actions = plan(
        observed(raw, pod=live_pod(), feedback=(RegistrationRemoved(removed),)),  # type: ignore[arg-type]
        NOW,
    )
    assert isinstance(actions[0], DeletePod)
    assert actions[0].grace_seconds == 1


def test_deletion_with_a_matching_job_completion_kills_the_pod_with_the_short_grace() -> None:
    """The registration finalizer is gone (its removal is not this reconcile's news), but the
    runner's job completed: its process has nothing left to do either."""
    raw = runner(
        deleting=True,
        finalizers=[keys.EPHEMERAL_RUNNER_FINALIZER],
        **busy(jobCompletion=completion()),
    )
    actions = plan(observed(raw, pod=live_pod()), NOW)  # type: ignore[arg-type]
    assert isinstance(actions[0], DeletePod)
    assert actions[0].grace_seconds == 1


@pytest.mark.parametrize(
    "status",
    [registered(), busy(), busy(jobCompletion=completion(jobId="another-job"))],
    ids=["idle", "job", "completion-of-another-job"],
)
def test_deletion_without_news_of_the_registration_keeps_the_pods_own_grace(
    status: dict[str, object],
) -> None:
    """No registration removed by this reconcile (someone else dropped the registration
    finalizer) and no completion of this runner's job: the runner may still be working, so its
    pod gets its own termination grace (a graceful stop may be what it is for)."""
    raw = runner(deleting=True, finalizers=[keys.EPHEMERAL_RUNNER_FINALIZER], **status)
    actions = plan(observed(raw, pod=live_pod()), NOW)  # type: ignore[arg-type]
    assert isinstance(actions[0], DeletePod)
    assert actions[0].grace_seconds is None


@pytest.mark.parametrize(
    "deadline",
    [NOW - timedelta(seconds=1), NOW + timedelta(seconds=30), None],
    ids=["deadline-passed", "deadline-ahead", "no-deadline-yet"],
)
def test_deletion_with_a_matching_job_completion_kills_the_pod_before_asking_github(
    deadline: object,
) -> None:
    """Soak seed 6: a hung runner whose job completed was deleted (a scale-down) during a
    GitHub outage; its pod lived on until GitHub answered again (58.9 s past its L4 deadline),
    because deletion removes the registration first. The completion of this runner's own job
    is proof enough that it has nothing to do, and an ephemeral runner gets no second job: the
    pod goes first, with the short grace, and the registration's removal needs no pod."""
    fields = {"jobCompletion": completion()}
    if deadline is not None:
        fields["jobCompletionDeadline"] = format_kube_time(deadline)  # type: ignore[arg-type]
    raw = runner(deleting=True, **busy(**fields))
    actions = plan(observed(raw, pod=live_pod(), secret=secret()), NOW)  # type: ignore[arg-type]
    assert kinds(actions) == ["DeletePod", "RemoveRegistration"]
    assert actions[0] == DeletePod(POD_UID, grace_seconds=1)

    outage = GitHubProblem("GitHubUnreachable", "spec.githubConfigUrl", "cannot reach GitHub")
    during = plan(observed(raw, pod=pod(deleting=True), secret=secret(), feedback=(outage,)), NOW)
    assert kinds(during) == ["Report", "Wait"]  # the registration waits; the pod is going


def test_deletion_without_a_completion_keeps_the_pod_while_github_is_unreachable() -> None:
    """An idle runner may be handed a job the moment GitHub is back: without the registration
    removed (or a completion of its job) its pod is not touched."""
    raw = runner(deleting=True, **registered())
    outage = GitHubProblem("GitHubUnreachable", "spec.githubConfigUrl", "cannot reach GitHub")
    actions = plan(observed(raw, pod=live_pod(), feedback=(outage,)), NOW)  # type: ignore[arg-type]
    assert kinds(actions) == ["Report", "Wait"]


def test_deletion_waits_while_github_says_the_runner_is_busy() -> None:
    raw = runner(deleting=True, **registered())
    actions = plan(observed(raw, feedback=(RegistrationBusy(RUNNER_ID),)), NOW)
    assert kinds(actions) == ["Report", "Wait"]
    assert wait_of(actions).seconds == 30.0


def test_deletion_in_kubernetes_mode_deletes_the_hook_pods() -> None:
    hooks = template()
    hooks["containers"][0]["env"] = [
        {"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": "/hooks/index.js"}
    ]
    raw = runner(deleting=True, spec={"spec": hooks}, **registered())
    removed = (RegistrationRemoved(RUNNER_ID),)
    assert kinds(plan(observed(raw, feedback=removed), NOW)) == [
        "DeleteHookPods",
        "RemoveFinalizers",
    ]
    done = (*removed, HookPodsDeleted())
    assert kinds(plan(observed(raw, feedback=done), NOW)) == ["RemoveFinalizers"]


def test_a_deleted_runner_without_our_finalizers_needs_nothing() -> None:
    assert plan(observed(runner(deleting=True, finalizers=["other.io/keep"])), NOW) == []


FINALIZERS_OURS = [keys.EPHEMERAL_RUNNER_FINALIZER, keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER]


# --- L9 -----------------------------------------------------------------------------------------


def test_L9_every_replacement_and_failure_is_an_event() -> None:
    """The deciding note (the first) carries an Event message; follow-up steps (the pod deleted
    for a retry) are counted only."""
    cases = [
        observed(runner(**registered()), secret=secret()),
        observed(
            runner(**registered()),
            pod=pod(phase="Failed", runner_container=container("terminated", "Error", 1)),
        ),
        observed(
            runner(**registered()),
            pod=pod(phase="Pending", runner_container=container("waiting", "ErrImagePull")),
        ),
    ]
    for case in cases:
        decided = notes(plan(case, NOW))
        assert decided, case
        assert decided[0].message, decided
        assert decided[0].warning, decided


def test_create_pod_follows_its_write_ahead_record() -> None:
    """Every CreatePod is preceded, in the same plan, by the status write that records it."""
    actions = plan(observed(secret=secret()), NOW)
    index = next(i for i, a in enumerate(actions) if isinstance(a, CreatePod))
    assert isinstance(actions[index - 1], WriteStatus)
    assert isinstance(plan(observed(runner(**registered()), secret=secret()), NOW)[0], DeleteRunner)


# --- ARC's runner tests whose items lifecycle.md keeps ------------------------------------------


def test_ready_follows_the_pod_back_to_false() -> None:
    raw = runner(**registered(ready=True, runnerStartedAt=format_kube_time(NOW)))
    view = pod(runner_container=container("running"), ready=False)
    assert status_write(plan(observed(raw, pod=view), NOW)) == {"ready": False}


def test_a_succeeded_pod_without_a_terminated_runner_changes_no_phase() -> None:
    raw = runner(**registered(phase="Running", jobId="j1", jobRequestId=5, ready=False))
    view = pod(phase="Succeeded", runner_container=container("running"))
    actions = plan(observed(raw, pod=view), NOW)
    assert "phase" not in (
        status_write(actions) if any(isinstance(a, WriteStatus) for a in actions) else {}
    )
    assert not any(isinstance(a, DeleteRunner | CreatePod) for a in actions)


def test_a_failed_pod_without_container_status_and_with_a_job_replaces_the_runner() -> None:
    raw = runner(**registered(phase="Running", jobId="j1", jobRequestId=5))
    actions = plan(observed(raw, pod=pod(phase="Failed", reason="NodeLost")), NOW)
    assert reasons(actions) == ["PodFailedAfterStart"]
