"""``plan(observed, now)``: what to do with one EphemeralRunner — pure, one decision table.

First match wins, top to bottom:

====  ======================================  ==================================================
 #    the runner …                            decision
====  ======================================  ==================================================
 1    is being deleted                        remove the registration (JobStillRunning: wait),
                                              delete pod (short grace once the registration is
                                              gone, or after a matching job completion: then
                                              first, without waiting for GitHub), JIT Secret,
                                              hook pods; drop finalizers
 2    is terminal (Failed/Succeeded/Outdated)  delete its pod and JIT Secret; nothing else (L2)
 3    lacks our finalizers                    add them (JSON patch with a ``test`` op)
 4    has a matching job completion past      L4: delete the pod, remove the registration,
      its grace deadline                      delete the runner
 5    has a pod:
 5a     runner exited 0                       done: delete the runner
 5b     runner exited 7                       Outdated (+ registration removed)
 5c     runner exited otherwise / OOMKilled   replace (delete the runner)
 5d     pod failed, init container failed,    never started (L5 proof) → delete the pod if
        image / config error                  it is still as read, then record the failure:
                                              retry after back-off; started, or 5th failure →
                                              replace
 5e     runner not started within the         replace (a bad template cannot hold a slot)
        pending timeout
 5f     otherwise                             keep status in step: ``runnerStartedAt`` once
                                              the runner ran (then delete the JIT Secret),
                                              ``ready``, ``"" → Pending``, demote an idle
                                              ``Running`` (takeover), L4 grace deadline;
                                              copy its job fields onto the live pod's
                                              annotations once
 6    has no pod:
 6a     the pod create was just refused       quota → retry later (replace after 10 min);
                                              invalid → Failed/InvalidPod
 6b     its runner had started (or has a job)  replace — the JIT config is spent (L5)
 6c     a retry was earned (``RetryPod``)      after back-off: consume the retry, create a pod
 6d     never had a pod (phase "")            spec invalid → condition/Failed; not
                                              registered → generatejitconfig + Secret;
                                              else ``"" → Pending`` + create the pod
 6e     otherwise                             replace: no proof its runner never started
====  ======================================  ==================================================

Status is written at most once per round, first (except in 5d, where the pod deletion guarded
by the pod's resourceVersion comes before the write that grants the retry), guarded by the
resourceVersion that was read;
every status write that precedes a pod creation is its write-ahead record, so a pod that
vanishes before its runner was seen is never recreated from the same JIT config. ``plan`` never
writes ``Running`` (L1) and never touches a terminal runner's phase (L2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from scaleset.api import (
    Condition,
    EphemeralRunner,
    JobCompletion,
    RunnerPhase,
    format_kube_time,
    keys,
    to_json,
)
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.decisions import add_finalizers, remove_finalizers
from scaleset.controllers.ephemeralrunner.actions import (
    FINALIZERS_ADDED,
    FINALIZERS_REMOVED,
    Action,
    AnnotatePod,
    CreatePod,
    DeleteHookPods,
    DeletePod,
    DeleteRunner,
    DeleteSecret,
    Note,
    RegisterRunner,
    RemoveRegistration,
    Report,
    Wait,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunner.observed import (
    CONFIG_WAITING_REASONS,
    IMAGE_WAITING_REASONS,
    HookPodsDeleted,
    NameTaken,
    Observed,
    PodPatchForbidden,
    PodRefused,
    PodView,
    RegistrationBusy,
    RegistrationRemoved,
)

FINALIZERS = (keys.EPHEMERAL_RUNNER_FINALIZER, keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER)
HUNG_RUNNER_POD_GRACE_SECONDS = 1
"""L4: the pod of a runner still alive after its job's grace period is deleted with this
termination grace, not the pod's own (30 s by default): its job is over, and a hung process
ignores SIGTERM, so waiting for the full grace would only keep the zombie — and its node slot —
alive longer. The same holds for the pod of a runner being deleted (row 1) once this reconcile
removed its registration or found it gone (GitHub answers JobStillRunning for a runner with a
job, so the process has no job and can get none) or when it has a matching job completion:
the registration pass's RegistrationMissing, a scale-down (the set removes the registration
first, L3), a replacement. Row 1 removes the registration before it deletes the pod, so every
pod deletion of row 1 comes after the removal; only a runner whose registration finalizer
someone else removed (the registration's fate unknown) keeps the pod's own grace."""

RETRY_POD = "RetryPod"
"""Condition: True = a new pod may use the same JIT config; reason = the proof its runner never
started. Removed by the status write that precedes the retry's pod creation."""
RUNNER_POD = "RunnerPod"
"""Condition: True/Created, ``lastTransitionTime`` = when the current pod was created (the
controller's clock): written by the status write that precedes every pod creation, it dates the
pending timeout without trusting another clock."""
CONFIGURED = "Configured"
"""Condition: False = the runner cannot go on until a user fixes the field its message names."""
QUOTA_EXCEEDED = "QuotaExceeded"
TEMPLATE_FIELDS = ("spec.spec", "spec.metadata")
"""Problems under these paths make the pod template unusable (Failed/InvalidPod)."""


def plan(observed: Observed, now: datetime) -> list[Action]:
    """The actions for ``observed`` at ``now`` (the controller's clock), in order."""
    runner = observed.runner
    if runner.metadata.is_deleting:
        return _finalize(observed)
    if runner.status.is_terminal:
        return _clean_up_terminal(observed)
    added = add_finalizers(runner.metadata.finalizers, FINALIZERS, FINALIZERS_ADDED)
    if added is not None:
        return [added]
    mismatch = _completion_mismatch(observed)
    ended = _end_after_grace(observed, now)
    if ended is not None:
        return ended
    if observed.pod is not None:
        return mismatch + _with_pod(observed, observed.pod, now)
    return mismatch + _without_pod(observed, now)


def decides_without_secret(runner: EphemeralRunner, pod: PodView | None) -> bool:
    """Whether ``plan`` is the same with or without the JIT Secret: the runner is registered
    (``runnerId``), not being deleted, not terminal, and has a pod whose runner has not started.
    No row reads the Secret then (it is deleted only once the runner started; the runner id
    comes from the status), so the reconciler need not read it to learn there is nothing to do
    (a property test holds the plans equal)."""
    status = runner.status
    return (
        pod is not None
        and not pod.runner_started
        and status.runner_started_at is None
        and status.runner_id != 0
        and not status.is_terminal
        and not runner.metadata.is_deleting
    )


# --- 1, 2: deletion and terminal runners -----------------------------------------------------


def _finalize(observed: Observed) -> list[Action]:
    finalizers = tuple(observed.runner.metadata.finalizers)
    released = remove_finalizers(finalizers, FINALIZERS, FINALIZERS_REMOVED)
    if released is None:
        return []
    pod, secret = observed.pod, observed.secret
    if keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER in finalizers:
        removed = _registration_step(observed, "the runner is being deleted")
        if removed is not None:
            return _pod_of_a_finished_job(observed) + removed
    actions: list[Action] = []
    if pod is not None and not pod.deleting:
        actions.append(DeletePod(pod.uid, grace_seconds=_finished_runner_grace(observed)))
    if secret is not None and not secret.deleting:
        actions.append(DeleteSecret(secret.uid))
    if _uses_container_hooks(observed) and observed.learned(HookPodsDeleted) is None:
        actions.append(DeleteHookPods())
    actions.append(released)
    return actions


def _pod_of_a_finished_job(observed: Observed) -> list[Action]:
    """The pod of a runner being deleted whose own job completed, deleted before its
    registration is removed: the completion proves the runner has nothing left to do, and an
    ephemeral runner gets no second job, so the node slot need not wait for GitHub (during an
    outage the registration's removal can take as long as the outage)."""
    pod, completion = observed.pod, observed.runner.status.job_completion
    if pod is None or pod.deleting or completion is None or not _matches(observed, completion):
        return []
    return [DeletePod(pod.uid, grace_seconds=HUNG_RUNNER_POD_GRACE_SECONDS)]


def _finished_runner_grace(observed: Observed) -> int | None:
    """The termination grace for the pod of a runner being deleted: short when its runner
    process has nothing left to do (registration removed or gone, or its job completed), else
    the pod's own (``None``)."""
    if observed.learned(RegistrationRemoved) is not None:
        return HUNG_RUNNER_POD_GRACE_SECONDS
    completion = observed.runner.status.job_completion
    if completion is not None and _matches(observed, completion):
        return HUNG_RUNNER_POD_GRACE_SECONDS
    return None


def _registration_step(observed: Observed, why: str) -> list[Action] | None:
    """Remove the registration unless this reconcile already did; None once it is gone."""
    if observed.learned(RegistrationRemoved) is not None:
        return None
    unusable = observed.learned(GitHubProblem)
    if isinstance(unusable, GitHubProblem):
        note = Note(unusable.reason, f"{unusable.field}: {unusable.message}", warning=True)
        return [Report(note), Wait(observed.settings.github_retry)]
    busy = observed.learned(RegistrationBusy)
    if isinstance(busy, RegistrationBusy):
        retry = observed.settings.github_retry
        note = Note(
            "RegistrationBusy",
            f"GitHub says runner {busy.runner_id} still runs a job; {why}: retrying in {retry:g}s",
            warning=True,
        )
        return [Report(note), Wait(retry)]
    return [RemoveRegistration(_runner_id(observed))]


def _clean_up_terminal(observed: Observed) -> list[Action]:
    actions: list[Action] = []
    if observed.pod is not None and not observed.pod.deleting:
        actions.append(DeletePod(observed.pod.uid))
    if observed.secret is not None and not observed.secret.deleting:
        actions.append(DeleteSecret(observed.secret.uid))
    return [*actions, Wait()]


# --- 4: L4, a finished job ends its runner ----------------------------------------------------


def _matches(observed: Observed, completion: JobCompletion) -> bool | None:
    """Whether the completion names this runner (None: the runner id is not known yet)."""
    status = observed.runner.status
    runner_id = _runner_id(observed)
    if runner_id == 0:
        return None
    if completion.runner_id != runner_id or completion.runner_name != observed.name:
        return False
    if status.job_id and completion.job_id != status.job_id:
        return False
    return not (status.workflow_run_id and completion.workflow_run_id != status.workflow_run_id)


def _completion_mismatch(observed: Observed) -> list[Action]:
    completion = observed.runner.status.job_completion
    if completion is None or _matches(observed, completion) is not False:
        return []
    status = observed.runner.status
    message = (
        f"recorded job completion (runner {completion.runner_id} {completion.runner_name!r}, "
        f"job {completion.job_id!r}, run {completion.workflow_run_id}) does not match this "
        f"runner (runner {_runner_id(observed)} {observed.name!r}, job {status.job_id!r}, run "
        f"{status.workflow_run_id}); ignored"
    )
    return [Report(Note("JobCompletionMismatch", message, warning=True))]


def _completion_deadline(observed: Observed) -> datetime | None:
    """The stored grace deadline of a matching completion."""
    status = observed.runner.status
    completion = status.job_completion
    if completion is None or not _matches(observed, completion):
        return None
    return status.job_completion_deadline


def _end_after_grace(observed: Observed, now: datetime) -> list[Action] | None:
    deadline = _completion_deadline(observed)
    if deadline is None or now < deadline:
        return None
    completion = observed.runner.status.job_completion
    assert completion is not None
    actions: list[Action] = []
    pod = observed.pod
    if pod is not None and pod.alive:
        message = (
            f"job {completion.job_id!r} completed ({completion.result or 'no result'}) but the "
            f"runner still lives after the grace period; deleting pod {pod.name}"
        )
        actions.append(
            DeletePod(
                pod.uid,
                Note("JobCompletedRunnerAlive", message, warning=True),
                grace_seconds=HUNG_RUNNER_POD_GRACE_SECONDS,
            )
        )
    step = _registration_step(observed, "ending the runner after its job completed")
    if step is not None:
        return actions + step
    message = f"job {completion.job_id!r} completed and the grace period ended: runner removed"
    return [*actions, DeleteRunner(Note("JobCompletedRunnerEnded", message))]


# --- 5: the runner has a pod ------------------------------------------------------------------


def _with_pod(observed: Observed, pod: PodView, now: datetime) -> list[Action]:
    status = observed.runner.status
    if pod.deleting:
        return _keep(observed, now)
    code = pod.runner_exit_code
    if code == 0:
        return [DeleteRunner(Note("RunnerSucceeded", "runner exited 0: done"), guarded=False)]
    if code == keys.RUNNER_DEPRECATED_EXIT_CODE:
        return _outdated(observed)
    if code is not None:
        reason = pod.runner.reason if pod.runner is not None else ""
        label = "RunnerOOMKilled" if reason == "OOMKilled" else "RunnerFailed"
        if pod.reason == "Evicted":
            label = "PodEvictedAfterStart"
        return _replace(
            label,
            f"runner container exited {code}{f' ({reason})' if reason else ''}: its JIT config "
            "is spent, replacing the runner",
            guarded=False,
        )
    never_started = (
        status.runner_started_at is None and not pod.runner_started and not status.has_job
    )
    proof = _never_started_proof(pod)
    if proof and never_started:
        return _retry_or_replace(observed, pod, proof, now)
    if proof or pod.phase == "Failed":
        return _replace(
            "PodFailedAfterStart",
            f"pod {pod.name} failed ({proof or pod.reason or 'no reason'}) after its runner "
            "started: its JIT config is spent, replacing the runner",
        )
    if not pod.runner_started and status.runner_started_at is None:
        timeout = observed.settings.pod_pending_timeout
        deadline = _pod_created_at(observed, pod, now) + timedelta(seconds=timeout)
        if now >= deadline:
            return _replace(
                "PodPendingTimeout",
                f"pod {pod.name} did not start its runner within {timeout:g}s "
                f"({_pending_detail(pod)}): replacing the runner",
            )
        return _keep(observed, now, wait=(deadline - now).total_seconds())
    return _keep(observed, now)


def _never_started_proof(pod: PodView) -> str:
    """Why this pod's runner cannot have started (L5), or "" when the pod does not prove it."""
    if pod.runner_started:
        return ""
    if pod.admission_rejected:
        return "AdmissionRejected"
    if pod.failed_init_container:
        return "InitContainerFailed"
    waiting = pod.runner.waiting_reason if pod.runner is not None else ""
    if waiting in IMAGE_WAITING_REASONS:
        return "ImagePullFailed"
    if waiting in CONFIG_WAITING_REASONS:
        return "ContainerConfigError"
    if pod.phase == "Failed" and pod.runner is not None and pod.runner.state == "waiting":
        return "PodFailedBeforeStart"
    if pod.phase == "Failed" and pod.runner is None:
        return "PodFailedBeforeStart"
    return ""


def _pod_created_at(observed: Observed, pod: PodView, now: datetime) -> datetime:
    """When the current pod was created: our own record, else the pod's timestamp (a pod we
    did not create, e.g. ARC's)."""
    record = _find_condition(observed, RUNNER_POD)
    if record is not None and record.status == "True" and record.last_transition_time:
        return record.last_transition_time
    return pod.created_at or now


def _pending_detail(pod: PodView) -> str:
    waiting = pod.runner.waiting_reason if pod.runner is not None else ""
    return waiting or pod.reason or f"phase {pod.phase or 'unknown'}"


def _retry_or_replace(observed: Observed, pod: PodView, proof: str, now: datetime) -> list[Action]:
    settings = observed.settings
    failures = dict(observed.runner.status.failures)
    failures.setdefault(pod.uid, now)
    count = len(failures)
    if count >= settings.max_failures:
        return _replace(
            "ReplacedAfterFailures",
            f"{count} pods failed before their runner started (last: {proof}): replacing the "
            "runner",
        )
    delay = _failure_backoff(observed, count)
    # The deletion is guarded by the version read (the proof): if the runner container started
    # since — a status the kubelet wrote after our read — the pod is not deleted, and the
    # reconcile reads again and decides again. The retry is granted (RetryPod) only after the
    # guarded deletion went through, so a pod that changed and then vanished before the next
    # read leaves no grant behind: it is replaced, never given the JIT config again.
    delete = DeletePod(pod.uid, resource_version=pod.resource_version)
    if pod.uid in observed.runner.status.failures:
        # Recorded by an earlier pass whose pod deletion the cache does not show yet: finish
        # the deletion, decide (and announce) nothing twice.
        return [delete, Wait(delay)]
    detail = pod.message or pod.reason or _pending_detail(pod)
    condition = _condition(
        observed, RETRY_POD, "True", proof, f"pod {pod.name} failed: {detail}"[:512], now
    )
    changes: dict[str, Any] = {
        "failures": {pod.uid: format_kube_time(now)},
        "conditions": condition,
        "ready": False,
    }
    message = (
        f"pod {pod.name} failed before its runner started ({proof}); failure {count} of "
        f"{settings.max_failures}, a new pod with the same JIT config follows in {delay:g}s"
    )
    decided = replace(delete, note=Note(proof, message, warning=True))
    return [decided, WriteStatus(changes), Wait(delay)]


def _outdated(observed: Observed) -> list[Action]:
    changes = {
        "phase": RunnerPhase.OUTDATED.value,
        "reason": keys.REASON_OUTDATED,
        "message": "Runner is deprecated",
        "ready": False,
    }
    message = "runner exited 7: its version is deprecated (update the runner image)"
    return [
        WriteStatus(changes, (Note("RunnerOutdated", message, warning=True),)),
        RemoveRegistration(_runner_id(observed)),
    ]


def _keep(observed: Observed, now: datetime, *, wait: float | None = None) -> list[Action]:
    """Keep the status in step with the pod; delete the JIT Secret once the runner ran."""
    changes, notes = _sync(observed, now)
    actions: list[Action] = [WriteStatus(changes, tuple(notes))] if changes else []
    status = observed.runner.status
    started = status.runner_started_at is not None or "runnerStartedAt" in changes
    secret = observed.secret
    if started and secret is not None and not secret.deleting:
        actions.append(DeleteSecret(secret.uid))
    actions.extend(_annotate_job(observed))
    deadline = _completion_deadline(observed)
    if deadline is None and "jobCompletionDeadline" in changes:
        wait = _shorter(wait, observed.settings.grace_period)
    elif deadline is not None:
        wait = _shorter(wait, max(0.0, (deadline - now).total_seconds()))
    actions.append(Wait(wait))
    return actions


def _annotate_job(observed: Observed) -> list[Action]:
    """Job ↔ pod traceability: the job fields the listener recorded on the runner, copied onto
    its live pod's annotations — one patch, and none once the pod shows them (a pod being
    deleted or finished is left alone). The listener may not patch pods (its Role is least
    privilege), so the controller writes them."""
    pod = observed.pod
    if pod is None or not pod.alive:
        return []
    wanted = job_annotations(observed.runner)
    if not wanted or all(pod.job_annotations.get(k) == v for k, v in wanted.items()):
        return []
    forbidden = observed.learned(PodPatchForbidden)
    if isinstance(forbidden, PodPatchForbidden):
        if forbidden.announced:
            return []
        message = (
            f"may not patch pods in namespace {observed.runner.metadata.namespace} "
            f"({forbidden.message}): the job stays on the EphemeralRunner only; grant patch on "
            "pods in the runner namespace's manager Role (the scaleset runner-set chart does) "
            "and restart the controller"
        )
        return [Report(Note("PodPatchForbidden", message, warning=True))]
    return [AnnotatePod(wanted)]


def job_annotations(runner: EphemeralRunner) -> dict[str, str]:
    """The pod annotations that name the runner's job (``keys.JOB_ANNOTATIONS``): the job
    fields it has, none without a job."""
    status = runner.status
    if not status.has_job:
        return {}
    values: dict[str, str | int] = {
        keys.JOB_REPOSITORY_ANNOTATION: status.job_repository_name,
        keys.JOB_WORKFLOW_REF_ANNOTATION: status.job_workflow_ref,
        keys.JOB_DISPLAY_NAME_ANNOTATION: status.job_display_name,
        keys.WORKFLOW_RUN_ID_ANNOTATION: status.workflow_run_id,
        keys.JOB_ID_ANNOTATION: status.job_id,
        keys.JOB_REQUEST_ID_ANNOTATION: status.job_request_id,
    }
    return {key: str(value) for key, value in values.items() if value}


def _sync(observed: Observed, now: datetime) -> tuple[dict[str, Any], list[Note]]:
    """Status fields that follow the pod and the runner's history (no decision of their own)."""
    runner, pod, secret = observed.runner, observed.pod, observed.secret
    status = runner.status
    changes: dict[str, Any] = {}
    notes: list[Note] = []
    if pod is not None and pod.runner_started and status.runner_started_at is None:
        changes["runnerStartedAt"] = format_kube_time(now)
        notes.append(
            Note(
                "RunnerStarted",
                f"runner container of pod {pod.name} started; its JIT config will not be used "
                "again",
            )
        )
    ready = pod is not None and not pod.deleting and pod.ready
    if ready != status.ready:
        changes["ready"] = ready
        notes.append(Note("ReadyChanged"))
    if not status.phase:
        changes["phase"] = RunnerPhase.PENDING.value
        notes.append(Note("PhasePending"))
    elif _idle_running(observed):
        changes["phase"] = RunnerPhase.PENDING.value
        notes.append(
            Note(
                "DemotedIdleRunner",
                "phase Running without a job (set from the pod phase by ARC): now Pending; "
                "only the listener sets Running when a job starts",
            )
        )
    if status.runner_id == 0 and secret is not None and secret.runner_id:
        changes["runnerId"] = secret.runner_id
        changes["runnerName"] = secret.runner_name or observed.name
    completion = status.job_completion
    if (
        completion is not None
        and status.job_completion_deadline is None
        and _matches(observed, completion)
    ):
        grace = observed.settings.grace_period
        changes["jobCompletionDeadline"] = format_kube_time(now + timedelta(seconds=grace))
        notes.append(
            Note(
                "JobCompletionObserved",
                f"job {completion.job_id!r} completed ({completion.result or 'no result'}); the "
                f"runner is ended in {grace:g}s unless it exits by itself",
            )
        )
    if _find_condition(observed, CONFIGURED) is not None:
        changes["conditions"] = _without_condition(observed, CONFIGURED)
    return changes, notes


def _idle_running(observed: Observed) -> bool:
    status = observed.runner.status
    return (
        status.phase == RunnerPhase.RUNNING and not status.has_job and status.job_completion is None
    )


# --- 6: the runner has no pod -----------------------------------------------------------------


def _without_pod(observed: Observed, now: datetime) -> list[Action]:
    status = observed.runner.status
    refused = observed.learned(PodRefused)
    if isinstance(refused, PodRefused):
        return _pod_refused(observed, refused, now)
    if status.runner_started_at is not None or status.has_job:
        return _replace(
            "PodLostAfterStart",
            "the runner pod is gone after its runner started: its JIT config is spent, "
            "replacing the runner",
        )
    retry = _find_condition(observed, RETRY_POD)
    if retry is not None and retry.status == "True":
        return _retry_pod(observed, retry, now)
    if not status.phase and not status.failures:
        return _first_pod(observed, now)
    return _replace(
        "PodLost",
        "the runner pod is gone and nothing proves its runner never started: replacing the "
        "runner (its JIT config is never given to a second pod)",
    )


def _first_pod(observed: Observed, now: datetime) -> list[Action]:
    template = [p for p in observed.problems if p.field.startswith(TEMPLATE_FIELDS)]
    if template:
        return _invalid_pod(observed, template[0].field, template[0].message, now)
    if observed.problems:
        problem = observed.problems[0]
        return _misconfigured(observed, "InvalidSpec", problem.field, problem.message, now)
    unusable = observed.learned(GitHubProblem)
    if isinstance(unusable, GitHubProblem):
        return _misconfigured(observed, unusable.reason, unusable.field, unusable.message, now)
    secret = observed.secret
    stale = _stale_jit_secret(observed)
    if stale is not None:
        return stale
    if secret is None:
        return _register(observed)
    if secret.deleting:
        return [Wait(backoff=True)]
    if secret.runner_id == 0:
        note = Note("JitSecretInvalid", f"Secret {secret.name} holds no runner id: recreating it")
        return [DeleteSecret(secret.uid, note)]
    changes, notes = _sync(observed, now)
    changes["phase"] = RunnerPhase.PENDING.value
    changes["runnerId"] = secret.runner_id
    changes["runnerName"] = secret.runner_name or observed.name
    changes["conditions"] = _pod_created(observed, now, f"first pod of runner {secret.runner_id}")
    return [WriteStatus(changes, tuple(notes)), CreatePod(), Wait()]


def _stale_jit_secret(observed: Observed) -> list[Action] | None:
    """L5/L6: a JIT Secret whose registration GitHub no longer has under the runner's name (the
    name is registered under another id) is deleted before anything else: given to a pod, its
    config could never connect, and the runner would record a removed registration while the
    live one was left without a runner (no deletion of the runner would remove it)."""
    secret, taken = observed.secret, observed.learned(NameTaken)
    if secret is None or secret.deleting or not isinstance(taken, NameTaken) or not taken.found:
        return None
    if secret.runner_id == taken.runner_id:
        return None  # the Secret of the registration that exists: it is used (no pod had it)
    removed = observed.learned(RegistrationRemoved)
    if isinstance(removed, RegistrationRemoved) and removed.runner_id == taken.runner_id:
        return None  # the taken registration is gone, and the Secret is of the one made since
    message = (
        f"Secret {secret.name} holds runner {secret.runner_id}, which GitHub no longer has "
        f"under the name {observed.name!r} (registered as runner {taken.runner_id}): deleting "
        "it before registering again"
    )
    return [DeleteSecret(secret.uid, Note("StaleJitSecret", message, warning=True))]


def _register(observed: Observed) -> list[Action]:
    taken = observed.learned(NameTaken)
    if not isinstance(taken, NameTaken):
        return [RegisterRunner()]
    busy = observed.learned(RegistrationBusy)
    if isinstance(busy, RegistrationBusy):
        retry = observed.settings.github_retry
        message = (
            f"the name {observed.name!r} is registered as runner {busy.runner_id}, which runs a "
            f"job; registering again in {retry:g}s"
        )
        return [Report(Note("RunnerNameBusy", message, warning=True)), Wait(retry)]
    if not taken.found:
        retry = observed.settings.github_retry
        message = (
            f"GitHub says {observed.name!r} is registered but cannot find it; retrying in "
            f"{retry:g}s"
        )
        return [Report(Note("RunnerNameTaken", message, warning=True)), Wait(retry)]
    scale_set_id = observed.runner.spec.runner_scale_set_id
    if taken.scale_set_id and taken.scale_set_id != scale_set_id:
        return _replace(
            "RunnerNameInOtherScaleSet",
            f"the name {observed.name!r} is registered in scale set {taken.scale_set_id}, not "
            f"{scale_set_id}: replacing the runner",
        )
    removed = observed.learned(RegistrationRemoved)
    if isinstance(removed, RegistrationRemoved) and removed.runner_id == taken.runner_id:
        return [RegisterRunner()]
    message = (
        f"the name {observed.name!r} is already registered as runner {taken.runner_id} (a lost "
        "answer or a crash left it): removing it and registering again"
    )
    return [RemoveRegistration(taken.runner_id, Note("StaleRegistration", message, warning=True))]


def _retry_pod(observed: Observed, retry: Condition, now: datetime) -> list[Action]:
    status = observed.runner.status
    since = retry.last_transition_time or now
    if retry.reason == QUOTA_EXCEEDED:
        age = _age(observed, now)
        if age >= observed.settings.quota_give_up:
            return _quota_gave_up(observed, age)
        at = since + timedelta(seconds=_quota_backoff(age))
    else:
        last = max(status.failures.values(), default=since)
        at = last + timedelta(seconds=_failure_backoff(observed, len(status.failures)))
    if now < at:
        return [Wait((at - now).total_seconds())]
    secret = observed.secret
    if secret is None or secret.deleting:
        return _replace(
            "JitSecretMissing",
            "a retry was due but the JIT Secret is gone: replacing the runner",
        )
    changes, notes = _sync(observed, now)
    attempt = len(status.failures) + 1
    changes["conditions"] = _pod_created(observed, now, f"pod {attempt}, same JIT config")
    message = (
        f"new pod with the same JIT config ({retry.reason}: its runner never started); "
        f"attempt {attempt}"
    )
    notes.append(Note("PodRetry", message))
    return [WriteStatus(changes, tuple(notes)), CreatePod(), Wait()]


def _pod_refused(observed: Observed, refused: PodRefused, now: datetime) -> list[Action]:
    if refused.kind != "quota":
        return _invalid_pod(
            observed, "spec.spec", f"Failed to create the pod: {refused.message}", now
        )
    age = _age(observed, now)
    if age >= observed.settings.quota_give_up:
        return _quota_gave_up(observed, age)
    delay = _quota_backoff(age)
    condition = _condition(observed, RETRY_POD, "True", QUOTA_EXCEEDED, refused.message[:512], now)
    message = f"a ResourceQuota refused the runner pod; retrying in {delay:g}s: {refused.message}"
    return [
        WriteStatus({"conditions": condition}, (Note(QUOTA_EXCEEDED, message, warning=True),)),
        Wait(delay),
    ]


def _quota_gave_up(observed: Observed, age: float) -> list[Action]:
    return _replace(
        "QuotaExceededTooLong",
        f"a ResourceQuota has refused the runner pod for {age:.0f}s: replacing the runner",
    )


def _invalid_pod(observed: Observed, field: str, message: str, now: datetime) -> list[Action]:
    text = f"{field}: {message}"[:1024]
    changes = {
        "phase": RunnerPhase.FAILED.value,
        "reason": keys.REASON_INVALID_POD,
        "message": text,
        "ready": False,
        "conditions": _condition(observed, CONFIGURED, "False", keys.REASON_INVALID_POD, text, now),
    }
    actions: list[Action] = [
        WriteStatus(changes, (Note(keys.REASON_INVALID_POD, text, warning=True),))
    ]
    if _runner_id(observed) or observed.secret is not None:
        actions.append(RemoveRegistration(_runner_id(observed)))
    return actions


def _misconfigured(
    observed: Observed, reason: str, field: str, message: str, now: datetime
) -> list[Action]:
    """L8: a condition naming the field, an Event, and a look again that slows down the
    longer the problem lasts (never a crash loop)."""
    text = f"{field}: {message}"[:1024]
    existing = _find_condition(observed, CONFIGURED)
    since = now
    if existing is not None and existing.status == "False" and existing.reason == reason:
        since = existing.last_transition_time or now
    delay = min(300.0, max(10.0, (now - since).total_seconds() / 2))
    note = Note(reason, text, warning=True)
    if (
        existing is not None
        and existing.status == "False"
        and existing.reason == reason
        and existing.message == text
    ):
        return [Report(note), Wait(delay)]
    condition = _condition(observed, CONFIGURED, "False", reason, text, now)
    return [WriteStatus({"conditions": condition}, (note,)), Wait(delay)]


# --- helpers -----------------------------------------------------------------------------------


def _replace(reason: str, message: str, *, guarded: bool = True) -> list[Action]:
    """L5: the runner is deleted (its finalizers remove the registration) and the
    EphemeralRunnerSet creates a fresh one with a fresh JIT config. ``guarded=False`` only
    where the runner container's exit decided it (``DeleteRunner``)."""
    return [DeleteRunner(Note(reason, message, warning=True), guarded=guarded)]


def _runner_id(observed: Observed) -> int:
    status_id = observed.runner.status.runner_id
    if status_id:
        return status_id
    return observed.secret.runner_id if observed.secret is not None else 0


def _uses_container_hooks(observed: Observed) -> bool:
    containers = observed.runner.spec.spec.get("containers")
    if not isinstance(containers, list):
        return False
    for container in containers:
        if not isinstance(container, dict) or container.get("name") != keys.RUNNER_CONTAINER:
            continue
        env = container.get("env")
        return isinstance(env, list) and any(
            isinstance(var, dict) and var.get("name") == keys.RUNNER_CONTAINER_HOOKS_ENV
            for var in env
        )
    return False


def _age(observed: Observed, now: datetime) -> float:
    created = observed.runner.metadata.creation_timestamp
    return max(0.0, (now - created).total_seconds()) if created is not None else 0.0


def _failure_backoff(observed: Observed, failures: int) -> float:
    ladder = observed.settings.failure_backoff
    return ladder[min(failures, len(ladder) - 1)]


def _quota_backoff(age: float) -> float:
    """Grows with the runner's age: 5 s at first, at most 80 s."""
    return min(80.0, max(5.0, age / 4))


def _shorter(wait: float | None, other: float) -> float:
    return other if wait is None else min(wait, other)


def _find_condition(observed: Observed, type_: str) -> Condition | None:
    return next((c for c in observed.runner.status.conditions if c.type == type_), None)


def _without_condition(observed: Observed, type_: str) -> list[Mapping[str, Any]]:
    return [to_json(c) for c in observed.runner.status.conditions if c.type != type_]


def _pod_created(observed: Observed, now: datetime, message: str) -> list[Mapping[str, Any]]:
    """The conditions of the write that precedes a pod creation: ``RunnerPod`` dated now, no
    ``RetryPod`` (the retry is consumed) and no ``Configured`` problem."""
    entry = {
        "type": RUNNER_POD,
        "status": "True",
        "reason": "Created",
        "message": message,
        "lastTransitionTime": format_kube_time(now),
    }
    kept = [
        to_json(c)
        for c in observed.runner.status.conditions
        if c.type not in (RUNNER_POD, RETRY_POD, CONFIGURED)
    ]
    return [*kept, entry]


def _condition(
    observed: Observed, type_: str, status: str, reason: str, message: str, now: datetime
) -> list[Mapping[str, Any]]:
    """The conditions with ``type_`` set; its transition time moves only when status does."""
    existing = _find_condition(observed, type_)
    moved = existing is None or existing.status != status or existing.reason != reason
    when = now if moved or existing is None else existing.last_transition_time or now
    entry = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_kube_time(when),
    }
    return [*_without_condition(observed, type_), entry]
