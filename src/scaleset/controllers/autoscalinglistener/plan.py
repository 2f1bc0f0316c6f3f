"""``plan(observed, now)``: what to do with one AutoscalingListener — pure, one decision table.

First match wins, top to bottom:

====  =====================================  ===================================================
 #    the listener …                         decision
====  =====================================  ===================================================
 1    is being deleted                       delete pod, config Secret, proxy Secret,
                                             RoleBinding, Role, ServiceAccount (ARC's order, no
                                             waiting between them); once all are gone, drop the
                                             finalizer
 2    lacks the finalizer                    add it (JSON patch with a ``test`` op)
 3    its AutoscalingRunnerSet is gone       delete the listener (ARC)
 4    has an invalid spec, or one the        ``Configured=False InvalidSpec`` (or the
      controller's policy refuses (an http   refusal's reason) naming the field; nothing else
      URL, a listener template field beyond  (L8) — except that a pod of a refused spec is
      ``api.listener_template``'s list)      deleted
 5    always                                 ServiceAccount, Role (rules from
                                             ``scaleset.api.listener_rbac``), RoleBinding:
                                             create, or patch what drifted (rules, subjects,
                                             labels, annotations); a changed ``roleRef`` (which
                                             is immutable) replaces the RoleBinding
 6    cannot have a config (GitHub Secret    ``Configured=False <reason>`` naming the field, a
      missing or unusable, CA or proxy       Warning Event when it appears; a running listener
      credentials missing, vault)            is left alone; look again in ``config_retry``
 7    otherwise                              proxy Secret and config Secret created, or
                                             rewritten when their *content* differs from what
                                             the inputs give now (rotated credentials, changed
                                             settings; ARC compares labels only)
 8    has no pod                             before ``status.nextPodAttemptTime``: wait
                                             (``ListenerRunning=False BackOff``; the inputs are
                                             read again every ``config_retry`` meanwhile) —
                                             unless the configuration changed since the failed
                                             pod (rotated credentials); else create it
 8a   the pod is terminating                 wait for it
 8b   the pod ended (listener exited,        record the failure first (``podFailures``,
      evicted, Failed/Succeeded)             ``lastPodFailure``, ``nextPodAttemptTime`` =
                                             now + back-off), then delete it; a Warning Event
                                             says why and when the next pod comes. A kill from
                                             outside (SIGKILL or SIGTERM not by the OOM killer,
                                             eviction, node shutdown) after the listener ran at
                                             least ``backoff_initial`` is recorded but not
                                             counted: the next pod comes at once
 8c   the pod's hash is not the desired one  delete it (not a failure): a listener reads its
                                             config once
 8d   the pod runs                           ``ListenerRunning=True``; after ``healthy_after``
                                             of running, reset the failure count
 8e   the pod waits (image, config error,    ``ListenerRunning=False <kubelet reason>`` (or
      no node fits)                          ``Unschedulable`` with the scheduler's message)
                                             and a Warning Event when it appears; labels and
                                             annotations patched if they drifted
====  =====================================  ===================================================

Status (conditions and the back-off) is written at most once per round, first, guarded by the
resourceVersion that was read: a failure is on record before the failed pod is deleted, so a
controller restart neither forgets nor double-counts it (the failed pod's UID is kept).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from scaleset.api import Refusal, condition_reason, format_kube_time, keys, to_json
from scaleset.api.naming import listener_config_secret_name, listener_proxy_secret_name
from scaleset.controllers.autoscalinglistener import resources
from scaleset.controllers.autoscalinglistener.actions import (
    Action,
    CreateObject,
    DeleteListener,
    DeleteObject,
    Effect,
    Note,
    PatchObject,
    Report,
    Wait,
    WriteSecret,
    WriteStatus,
)
from scaleset.controllers.autoscalinglistener.inputs import ConfigProblem, Inputs
from scaleset.controllers.autoscalinglistener.observed import (
    ObjectView,
    Observed,
    PodView,
    Refused,
    SecretView,
)
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.controllers.decisions import add_finalizers, remove_finalizers
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import POD, ROLE, ROLE_BINDING, SECRET, SERVICE_ACCOUNT, Kind

FINALIZER = keys.AUTOSCALING_LISTENER_FINALIZER
CONFIGURED = "Configured"
"""Condition: True = the listener's objects and config are written; False = the reason the
listener cannot run until a user fixes the field its message names."""
LISTENER_RUNNING = "ListenerRunning"
"""Condition: True = the listener container runs; False = why not (pending, back-off, the
kubelet's reason, or what the listener's exit code means)."""
CONFIG_RETRY_SECONDS = 30.0
"""A configuration problem is looked at again this often (the scale set's Secrets are not
watched)."""

EXIT_REASONS: Mapping[int, tuple[str, str]] = {
    1: ("ListenerConfigInvalid", "the listener rejected its config"),
    3: (
        "GitHubRefused",
        "GitHub refused: the scale set does not exist or the credentials are "
        "rejected (401/403/404)",
    ),
    4: ("RunnerSetMissing", "the EphemeralRunnerSet does not exist"),
    5: ("KubernetesRefused", "the API server refused the listener (RBAC, service account)"),
    70: ("ListenerCrashed", "the listener hit an internal error"),
}
"""What ``scaleset listener``'s exit codes mean (its ``--help``; a test keeps them equal)."""
QUIET_WAITING_REASONS = frozenset({"", "ContainerCreating", "PodInitializing"})
"""Container waiting reasons that are a normal start, not a problem worth an Event."""


class Cond(NamedTuple):
    status: str
    reason: str
    message: str


def plan(observed: Observed, now: datetime) -> list[Action]:
    """The actions for ``observed`` at ``now`` (the controller's clock), in order."""
    listener = observed.listener
    if listener.metadata.is_deleting:
        return _finalize(observed)
    added = add_finalizers(listener.metadata.finalizers, (FINALIZER,))
    if added is not None:
        return [added]
    if not observed.scale_set_exists:
        spec = listener.spec
        return [
            DeleteListener(
                Note(
                    "ScaleSetGone",
                    f"AutoscalingRunnerSet {spec.autoscaling_runner_set_namespace}/"
                    f"{spec.autoscaling_runner_set_name} does not exist; deleting the listener",
                )
            )
        ]
    if observed.problems:
        return _invalid(observed, now)
    effects: list[Action] = [
        *_service_account(observed),
        *_role(observed),
        *_role_binding(observed),
    ]
    inputs = observed.inputs
    if isinstance(inputs, ConfigProblem) or inputs is None:
        problem = inputs or ConfigProblem("NotObserved", "spec", "the inputs were not read")
        conditions = {
            CONFIGURED: Cond("False", problem.reason, problem.text),
            LISTENER_RUNNING: _running_condition(observed.pod, now),
        }
        return [*_status(observed, now, conditions, {}), *effects, Wait(CONFIG_RETRY_SECONDS)]
    document = resources.config_document(listener, inputs, observed.settings)
    config_digest = resources.content_digest(document)
    proxy_digest = resources.content_digest(dict(inputs.proxy) if inputs.proxy else None)
    effects += _proxy_secret(observed, inputs, proxy_digest)
    effects += _config_secret(observed, config_digest)
    desired_pod = resources.listener_pod(listener, observed.settings, config_digest, proxy_digest)
    decision = _pod(observed, now, desired_pod)
    refused = observed.feedback[0] if observed.feedback else None
    if refused is not None:
        # a refused create is not repeated in this reconcile: the work queue backs off
        kinds = {f.kind for f in observed.feedback}
        effects = [a for a in effects if not (isinstance(a, CreateObject) and a.kind.kind in kinds)]
        configured = Cond("False", refused.reason, _refusal(refused))
        wait = Wait(backoff=True)
    else:
        configured = Cond(
            "True",
            "ConfigWritten",
            f"ServiceAccount, Role, RoleBinding and Secret "
            f"{listener_config_secret_name(listener.metadata.name)} are written",
        )
        wait = decision.wait
    conditions = {CONFIGURED: configured, LISTENER_RUNNING: decision.condition}
    status = _status(observed, now, conditions, decision.status)
    return [*status, *effects, *decision.actions, wait]


# --- 4: invalid or refused spec ----------------------------------------------------------------


def _invalid(observed: Observed, now: datetime) -> list[Action]:
    """``Configured=False`` naming the fields; nothing else — except that a pod built from a
    spec the controller's policy now refuses (an upgrade, a narrowed flag) is deleted: it may
    hold what the policy keeps out of the controller's namespace."""
    shown = "; ".join(f"{p.field}: {p.message}" for p in observed.problems[:3])
    conditions = {
        CONFIGURED: Cond("False", condition_reason(observed.problems), shown),
        LISTENER_RUNNING: _running_condition(observed.pod, now),
    }
    actions: list[Action] = [*_status(observed, now, conditions, {})]
    pod = observed.pod
    refused = [p.field for p in observed.problems if isinstance(p, Refusal)]
    if refused and pod is not None and not pod.deleting:
        key = ObjectKey(observed.listener.metadata.namespace, pod.name)
        note = Note(
            "ListenerPodRefused",
            f"listener pod {pod.name} deleted: its listener's spec is refused "
            f"({', '.join(refused[:3])}); no pod runs until the scale set is fixed",
            warning=True,
        )
        actions.append(DeleteObject(POD, key, pod.uid, note))
    return [*actions, Wait()]


def _refusal(refused: Refused) -> str:
    text = f"the {refused.kind} was refused: {refused.message}"
    if refused.kind in ("Role", "RoleBinding") and refused.reason.endswith("Forbidden"):
        text += (
            "; the controller may only grant what it holds: its ClusterRole must include every "
            "rule of the listener Role (scaleset.api.listener_rbac)"
        )
    return text


# --- 1: deletion -------------------------------------------------------------------------------


def _finalize(observed: Observed) -> list[Action]:
    released = remove_finalizers(observed.listener.metadata.finalizers, (FINALIZER,))
    if released is None:
        return []
    listener_ns = observed.listener.metadata.namespace
    objects: list[tuple[Kind, str, ObjectView | SecretView | PodView | None]] = [
        (POD, listener_ns, observed.pod),
        (SECRET, listener_ns, observed.config_secret),
        (SECRET, listener_ns, observed.proxy_secret),
        (
            ROLE_BINDING,
            observed.listener.spec.autoscaling_runner_set_namespace,
            observed.role_binding,
        ),
        (ROLE, observed.listener.spec.autoscaling_runner_set_namespace, observed.role),
        (SERVICE_ACCOUNT, listener_ns, observed.service_account),
    ]
    actions: list[Action] = []
    remaining = False
    for kind, namespace, view in objects:
        if view is None:
            continue
        remaining = True
        if not view.deleting:
            actions.append(
                DeleteObject(
                    kind,
                    ObjectKey(namespace, view.name),
                    view.uid,
                    Note(f"{kind.kind}Deleted"),
                )
            )
    if remaining:
        return [*actions, Wait(observed.settings.cleanup_poll)]
    return [released]


# --- 5: ServiceAccount, Role, RoleBinding -----------------------------------------------------


def _changed(current: Mapping[str, str], desired: Mapping[str, str]) -> dict[str, str]:
    """Entries of ``desired`` that ``current`` lacks or holds otherwise (labels and annotations
    are merged, never pruned: others may have added theirs)."""
    return {k: v for k, v in desired.items() if current.get(k) != v}


def _metadata_patch(
    labels: Mapping[str, str], annotations: Mapping[str, str], body: Mapping[str, Any]
) -> dict[str, Any]:
    metadata = body.get("metadata") or {}
    patch: dict[str, Any] = {}
    changed_labels = _changed(labels, metadata.get("labels") or {})
    changed_annotations = _changed(annotations, metadata.get("annotations") or {})
    if changed_labels:
        patch["labels"] = changed_labels
    if changed_annotations:
        patch["annotations"] = changed_annotations
    return {"metadata": patch} if patch else {}


def _service_account(observed: Observed) -> list[Action]:
    body = resources.service_account(observed.listener, observed.settings)
    view = observed.service_account
    if view is None:
        return [CreateObject(SERVICE_ACCOUNT, body, Note("ServiceAccountCreated"))]
    patch = _metadata_patch(view.labels, view.annotations, body)
    if view.deleting or not patch:
        return []
    key = ObjectKey(view.namespace, view.name)
    return [PatchObject(SERVICE_ACCOUNT, key, patch, Note("ServiceAccountUpdated"))]


def _role(observed: Observed) -> list[Action]:
    body = resources.role(observed.listener, observed.settings)
    view = observed.role
    if view is None:
        return [CreateObject(ROLE, body, Note("RoleCreated"))]
    if view.deleting:
        return []
    patch = _metadata_patch(view.labels, view.annotations, body)
    note = Note("RoleUpdated")
    if view.body.get("rules") != body["rules"]:
        patch["rules"] = body["rules"]
        note = Note(
            "RoleRulesUpdated",
            f"Role {view.namespace}/{view.name} now grants exactly what the listener uses",
        )
    if not patch:
        return []
    return [PatchObject(ROLE, ObjectKey(view.namespace, view.name), patch, note)]


def _role_binding(observed: Observed) -> list[Action]:
    body = resources.role_binding(observed.listener, observed.settings)
    view = observed.role_binding
    if view is None:
        return [CreateObject(ROLE_BINDING, body, Note("RoleBindingCreated"))]
    if view.deleting:
        return []
    key = ObjectKey(view.namespace, view.name)
    if view.body.get("roleRef") != body["roleRef"]:
        return [
            DeleteObject(
                ROLE_BINDING,
                key,
                view.uid,
                Note("RoleBindingReplaced", f"RoleBinding {key} names another role; replacing it"),
            )
        ]
    patch = _metadata_patch(view.labels, view.annotations, body)
    if view.body.get("subjects") != body["subjects"]:
        patch["subjects"] = body["subjects"]
    if not patch:
        return []
    return [PatchObject(ROLE_BINDING, key, patch, Note("RoleBindingUpdated"))]


# --- 7: the Secrets ----------------------------------------------------------------------------


def _proxy_secret(observed: Observed, inputs: Inputs, digest: str) -> list[Action]:
    view = observed.proxy_secret
    name = listener_proxy_secret_name(observed.listener.metadata.name)
    if inputs.proxy is None:
        if view is not None and view.owned and not view.deleting:
            key = ObjectKey(view.namespace, view.name)
            return [DeleteObject(SECRET, key, view.uid, Note("ProxySecretDeleted"))]
        return []
    if view is None:
        return [WriteSecret("proxy", True, Note("ProxySecretCreated"))]
    drifted = _changed(view.labels, resources.proxy_secret_labels(observed.listener))
    if view.deleting or (view.digest == digest and not drifted):
        return []
    return [
        WriteSecret(
            "proxy",
            False,
            Note("ProxySecretUpdated", f"proxy Secret {name} rewritten: the proxy settings changed")
            if view.digest != digest
            else Note("ProxySecretLabelsUpdated"),
        )
    ]


def _config_secret(observed: Observed, digest: str) -> list[Action]:
    view = observed.config_secret
    name = listener_config_secret_name(observed.listener.metadata.name)
    if view is None:
        return [WriteSecret("config", True, Note("ConfigSecretCreated"))]
    drifted = _changed(
        view.labels, resources.config_secret_labels(observed.listener, observed.settings)
    ) or _changed(view.annotations, resources.config_secret_annotations(observed.listener))
    if view.deleting or (view.digest == digest and not drifted):
        return []
    if view.digest != digest:
        note = Note(
            "ConfigSecretUpdated",
            f"listener config Secret {name} rewritten: credentials or settings changed",
        )
    else:
        note = Note("ConfigSecretMetadataUpdated")
    return [WriteSecret("config", False, note)]


# --- 8: the pod ---------------------------------------------------------------------------------


class PodDecision(NamedTuple):
    actions: list[Action]
    status: dict[str, Any]
    condition: Cond
    wait: Wait


def _ended(pod: PodView) -> tuple[str, str, int | None]:
    """(reason, message, exit code) of a pod whose listener will not run again."""
    container = pod.listener
    if pod.evicted:
        return "Evicted", pod.message or "the pod was evicted", None
    if container is not None and container.state == "terminated":
        code = container.exit_code
        if container.reason == "OOMKilled":
            return "OOMKilled", "the listener ran out of memory", code
        reason, meaning = EXIT_REASONS.get(
            code if code is not None else -1,
            ("ListenerExited" if code == 0 else "ListenerFailed", "the listener exited"),
        )
        detail = container.message or container.reason
        message = f"{meaning} (exit code {code})" + (f": {detail}" if detail else "")
        return reason, message, code
    reason = pod.reason or f"Pod{pod.phase or 'Ended'}"
    return reason, pod.message or f"the pod is {pod.phase or 'gone'}", None


def _running_condition(pod: PodView | None, now: datetime) -> Cond:
    """ListenerRunning as the pod shows it (no decision involved)."""
    if pod is None:
        return Cond("False", "NoPod", "there is no listener pod")
    if pod.deleting:
        return Cond("False", "PodTerminating", f"listener pod {pod.name} is terminating")
    if pod.ended:
        reason, message, _ = _ended(pod)
        return Cond("False", reason, message)
    container = pod.listener
    if pod.running and container is not None:
        since = f" since {format_kube_time(container.started_at)}" if container.started_at else ""
        return Cond("True", "Running", f"the listener runs in pod {pod.name}{since}")
    if container is not None and container.state == "waiting" and container.reason:
        return Cond("False", container.reason, container.message or container.reason)
    if pod.unschedulable:
        return Cond("False", "Unschedulable", pod.unschedulable)
    return Cond("False", "Pending", pod.message or f"listener pod {pod.name} is starting")


def _pod(observed: Observed, now: datetime, desired: dict[str, Any]) -> PodDecision:
    status = observed.listener.status
    failure = status.last_pod_failure
    pod = observed.pod
    desired_hash = desired["metadata"]["annotations"][keys.LISTENER_POD_HASH_ANNOTATION]
    name = observed.listener.metadata.name
    key = ObjectKey(observed.listener.metadata.namespace, name)
    refused = next((f for f in observed.feedback if f.kind == "Pod"), None)
    if pod is None and refused is not None:
        note = Note(refused.reason, _refusal(refused), True)
        condition = Cond("False", refused.reason, note.message)
        return PodDecision([Report(note)], {}, condition, Wait(backoff=True))
    if pod is None:
        next_at = status.next_pod_attempt_time
        same_config = failure is None or failure.pod_hash == desired_hash
        if next_at is not None and now < next_at and same_config:
            last = f" (last: {failure.reason}: {failure.message})" if failure else ""
            condition = Cond(
                "False",
                "BackOff",
                f"the listener failed {status.pod_failures} time(s) in a row{last}; next "
                f"pod at {format_kube_time(next_at)}",
            )
            # look again at the latest by CONFIG_RETRY_SECONDS: a credential rotated meanwhile
            # (the scale set's Secrets are not watched) is a changed configuration, tried at once
            remaining = (next_at - now).total_seconds()
            return PodDecision([], {}, condition, Wait(min(remaining, CONFIG_RETRY_SECONDS)))
        after = f" after {status.pod_failures} failure(s)" if status.pod_failures else ""
        changes: dict[str, Any] = {"nextPodAttemptTime": None} if next_at is not None else {}
        note = Note("ListenerPodCreated", f"creating listener pod {name}{after}")
        condition = Cond("False", "Pending", f"listener pod {name} created{after}")
        return PodDecision([CreateObject(POD, desired, note)], changes, condition, Wait())
    if pod.deleting:
        return PodDecision([], {}, _running_condition(pod, now), Wait())
    if pod.ended:
        return _pod_ended(observed, now, pod, key)
    if pod.hash != desired_hash:
        note = Note(
            "ListenerConfigChanged",
            f"the listener's configuration changed (credentials, settings or pod template); "
            f"replacing pod {pod.name}",
        )
        condition = Cond("False", "Restarting", note.message)
        return PodDecision([DeleteObject(POD, key, pod.uid, note)], {}, condition, Wait())
    actions: list[Action] = []
    patch = _metadata_patch(pod.labels, pod.annotations, desired)
    if patch:
        actions.append(PatchObject(POD, key, patch, Note("ListenerPodMetadataUpdated")))
    condition = _running_condition(pod, now)
    if not pod.running:
        return PodDecision(actions, {}, condition, Wait())
    return _healthy(observed, now, pod, actions, condition)


def _pod_ended(observed: Observed, now: datetime, pod: PodView, key: ObjectKey) -> PodDecision:
    status = observed.listener.status
    failure = status.last_pod_failure
    reason, message, exit_code = _ended(pod)
    condition = Cond("False", reason, message)
    if failure is not None and failure.pod_uid == pod.uid:
        # already on record (a restart between the status write and the delete)
        return PodDecision(
            [DeleteObject(POD, key, pod.uid, Note("ListenerPodDeleted"))], {}, condition, Wait()
        )
    ran = _ran_before_an_outside_kill(pod, observed.settings)
    failures = status.pod_failures + (0 if ran is not None else 1)
    delay = 0.0 if ran is not None else observed.settings.backoff(failures)
    next_at = now + timedelta(seconds=delay)
    changes: dict[str, Any] = {
        "podFailures": failures,
        "lastPodFailure": {
            "podUid": pod.uid,
            "time": format_kube_time(now),
            "reason": reason,
            "exitCode": exit_code,
            "message": message,
            "podHash": pod.hash,
        },
        "nextPodAttemptTime": format_kube_time(next_at) if delay > 0 else None,
    }
    when = "at once" if delay <= 0 else f"in {delay:g}s (at {format_kube_time(next_at)})"
    counted = (
        f"killed from outside after {ran:g}s of running: not counted ({failures} failure(s) "
        f"in a row)"
        if ran is not None
        else f"failure {failures} in a row"
    )
    note = Note(
        "ListenerPodFailed",
        f"listener pod {pod.name} ended: {reason}: {message}; {counted}, next pod {when}",
        warning=True,
    )
    return PodDecision([DeleteObject(POD, key, pod.uid, note)], changes, condition, Wait())


OUTSIDE_KILL_EXIT_CODES = frozenset({137, 143})
"""SIGKILL and SIGTERM: the listener sends neither to itself (it ends a SIGTERM with exit 0)."""
OUTSIDE_POD_REASONS = frozenset({"Evicted", "Preempting", "NodeShutdown", "NodeLost", "Terminated"})
"""Pod reasons of an end the node or the scheduler chose (eviction, preemption, shutdown)."""


def _ran_before_an_outside_kill(pod: PodView, settings: Settings) -> float | None:
    """Seconds the listener ran, when its end came from outside after it ran at least
    ``backoff_initial``: not a crash loop, so not a failure to back off from. A kill in its
    first seconds, an OOM kill (its own memory: it would run out again) and an end with no
    times reported count as failures."""
    container = pod.listener
    if container is None or container.state != "terminated" or container.reason == "OOMKilled":
        return None
    ran = container.ran_for
    if ran is None or ran < settings.backoff_initial:
        return None
    outside = pod.evicted or pod.reason in OUTSIDE_POD_REASONS
    return ran if outside or container.exit_code in OUTSIDE_KILL_EXIT_CODES else None


def _healthy(
    observed: Observed, now: datetime, pod: PodView, actions: list[Action], condition: Cond
) -> PodDecision:
    status = observed.listener.status
    started = pod.listener.started_at if pod.listener is not None else None
    if not (status.pod_failures or status.next_pod_attempt_time) or started is None:
        return PodDecision(actions, {}, condition, Wait())
    healthy_at = started + timedelta(seconds=observed.settings.healthy_after)
    if now < healthy_at:
        return PodDecision(actions, {}, condition, Wait((healthy_at - now).total_seconds()))
    note = Note(
        "ListenerHealthy",
        f"the listener ran for {observed.settings.healthy_after:g}s; the failure count "
        f"({status.pod_failures}) is reset",
    )
    changes = {"podFailures": 0, "nextPodAttemptTime": None}
    return PodDecision([*actions, Report(note)], changes, condition, Wait())


# --- status ------------------------------------------------------------------------------------


def _status(
    observed: Observed, now: datetime, conditions: Mapping[str, Cond], changes: Mapping[str, Any]
) -> list[Effect | Report]:
    """The one status write of this round (first in the plan), or nothing when nothing changes;
    Warning Events for conditions that turn into a problem."""
    status = observed.listener.status
    current = {c.type: c for c in status.conditions}
    written: list[dict[str, Any]] = []
    notes: list[Note] = []
    changed = False
    for existing in status.conditions:
        if existing.type not in conditions:
            written.append(to_json(existing))
    for kind, cond in conditions.items():
        before = current.get(kind)
        same = before is not None and (before.status, before.reason, before.message) == cond
        transition = (
            before.last_transition_time
            if before is not None and before.status == cond.status and before.last_transition_time
            else now
        )
        written.append(
            {
                "type": kind,
                "status": cond.status,
                "reason": cond.reason,
                "message": cond.message,
                "lastTransitionTime": format_kube_time(transition),
                "observedGeneration": observed.listener.metadata.generation,
            }
        )
        generation = observed.listener.metadata.generation
        if not same or (before is not None and before.observed_generation != generation):
            changed = True
        if not same and _worth_an_event(kind, cond):
            notes.append(Note(cond.reason, cond.message, warning=True))
    patch: dict[str, Any] = dict(_changed_fields(observed, changes))
    if changed:
        patch["conditions"] = sorted(written, key=lambda c: str(c["type"]))
    if not patch:
        return []
    return [WriteStatus(patch, tuple(notes))]


def _worth_an_event(kind: str, cond: Cond) -> bool:
    if cond.status != "False":
        return False
    if kind == CONFIGURED:
        return True
    return cond.reason not in QUIET_WAITING_REASONS and cond.reason not in (
        "NoPod",
        "Pending",
        "PodTerminating",
        "Restarting",
        "BackOff",
        *(reason for reason, _ in EXIT_REASONS.values()),
        "ListenerExited",
        "ListenerFailed",
        "Evicted",
        "OOMKilled",
    )


def _changed_fields(observed: Observed, changes: Mapping[str, Any]) -> dict[str, Any]:
    current = to_json(observed.listener.status)
    return {k: v for k, v in changes.items() if current.get(k) != v}
