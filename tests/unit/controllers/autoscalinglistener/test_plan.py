"""``plan`` row by row (no server): deletion, finalizer, scale set gone, bad input (L8), the
listener's objects and their drift, config content, and the pod's life with its back-off."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from tests.unit.controllers.autoscalinglistener.builders import (
    INPUTS,
    NAME,
    NAMESPACE,
    NOW,
    POD_UID,
    SCALE_SET_NAMESPACE,
    desired,
    events,
    exited,
    kinds,
    listener,
    observed,
    pod_view,
    reasons,
    running,
    secret_view,
    view,
)

from scaleset.api import Policy, format_kube_time, keys
from scaleset.api.listener_rbac import listener_role_rules
from scaleset.controllers.autoscalinglistener import resources
from scaleset.controllers.autoscalinglistener.actions import (
    AddFinalizers,
    CreateObject,
    DeleteListener,
    DeleteObject,
    PatchObject,
    RemoveFinalizers,
    Wait,
    WriteSecret,
    WriteStatus,
)
from scaleset.controllers.autoscalinglistener.inputs import ConfigProblem, Credentials, Inputs
from scaleset.controllers.autoscalinglistener.observed import (
    ContainerView,
    Observed,
    PodView,
    Refused,
    observe_listener,
)
from scaleset.controllers.autoscalinglistener.plan import CONFIG_RETRY_SECONDS, plan
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
)


def status_of(actions: list[object]) -> dict[str, object]:
    writes = [a for a in actions if isinstance(a, WriteStatus)]
    assert len(writes) <= 1, "status is written once per round"
    return dict(writes[0].changes) if writes else {}


def condition(actions: list[object], kind: str) -> dict[str, object]:
    conditions = status_of(actions).get("conditions")
    assert isinstance(conditions, list)
    return next(c for c in conditions if c["type"] == kind)


def wait_of(actions: list[object]) -> Wait:
    last = actions[-1]
    assert isinstance(last, Wait)
    return last


# --- 1, 2, 3: deletion, finalizer, scale set gone ----------------------------------------------


def test_a_new_listener_gets_its_finalizer_first() -> None:
    actions = plan(observed(listener(finalizers=[])), NOW)
    assert actions == [AddFinalizers((), (keys.AUTOSCALING_LISTENER_FINALIZER,))]


def test_deletion_deletes_every_object_in_arcs_order_then_waits() -> None:
    o = observed(listener(deleting=True), complete=True)
    o = dataclasses.replace(o, proxy_secret=secret_view(f"{NAME}-proxy", "d", uid="proxy-uid"))
    actions = plan(o, NOW)
    deletes = [a for a in actions if isinstance(a, DeleteObject)]
    assert [(d.kind, d.key) for d in deletes] == [
        (POD, ObjectKey(NAMESPACE, NAME)),
        (SECRET, ObjectKey(NAMESPACE, f"{NAME}-config")),
        (SECRET, ObjectKey(NAMESPACE, f"{NAME}-proxy")),
        (ROLE_BINDING, ObjectKey(SCALE_SET_NAMESPACE, NAME)),
        (ROLE, ObjectKey(SCALE_SET_NAMESPACE, NAME)),
        (SERVICE_ACCOUNT, ObjectKey(NAMESPACE, NAME)),
    ]
    assert all(d.uid for d in deletes), "every delete carries a uid precondition"
    assert wait_of(actions).seconds == Settings().cleanup_poll
    assert not any(isinstance(a, RemoveFinalizers) for a in actions)


def test_deletion_waits_for_a_terminating_pod_without_deleting_it_again() -> None:
    o = observed(listener(deleting=True))
    o = dataclasses.replace(o, pod=pod_view(pod_hash="h", deleting=True))
    actions = plan(o, NOW)
    assert kinds(actions) == ["Wait"]


def test_once_everything_is_gone_the_finalizer_is_removed() -> None:
    raw = listener(deleting=True, finalizers=["other/keep", keys.AUTOSCALING_LISTENER_FINALIZER])
    actions = plan(observed(raw), NOW)
    assert actions == [
        RemoveFinalizers(("other/keep", keys.AUTOSCALING_LISTENER_FINALIZER), ("other/keep",))
    ]


def test_a_listener_whose_scale_set_is_gone_is_deleted() -> None:
    actions = plan(observed(scale_set_exists=False), NOW)
    assert kinds(actions) == ["DeleteListener"]
    assert isinstance(actions[0], DeleteListener)
    assert actions[0].note.reason == "ScaleSetGone"
    assert "arc-runners/arc" in actions[0].note.message


# --- 4, 6: bad input (L8) ----------------------------------------------------------------------


def test_L8_an_invalid_spec_is_a_condition_naming_the_field_and_nothing_is_built() -> None:
    actions = plan(observed(listener(minRunners=5, maxRunners=2)), NOW)
    assert kinds(actions) == ["WriteStatus", "Wait"]
    configured = condition(actions, "Configured")
    assert configured["status"] == "False"
    assert configured["reason"] == "InvalidSpec"
    assert "spec.minRunners" in str(configured["message"])
    assert [n.reason for n in events(actions)] == ["InvalidSpec"]


def test_a_refused_template_is_a_condition_with_its_reason_and_its_pod_is_deleted() -> None:
    template = {"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}
    o = observed(listener(template=template), pod=pod_view(pod_hash="built-before"))
    actions = plan(o, NOW)
    assert kinds(actions) == ["WriteStatus", "DeleteObject", "Wait"]
    configured = condition(actions, "Configured")
    assert (configured["status"], configured["reason"]) == ("False", "ListenerTemplateRefused")
    assert "spec.template.spec.volumes" in str(configured["message"])
    assert [n.reason for n in events(actions)] == ["ListenerTemplateRefused", "ListenerPodRefused"]


def test_an_invalid_spec_leaves_the_pod_alone_and_a_refusal_beside_it_says_invalid() -> None:
    template = {"spec": {"hostNetwork": True}}
    o = observed(
        listener(minRunners=5, maxRunners=2, template=template), pod=pod_view(pod_hash="h")
    )
    actions = plan(o, NOW)
    assert condition(actions, "Configured")["reason"] == "InvalidSpec"
    assert "DeleteObject" in kinds(actions), "the refused pod still goes"
    invalid_only = observed(listener(minRunners=5, maxRunners=2), pod=pod_view(pod_hash="h"))
    assert kinds(plan(invalid_only, NOW)) == ["WriteStatus", "Wait"]


def test_an_http_url_is_refused_unless_the_policy_allows_it() -> None:
    raw = listener(githubConfigUrl="http://github.internal/acme")
    actions = plan(observed(raw), NOW)
    assert condition(actions, "Configured")["reason"] == "InsecureGitHubUrl"
    allowed = Policy(allow_http_github_url=True)
    _, problems = observe_listener(KubeObject(AUTOSCALING_LISTENER, raw), allowed)
    assert problems == ()


def test_L8_a_missing_github_secret_is_a_condition_and_an_event_but_rbac_is_still_built() -> None:
    problem = ConfigProblem(
        "GitHubSecretMissing",
        "spec.githubConfigSecret",
        "Secret arc-runners/github-config does not exist",
    )
    actions = plan(observed(inputs=problem), NOW)
    assert kinds(actions) == [
        "WriteStatus",
        "CreateObject",
        "CreateObject",
        "CreateObject",
        "Wait",
    ]
    configured = condition(actions, "Configured")
    assert (configured["status"], configured["reason"]) == ("False", "GitHubSecretMissing")
    assert "spec.githubConfigSecret" in str(configured["message"])
    assert [(n.reason, n.warning) for n in events(actions)] == [("GitHubSecretMissing", True)]
    assert wait_of(actions).seconds == CONFIG_RETRY_SECONDS
    assert not any(isinstance(a, WriteSecret) for a in actions)


def test_L8_a_config_problem_already_reported_is_not_reported_again() -> None:
    problem = ConfigProblem("InvalidGitHubSecret", "spec.githubConfigSecret", "lacks keys")
    first = plan(observed(inputs=problem, complete=True), NOW)
    conditions = status_of(first)["conditions"]
    raw = listener(status={"conditions": conditions})
    again = plan(observed(raw, inputs=problem, complete=True), NOW + timedelta(seconds=30))
    assert "InvalidGitHubSecret" not in [n.reason for n in events(again)]
    assert status_of(again) == {}


# --- 5: ServiceAccount, Role, RoleBinding ------------------------------------------------------


def test_a_new_listener_gets_all_its_objects_in_one_plan_in_dependency_order() -> None:
    actions = plan(observed(), NOW)
    assert kinds(actions) == [
        "WriteStatus",
        "CreateObject",
        "CreateObject",
        "CreateObject",
        "WriteSecret",
        "CreateObject",
        "Wait",
    ]
    created = [a.kind for a in actions if isinstance(a, CreateObject)]
    assert created == [SERVICE_ACCOUNT, ROLE, ROLE_BINDING, POD]
    assert [(a.which, a.create) for a in actions if isinstance(a, WriteSecret)] == [
        ("config", True)
    ]
    assert condition(actions, "Configured")["status"] == "True"
    assert condition(actions, "ListenerRunning")["reason"] == "Pending"


def test_a_proxy_adds_the_proxy_secret_before_the_config() -> None:
    inputs = Inputs(credentials=Credentials(token="x" * 12), proxy={"http_proxy": "http://p:3128"})
    raw = listener(proxy={"http": {"url": "http://p:3128"}})
    actions = plan(observed(raw, inputs=inputs), NOW)
    secrets = [a.which for a in actions if isinstance(a, WriteSecret)]
    assert secrets == ["proxy", "config"]


def test_changing_the_runner_set_name_updates_the_role_rules() -> None:
    o = observed(complete=True)
    o = dataclasses.replace(o, listener=o.listener.model_copy(deep=True))
    o.listener.spec.ephemeral_runner_set_name = "arc-new"
    actions = plan(o, NOW)
    patches = [a for a in actions if isinstance(a, PatchObject) and a.kind == ROLE]
    assert len(patches) == 1
    assert patches[0].body["rules"] == listener_role_rules("arc-new")
    assert patches[0].note.reason == "RoleRulesUpdated"


def test_drifted_metadata_is_patched_without_pruning_others_keys() -> None:
    o = observed(complete=True)
    assert o.service_account is not None
    stale = dataclasses.replace(
        o.service_account, labels={"added-by-someone": "yes"}, annotations={}
    )
    raw = listener(serviceAccountMetadata={"labels": {"team": "ci"}, "annotations": {"a": "1"}})
    o = observed(raw, complete=True)
    o = dataclasses.replace(o, service_account=stale)
    patches = [a for a in plan(o, NOW) if isinstance(a, PatchObject)]
    assert [p.kind for p in patches] == [SERVICE_ACCOUNT]
    body = patches[0].body["metadata"]
    assert body["labels"]["team"] == "ci"
    assert body["labels"][keys.LISTENER_NAME_LABEL] == NAME
    assert "added-by-someone" not in body["labels"]
    assert body["annotations"] == {"a": "1"}


def test_a_role_binding_naming_another_role_is_replaced() -> None:
    o = observed(complete=True)
    body = resources.role_binding(o.listener, o.settings)
    body = {**body, "roleRef": {**body["roleRef"], "name": "something-else"}}
    o = dataclasses.replace(o, role_binding=view(body, "rb-uid"))
    deletes = [a for a in plan(o, NOW) if isinstance(a, DeleteObject)]
    assert [(d.kind, d.uid, d.note.reason) for d in deletes] == [
        (ROLE_BINDING, "rb-uid", "RoleBindingReplaced")
    ]


def test_a_complete_healthy_listener_needs_nothing() -> None:
    o = observed(complete=True)
    first = plan(o, NOW)
    raw = listener(status={"conditions": status_of(first)["conditions"]})
    actions = plan(observed(raw, complete=True), NOW)
    assert actions == [Wait()]


# --- 7: config content -------------------------------------------------------------------------


def test_rotated_credentials_rewrite_the_config_and_replace_the_pod() -> None:
    o = observed(complete=True)
    rotated = dataclasses.replace(
        o, inputs=Inputs(credentials=Credentials(token="ghp_" + "r" * 36))
    )
    actions = plan(rotated, NOW)
    writes = [a for a in actions if isinstance(a, WriteSecret)]
    assert [(w.which, w.create, w.note.reason) for w in writes] == [
        ("config", False, "ConfigSecretUpdated")
    ]
    deletes = [a for a in actions if isinstance(a, DeleteObject)]
    assert [(d.kind, d.uid, d.note.reason) for d in deletes] == [
        (POD, POD_UID, "ListenerConfigChanged")
    ]
    assert "podFailures" not in status_of(actions), "a config change is not a failure"
    assert "ghp_" not in repr(actions), "no credential in an action"


def test_a_changed_setting_rewrites_the_config() -> None:
    o = observed(complete=True)
    raw = listener(maxRunners=20)
    changed = dataclasses.replace(observed(raw, complete=True), config_secret=o.config_secret)
    writes = [a for a in plan(changed, NOW) if isinstance(a, WriteSecret)]
    assert [w.note.reason for w in writes] == ["ConfigSecretUpdated"]


def test_config_secret_labels_only_are_updated_in_place_and_the_pod_kept() -> None:
    o = observed(complete=True)
    assert o.config_secret is not None
    o = dataclasses.replace(o, config_secret=dataclasses.replace(o.config_secret, labels={}))
    actions = plan(o, NOW)
    assert [(a.which, a.note.reason) for a in actions if isinstance(a, WriteSecret)] == [
        ("config", "ConfigSecretMetadataUpdated")
    ]
    assert not any(isinstance(a, DeleteObject) for a in actions)


# --- 8: the pod and its back-off ---------------------------------------------------------------


def failed_pod(o: object, code: int = 3, uid: str = POD_UID) -> object:
    want = desired(o)  # type: ignore[arg-type]
    return pod_view(
        pod_hash=want["pod_hash"],
        uid=uid,
        phase="Failed",
        labels=want["pod"]["metadata"]["labels"],
        container=exited(code, "cannot start: GitHub answered 401 Bad credentials"),
    )


def test_a_failed_pod_is_recorded_before_it_is_deleted_and_the_first_retry_is_at_once() -> None:
    o = observed(complete=True)
    o = dataclasses.replace(o, pod=failed_pod(o))
    actions = plan(o, NOW)
    assert kinds(actions).index("WriteStatus") < kinds(actions).index("DeleteObject")
    status = status_of(actions)
    assert status["podFailures"] == 1
    assert status.get("nextPodAttemptTime") is None
    failure = status["lastPodFailure"]
    assert isinstance(failure, dict)
    assert (failure["podUid"], failure["reason"], failure["exitCode"]) == (
        POD_UID,
        "GitHubRefused",
        3,
    )
    assert "401 Bad credentials" in failure["message"]
    note = next(n for n in events(actions) if n.reason == "ListenerPodFailed")
    assert note.warning
    assert "GitHubRefused" in note.message
    assert "next pod at once" in note.message
    running_cond = condition(actions, "ListenerRunning")
    assert (running_cond["status"], running_cond["reason"]) == ("False", "GitHubRefused")


def test_consecutive_failures_back_off_exponentially_up_to_the_cap() -> None:
    settings = Settings()
    delays = [settings.backoff(n) for n in range(1, 10)]
    assert delays == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
    o = observed(listener(status={"podFailures": 2}), complete=True)
    o = dataclasses.replace(o, pod=failed_pod(o))
    status = status_of(plan(o, NOW))
    assert status["podFailures"] == 3
    assert status["nextPodAttemptTime"] == format_kube_time(NOW + timedelta(seconds=20))


def test_a_listener_that_failed_for_days_waits_the_cap() -> None:
    """The count in the status is not bounded (1,100 failures: 3.8 days at the 300 s cap, or a
    status someone wrote); the next attempt is the cap away, and the plan does not raise."""
    o = observed(listener(status={"podFailures": 1_100}), complete=True)
    o = dataclasses.replace(o, pod=failed_pod(o))
    status = status_of(plan(o, NOW))
    assert status["podFailures"] == 1_101
    cap = Settings().backoff_max
    assert status["nextPodAttemptTime"] == format_kube_time(NOW + timedelta(seconds=cap))


def test_no_pod_is_created_before_the_next_attempt_time() -> None:
    next_at = NOW + timedelta(seconds=40)
    o = observed(complete=True)
    want = desired(o)
    status = {
        "podFailures": 4,
        "nextPodAttemptTime": format_kube_time(next_at),
        "lastPodFailure": {"podUid": "old", "reason": "GitHubRefused", "podHash": want["pod_hash"]},
    }
    o = dataclasses.replace(observed(listener(status=status), complete=True), pod=None)
    actions = plan(o, NOW)
    assert not any(isinstance(a, CreateObject) for a in actions)
    assert wait_of(actions).seconds == min(40.0, CONFIG_RETRY_SECONDS), "inputs re-read meanwhile"
    backoff = condition(actions, "ListenerRunning")
    assert backoff["reason"] == "BackOff"
    assert "4 time(s)" in str(backoff["message"])
    assert "GitHubRefused" in str(backoff["message"])


def test_after_the_next_attempt_time_the_pod_is_created_and_the_time_cleared() -> None:
    o = observed(complete=True)
    want = desired(o)
    status = {
        "podFailures": 4,
        "nextPodAttemptTime": format_kube_time(NOW - timedelta(seconds=1)),
        "lastPodFailure": {"podUid": "old", "reason": "GitHubRefused", "podHash": want["pod_hash"]},
    }
    o = dataclasses.replace(observed(listener(status=status), complete=True), pod=None)
    actions = plan(o, NOW)
    assert [a.kind for a in actions if isinstance(a, CreateObject)] == [POD]
    assert status_of(actions)["nextPodAttemptTime"] is None
    assert status_of(actions).get("podFailures") is None, "the count stays until healthy"


def test_a_changed_configuration_is_tried_at_once_despite_the_back_off() -> None:
    status = {
        "podFailures": 6,
        "nextPodAttemptTime": format_kube_time(NOW + timedelta(seconds=300)),
        "lastPodFailure": {"podUid": "old", "reason": "GitHubRefused", "podHash": "old-config"},
    }
    o = dataclasses.replace(observed(listener(status=status), complete=True), pod=None)
    actions = plan(o, NOW)
    assert [a.kind for a in actions if isinstance(a, CreateObject)] == [POD]


def test_a_failure_already_on_record_is_not_counted_twice() -> None:
    """A controller restart between the status write and the delete."""
    status = {
        "podFailures": 2,
        "nextPodAttemptTime": format_kube_time(NOW + timedelta(seconds=10)),
        "lastPodFailure": {"podUid": POD_UID, "reason": "GitHubRefused"},
    }
    o = observed(listener(status=status), complete=True)
    o = dataclasses.replace(o, pod=failed_pod(o))
    actions = plan(o, NOW)
    assert "podFailures" not in status_of(actions)
    deletes = [a for a in actions if isinstance(a, DeleteObject)]
    assert [(d.uid, d.note.reason) for d in deletes] == [(POD_UID, "ListenerPodDeleted")]


def test_an_evicted_pod_is_a_failure_with_reason_evicted() -> None:
    o = observed(complete=True)
    want = desired(o)
    evicted = pod_view(
        pod_hash=want["pod_hash"],
        phase="Failed",
        reason="Evicted",
        message="The node was low on resource: memory.",
    )
    actions = plan(dataclasses.replace(o, pod=evicted), NOW)
    failure = status_of(actions)["lastPodFailure"]
    assert isinstance(failure, dict)
    assert failure["reason"] == "Evicted"
    assert "low on resource" in failure["message"]
    assert [a.uid for a in actions if isinstance(a, DeleteObject)] == [POD_UID]


def _ended_pod(o: Observed, container: ContainerView, **pod: Any) -> PodView:
    return pod_view(pod_hash=desired(o)["pod_hash"], phase="Failed", container=container, **pod)


@pytest.mark.parametrize(
    ("container", "pod"),
    [
        (exited(137, ran=25.0), {}),  # kill -9, the node's hard stop
        (exited(143, ran=25.0), {}),  # SIGTERM it did not handle
        (exited(137, ran=25.0), {"reason": "Evicted", "message": "low on memory"}),
        (exited(137, ran=25.0), {"reason": "NodeShutdown", "message": "node shutdown"}),
    ],
)
def test_a_listener_killed_from_outside_after_it_ran_comes_back_at_once_uncounted(
    container: ContainerView, pod: dict[str, str]
) -> None:
    """A kill from outside (kill -9, eviction, node shutdown) of a listener that ran is not a
    crash loop: counting it made four kills in 65 s cost a 40 s blackout (the soak's seed 15),
    every second of which leaves job events unread."""
    status = {"podFailures": 3, "lastPodFailure": {"podUid": "old", "reason": "Evicted"}}
    o = observed(listener(status=status), complete=True)
    o = dataclasses.replace(o, pod=_ended_pod(o, container, **pod))
    actions = plan(o, NOW)
    written = status_of(actions)
    assert "podFailures" not in written, "not counted"
    assert written.get("nextPodAttemptTime") is None
    failure = written["lastPodFailure"]
    assert isinstance(failure, dict)
    assert failure["podUid"] == POD_UID, "on record, so a restart does not count it either"
    note = next(n for n in events(actions) if n.reason == "ListenerPodFailed")
    assert "next pod at once" in note.message
    assert "not counted" in note.message
    assert [a.uid for a in actions if isinstance(a, DeleteObject)] == [POD_UID]


@pytest.mark.parametrize(
    "container",
    [
        exited(137, ran=2.0),  # killed right after it started: a start-up failure as far as we know
        exited(137, reason="OOMKilled", ran=300.0),  # its own memory: it would again
        exited(70, ran=300.0),  # its own error
        exited(137),  # no times reported
    ],
)
def test_other_ends_still_count_towards_the_back_off(container: ContainerView) -> None:
    status = {"podFailures": 2, "lastPodFailure": {"podUid": "old", "reason": "ListenerCrashed"}}
    o = observed(listener(status=status), complete=True)
    o = dataclasses.replace(o, pod=_ended_pod(o, container))
    written = status_of(plan(o, NOW))
    assert written["podFailures"] == 3
    assert written["nextPodAttemptTime"] == format_kube_time(NOW + timedelta(seconds=20))


def test_a_pod_deleted_by_someone_is_recreated_at_once_without_counting_a_failure() -> None:
    o = dataclasses.replace(observed(complete=True), pod=None)
    actions = plan(o, NOW)
    assert [a.kind for a in actions if isinstance(a, CreateObject)] == [POD]
    assert "podFailures" not in status_of(actions)


def test_the_failure_count_is_reset_after_the_listener_ran_healthy_long_enough() -> None:
    status = {"podFailures": 3, "lastPodFailure": {"podUid": "old", "reason": "GitHubRefused"}}
    started = NOW - timedelta(seconds=100)
    o = observed(listener(status=status), complete=True)
    assert o.pod is not None
    o = dataclasses.replace(o, pod=dataclasses.replace(o.pod, listener=running(started)))
    actions = plan(o, NOW)
    assert wait_of(actions).seconds == 500.0
    assert "podFailures" not in status_of(actions)
    later = plan(o, started + timedelta(seconds=600))
    assert status_of(later)["podFailures"] == 0
    assert "ListenerHealthy" in reasons(later)


def test_a_waiting_container_surfaces_the_kubelets_reason_with_one_event() -> None:
    o = observed(complete=True)
    assert o.pod is not None
    waiting = ContainerView(
        state="waiting",
        reason="CreateContainerConfigError",
        message='secret "arc-7d8c9b5f-listener-config" not found',
    )
    o = dataclasses.replace(o, pod=dataclasses.replace(o.pod, phase="Pending", listener=waiting))
    actions = plan(o, NOW)
    cond = condition(actions, "ListenerRunning")
    assert (cond["status"], cond["reason"]) == ("False", "CreateContainerConfigError")
    assert [n.reason for n in events(actions)] == ["CreateContainerConfigError"]
    assert not any(isinstance(a, DeleteObject) for a in actions), "the kubelet retries"


def test_a_pod_of_another_configuration_is_replaced_not_counted() -> None:
    o = observed(complete=True)
    assert o.pod is not None
    o = dataclasses.replace(o, pod=dataclasses.replace(o.pod, annotations={}))
    actions = plan(o, NOW)
    assert [(a.kind, a.note.reason) for a in actions if isinstance(a, DeleteObject)] == [
        (POD, "ListenerConfigChanged")
    ]
    assert "podFailures" not in status_of(actions)


def test_a_refused_pod_is_a_configuration_problem_with_an_event() -> None:
    refused = Refused("Pod", "PodInvalid", 'spec.priorityClassName: "spot-low" not found')
    o = dataclasses.replace(observed(complete=True), pod=None, feedback=(refused,))
    actions = plan(o, NOW)
    assert not any(isinstance(a, CreateObject) and a.kind == POD for a in actions)
    assert (condition(actions, "Configured")["reason"]) == "PodInvalid"
    assert "PodInvalid" in [n.reason for n in events(actions)]
    assert wait_of(actions).backoff


def test_the_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    first = plan(observed(complete=True), NOW)
    conditions = status_of(first)["conditions"]
    assert isinstance(conditions, list)
    raw = listener(status={"conditions": conditions})
    o = observed(raw, complete=True)
    assert o.pod is not None
    o = dataclasses.replace(o, pod=dataclasses.replace(o.pod, listener=running(NOW)))
    later = plan(o, NOW + timedelta(minutes=5))
    written = status_of(later).get("conditions")
    assert isinstance(written, list)
    running_cond = next(c for c in written if c["type"] == "ListenerRunning")
    assert running_cond["lastTransitionTime"] == format_kube_time(NOW)


def test_inputs_never_show_credentials_in_a_repr() -> None:
    assert INPUTS.credentials.token not in repr(INPUTS)
    assert INPUTS.credentials.token not in repr(observed())
    assert INPUTS.credentials.token not in repr(plan(observed(), NOW))


def test_an_unschedulable_listener_pod_surfaces_the_schedulers_message() -> None:
    o = observed(complete=True)
    assert o.pod is not None
    message = "0/3 nodes are available: 3 node(s) had untolerated taint {spot: true}."
    o = dataclasses.replace(
        o, pod=dataclasses.replace(o.pod, phase="Pending", listener=None, unschedulable=message)
    )
    actions = plan(o, NOW)
    cond = condition(actions, "ListenerRunning")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", message)
    assert [(n.reason, n.warning) for n in events(actions)] == [("Unschedulable", True)]


def test_a_role_the_controller_may_not_grant_says_which_permission_is_missing() -> None:
    refused = Refused(
        "Role",
        "RoleForbidden",
        'roles.rbac.authorization.k8s.io "x" is forbidden: user ... is attempting to grant '
        "RBAC permissions not currently held",
    )
    o = dataclasses.replace(observed(), feedback=(refused,))
    actions = plan(o, NOW)
    assert ROLE not in [a.kind for a in actions if isinstance(a, CreateObject)], "not repeated"
    configured = condition(actions, "Configured")
    assert (configured["status"], configured["reason"]) == ("False", "RoleForbidden")
    assert "ClusterRole must include" in str(configured["message"])
    assert "RoleForbidden" in [n.reason for n in events(actions)]
    assert wait_of(actions).backoff
