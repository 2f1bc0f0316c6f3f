"""``plan`` rule by rule (no server): every row of the AutoscalingRunnerSet decision table, and
the lifecycle rules it keeps (L0 counts, L8 bad input, L10 deletion order and in-place changes)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.unit.controllers.autoscalingrunnerset.builders import (
    CONTROLLER_NAMESPACE,
    FINALIZER,
    IMAGE,
    NAME,
    NAMESPACE,
    SCALE_SET_ID,
    SETTINGS,
    URL,
    chart_object,
    condition,
    effects,
    first,
    info,
    kinds,
    listener,
    notes,
    observed,
    plan_now,
    reasons,
    runner_set,
    scale_set,
    status_write,
    steady,
    template,
    verified,
    wait_of,
)

from scaleset.api import Policy, keys
from scaleset.api.autoscalingrunnerset import AutoscalingRunnerSetStatus
from scaleset.api.naming import listener_name
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.autoscalingrunnerset.actions import (
    FINALIZER_REMOVED,
    AnnotateScaleSet,
    CreateListener,
    CreateRunnerSet,
    CreateScaleSet,
    DeleteListener,
    DeleteRunnerSet,
    DeleteScaleSet,
    FindScaleSet,
    ReadChartObjects,
    ReleaseChartObject,
    RemoveFinalizers,
    ResolveRunnerGroup,
    UpdateListener,
    UpdateRunnerSet,
    UpdateScaleSet,
    VerifyScaleSet,
    Wait,
)
from scaleset.controllers.autoscalingrunnerset.observed import (
    Feedback,
    RunnerGroupInfo,
    scale_set_view,
)
from scaleset.controllers.autoscalingrunnerset.plan import (
    CONFLICT,
    FINALIZING,
    REGISTERED,
    RETIRED_COUNTS,
    RUNNER_SET_CONFLICT,
    VALID,
)
from scaleset.controllers.autoscalingrunnerset.settings import Settings
from scaleset.kube.resources import ROLE, ROLE_BINDING, SECRET, SERVICE_ACCOUNT

# --- 1. ARC still runs -------------------------------------------------------------------------


@pytest.mark.parametrize("deleting", [False, True])
def test_while_arcs_controller_runs_only_the_status_is_written(deleting: bool) -> None:
    ars = scale_set(deleting=deleting, registered=False, finalizers=())
    actions = plan_now(observed(ars, arc_controllers=["arc-systems/arc-gha-rs-controller-x"]))
    assert kinds(effects(actions)) == ["WriteStatus"]
    cond = condition(actions, CONFLICT)
    assert (cond["status"], cond["reason"]) == ("True", "ArcControllerRunning")
    assert "arc-systems/arc-gha-rs-controller-x" in cond["message"]
    assert [(n.reason, n.warning) for n in notes(actions) if n.message] == [
        ("ArcControllerRunning", True)
    ]
    assert set(status_write(actions).changes) == {"conditions"}, "ARC writes phase and counts"


def test_once_arcs_controller_is_gone_the_conflict_clears_with_an_event() -> None:
    ars = scale_set(
        status={
            "conditions": [
                {
                    "type": CONFLICT,
                    "status": "True",
                    "reason": "ArcControllerRunning",
                    "message": "x",
                    "lastTransitionTime": "2027-01-15T07:00:00Z",
                }
            ]
        }
    )
    actions = plan_now(steady(ars))
    cond = condition(actions, CONFLICT)
    assert cond["status"] == "False"
    assert "NoOtherController" in reasons(actions)


# --- 3. finalizer ------------------------------------------------------------------------------


def test_a_new_scale_set_gets_the_finalizer_first_and_alone() -> None:
    actions = plan_now(observed(scale_set(finalizers=(), registered=False)))
    assert kinds(effects(actions)) == ["AddFinalizers"]


# --- 4. invalid spec (L8) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "name", "field"),
    [
        ({"minRunners": 5, "maxRunners": 2}, NAME, "spec.minRunners"),
        ({"githubConfigUrl": "https://github.com/a/b/c/d"}, NAME, "spec.githubConfigUrl"),
        ({"githubConfigUrl": "ftp://github.com/acme"}, NAME, "spec.githubConfigUrl"),
        ({}, "x" * 46, "metadata.name"),
        ({"githubConfigSecret": ""}, NAME, "spec.githubConfigSecret"),
    ],
)
def test_L8_an_invalid_scale_set_gets_a_condition_and_event_naming_the_field(
    spec: dict[str, object], name: str, field: str
) -> None:
    ars = scale_set(spec=spec, name=name, registered=False)
    actions = plan_now(observed(ars))
    assert kinds(effects(actions)) == ["WriteStatus"], "no GitHub call, nothing created"
    cond = condition(actions, VALID)
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert field in cond["message"]
    warnings = [n for n in notes(actions) if n.warning]
    assert [n.reason for n in warnings] == ["InvalidSpec"]
    assert field in warnings[0].message
    assert wait_of(actions).seconds is None, "no retry loop: the next spec change wakes it"


@pytest.mark.parametrize(
    ("spec", "reason", "field"),
    [
        (
            {"listenerTemplate": {"spec": {"containers": [{"name": "listener", "image": "x"}]}}},
            "ListenerTemplateRefused",
            "spec.listenerTemplate.spec.containers[0].image",
        ),
        (
            {"githubConfigUrl": "http://github.internal/acme"},
            "InsecureGitHubUrl",
            "spec.githubConfigUrl",
        ),
        (
            {"githubConfigUrl": "http://github.internal/acme", "minRunners": 3, "maxRunners": 1},
            "InvalidSpec",
            "spec.minRunners",
        ),
    ],
)
def test_L8_a_spec_the_policy_refuses_is_invalid_with_the_refusals_reason(
    spec: dict[str, object], reason: str, field: str
) -> None:
    actions = plan_now(steady(scale_set(spec=spec)))
    assert kinds(effects(actions)) == ["WriteStatus"]
    valid = condition(actions, VALID)
    assert (valid["status"], valid["reason"]) == ("False", reason)
    assert field in valid["message"]
    assert reasons(actions) == [reason]


def test_the_policy_in_the_settings_accepts_what_it_allows() -> None:
    spec = {
        "githubConfigUrl": "http://github.internal/acme",
        "listenerTemplate": {"spec": {"hostNetwork": True}},
    }
    allowing = Policy(allow_http_github_url=True, allow_full_listener_template=True)
    view = scale_set_view(scale_set(spec=spec), allowing)
    assert view.problems == ()
    assert len(scale_set_view(scale_set(spec=spec)).problems) == 2


def test_L8_an_invalid_spec_leaves_the_existing_runner_set_and_listener_alone() -> None:
    ars = scale_set(spec={"minRunners": 5, "maxRunners": 2})
    actions = plan_now(steady(ars))
    assert kinds(effects(actions)) == ["WriteStatus"]


def test_L8_the_invalid_spec_event_is_posted_once_not_on_every_pass() -> None:
    ars = scale_set(spec={"minRunners": 5, "maxRunners": 2}, registered=False)
    first_pass = plan_now(observed(ars))
    written = status_write(first_pass).changes
    again = scale_set(
        spec={"minRunners": 5, "maxRunners": 2}, registered=False, status=dict(written)
    )
    assert effects(plan_now(observed(again))) == []


# --- 5. GitHub problems (L8) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "field"),
    [
        ("GitHubSecretMissing", "spec.githubConfigSecret"),
        ("InvalidGitHubSecret", "spec.githubConfigSecret"),
        ("RunnerGroupNotFound", "spec.runnerGroup"),
        ("GitHubUnauthorized", "spec.githubConfigSecret"),
        ("GitHubForbidden", "spec.githubConfigSecret"),
        ("GitHubNotFound", "spec.githubConfigUrl"),
    ],
)
def test_L8_a_github_problem_is_a_condition_an_event_and_a_backoff(reason: str, field: str) -> None:
    problem = GitHubProblem(reason, field, "what is wrong")
    actions = plan_now(observed(scale_set(registered=False), feedback=Feedback(problem=problem)))
    assert kinds(effects(actions)) == ["WriteStatus"]
    cond = condition(actions, REGISTERED)
    assert (cond["status"], cond["reason"]) == ("False", reason)
    assert field in cond["message"]
    assert [(n.reason, n.warning) for n in notes(actions) if n.message] == [(reason, True)]
    assert wait_of(actions).seconds == SETTINGS.retry_initial


def test_L8_the_backoff_doubles_per_consecutive_failure_up_to_a_cap() -> None:
    problem = GitHubProblem("GitHubUnauthorized", "spec.githubConfigSecret", "401")
    waits = [
        wait_of(
            plan_now(observed(scale_set(), feedback=Feedback(problem=problem), failures=failures))
        ).seconds
        or 0.0
        for failures in range(10)
    ]
    assert waits[:4] == [5.0, 10.0, 20.0, 40.0]
    assert waits[-1] == SETTINGS.retry_max
    assert waits == sorted(waits)


def test_L8_a_scale_set_failing_for_days_waits_the_cap() -> None:
    """1,030 failures in a row (3.6 days at the 300 s cap) is a wait the size of the cap, not
    an overflow that fails every reconcile of the scale set."""
    problem = GitHubProblem("GitHubUnauthorized", "spec.githubConfigSecret", "401")
    for failures in (1_030, 10**6):
        o = observed(scale_set(), feedback=Feedback(problem=problem), failures=failures)
        assert wait_of(plan_now(o)).seconds == SETTINGS.retry_max


# --- 6. register -------------------------------------------------------------------------------


def test_an_unregistered_scale_set_is_looked_up_in_the_default_group_first() -> None:
    actions = plan_now(observed(scale_set(registered=False)))
    assert effects(actions) == [FindScaleSet(1, NAME)]


def test_a_named_runner_group_is_resolved_before_the_lookup() -> None:
    ars = scale_set(registered=False, spec={"runnerGroup": "Builders"})
    assert effects(plan_now(observed(ars))) == [ResolveRunnerGroup("Builders")]
    resolved = Feedback(runner_group=RunnerGroupInfo(4, "builders"))
    assert effects(plan_now(observed(ars, feedback=resolved))) == [FindScaleSet(4, NAME)]


def test_nothing_found_creates_the_scale_set_with_its_name_and_the_chart_labels() -> None:
    ars = scale_set(
        registered=False,
        spec={
            "runnerScaleSetName": "linux-x64",
            "runnerScaleSetLabels": ["gpu", "linux-x64", "big"],
        },
    )
    actions = plan_now(observed(ars, feedback=Feedback(looked_up=True)))
    assert effects(actions) == [CreateScaleSet("linux-x64", 1, ("linux-x64", "gpu", "big"))]


def test_a_created_scale_set_is_annotated_with_id_name_group_and_url_labels() -> None:
    created = info(id=42, name=NAME)
    ars = scale_set(registered=False, labels={})
    ars.raw["metadata"]["labels"] = {}
    actions = plan_now(
        observed(ars, feedback=Feedback(looked_up=True, registered=created, created=True))
    )
    action = first(actions)
    assert isinstance(action, AnnotateScaleSet)
    assert action.annotations == {
        keys.RUNNER_SCALE_SET_ID_ANNOTATION: "42",
        keys.RUNNER_SCALE_SET_NAME_ANNOTATION: NAME,
        keys.RUNNER_GROUP_NAME_ANNOTATION: "Default",
    }
    assert action.labels == {keys.ORGANIZATION_LABEL: "acme"}
    assert action.note.reason == "ScaleSetRegistered"


def test_an_existing_scale_set_of_that_name_is_adopted_not_created_again() -> None:
    found = info(id=9)
    actions = plan_now(
        observed(scale_set(registered=False), feedback=Feedback(looked_up=True, registered=found))
    )
    action = first(actions)
    assert isinstance(action, AnnotateScaleSet)
    assert action.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION] == "9"
    assert action.note.reason == "ScaleSetAdopted"


@pytest.mark.parametrize("value", ["", "abc", "0", "-3"])
def test_an_unusable_id_annotation_means_not_registered(value: str) -> None:
    ars = scale_set(annotations={keys.RUNNER_SCALE_SET_ID_ANNOTATION: value})
    assert effects(plan_now(observed(ars))) == [FindScaleSet(1, NAME)]


def test_arcs_version_label_gate_does_not_exist_here() -> None:
    ars = scale_set(labels={keys.VERSION_LABEL: "0.2.0"})
    actions = plan_now(steady(ars))
    assert not any(isinstance(action, DeleteRunnerSet | DeleteScaleSet) for action in actions)
    assert all(not isinstance(action, RemoveFinalizers) for action in actions)


# --- 7. verify (ARC #4571) ---------------------------------------------------------------------


def test_the_id_is_verified_with_github_on_the_first_pass() -> None:
    o = steady(verified_as=None)
    assert effects(plan_now(o)) == [VerifyScaleSet(SCALE_SET_ID)]


def test_a_fresh_verification_is_not_repeated_and_the_next_one_is_scheduled() -> None:
    o = steady()
    actions = plan_now(o, timedelta(seconds=100))
    assert not any(isinstance(action, VerifyScaleSet) for action in actions)
    assert wait_of(actions).seconds == pytest.approx(SETTINGS.verify_interval - 100)


def test_the_id_is_verified_again_after_the_interval_and_after_a_spec_change() -> None:
    assert effects(plan_now(steady(), timedelta(seconds=SETTINGS.verify_interval))) == [
        VerifyScaleSet(SCALE_SET_ID)
    ]
    changed = scale_set(generation=2)
    assert effects(plan_now(steady(changed))) == [VerifyScaleSet(SCALE_SET_ID)]


def test_a_scale_set_gone_on_github_is_registered_again_with_an_event() -> None:
    gone = Feedback(missing_id=SCALE_SET_ID)
    assert effects(plan_now(steady(verified_as=None, feedback=gone))) == [FindScaleSet(1, NAME)]
    looked = Feedback(missing_id=SCALE_SET_ID, looked_up=True)
    assert effects(plan_now(steady(verified_as=None, feedback=looked))) == [
        CreateScaleSet(NAME, 1, (NAME,))
    ]
    again = Feedback(missing_id=SCALE_SET_ID, looked_up=True, registered=info(id=99), created=True)
    action = first(plan_now(steady(verified_as=None, feedback=again)))
    assert isinstance(action, AnnotateScaleSet)
    assert action.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION] == "99"
    assert (action.note.reason, action.note.warning) == ("ScaleSetRecreated", True)
    assert "scale set 7 is gone" in action.note.message
    assert "as 99" in action.note.message


def test_a_new_id_flows_into_the_runner_set_and_the_listener_in_place() -> None:
    ars = scale_set(annotations={keys.RUNNER_SCALE_SET_ID_ANNOTATION: "99"})
    old = scale_set()
    o = observed(
        ars,
        runner_sets=[runner_set(in_sync_with=old)],
        listeners=[listener(old)],
        verified_as=verified(id=99),
    )
    action = first(plan_now(o))
    assert isinstance(action, UpdateRunnerSet)
    assert action.patch["spec"]["ephemeralRunnerSpec"] == {"runnerScaleSetId": 99}
    o = observed(
        ars,
        runner_sets=[runner_set(in_sync_with=ars)],
        listeners=[listener(old)],
        verified_as=verified(id=99),
    )
    action = first(plan_now(o))
    assert isinstance(action, UpdateListener)
    assert action.patch["spec"] == {"runnerScaleSetId": 99}


# --- 8. update on GitHub -----------------------------------------------------------------------


def test_a_renamed_scale_set_is_renamed_on_github_then_annotated() -> None:
    ars = scale_set(spec={"runnerScaleSetName": "renamed"})
    action = first(plan_now(steady(ars)))
    assert isinstance(action, UpdateScaleSet)
    assert (action.name, action.runner_group_id) == ("renamed", None)
    assert action.labels == ("renamed",)
    after = steady(ars, verified_as=verified(name="renamed", labels=("renamed",)))
    action = first(plan_now(after))
    assert isinstance(action, AnnotateScaleSet)
    assert action.annotations == {keys.RUNNER_SCALE_SET_NAME_ANNOTATION: "renamed"}


def test_a_runner_group_change_resolves_the_group_and_moves_the_scale_set() -> None:
    ars = scale_set(spec={"runnerGroup": "builders"})
    assert effects(plan_now(steady(ars))) == [ResolveRunnerGroup("builders")]
    resolved = Feedback(runner_group=RunnerGroupInfo(5, "Builders"))
    action = first(plan_now(steady(ars, feedback=resolved)))
    assert isinstance(action, UpdateScaleSet)
    assert (action.name, action.runner_group_id, action.labels) == (None, 5, None)
    moved = steady(ars, verified_as=verified(runner_group_id=5, runner_group_name="Builders"))
    action = first(plan_now(moved))
    assert isinstance(action, AnnotateScaleSet)
    assert action.annotations == {keys.RUNNER_GROUP_NAME_ANNOTATION: "Builders"}


def test_label_changes_and_updates_left_on_are_fixed_on_github() -> None:
    ars = scale_set(spec={"runnerScaleSetLabels": ["gpu"]})
    action = first(plan_now(steady(ars, verified_as=verified(disable_update=False))))
    assert isinstance(action, UpdateScaleSet)
    assert action.labels == (NAME, "gpu")
    assert "runner updates disabled" in action.note.message


def test_labels_are_compared_case_insensitively_and_in_any_order() -> None:
    ars = scale_set(spec={"runnerScaleSetLabels": ["GPU", "linux"]})
    o = steady(ars, verified_as=verified(labels=("linux", "gpu", NAME.upper())))
    assert not any(isinstance(action, UpdateScaleSet) for action in plan_now(o))


def test_a_removed_annotation_comes_back_from_what_github_says() -> None:
    ars = scale_set()
    del ars.raw["metadata"]["annotations"][keys.RUNNER_GROUP_NAME_ANNOTATION]
    action = first(plan_now(steady(ars, runner_sets=[runner_set(in_sync_with=scale_set())])))
    assert action == AnnotateScaleSet({keys.RUNNER_GROUP_NAME_ANNOTATION: "Default"}, {})


# --- 9. runner set -----------------------------------------------------------------------------


def test_the_runner_set_is_created_named_like_the_scale_set_and_owned_by_it() -> None:
    ars = scale_set(
        spec={
            "proxy": {"https": {"url": "http://proxy:3128"}},
            "ephemeralRunnerSetMetadata": {"labels": {"team": "a"}, "annotations": {"x": "1"}},
            "ephemeralRunnerMetadata": {"labels": {"role": "ci"}},
        }
    )
    action = first(plan_now(observed(ars, verified_as=verified())))
    assert isinstance(action, CreateRunnerSet)
    body = action.body
    meta = body["metadata"]
    assert (meta["name"], meta["namespace"]) == (NAME, NAMESPACE)
    assert meta["ownerReferences"][0]["uid"] == "ars-uid-1"
    assert meta["ownerReferences"][0]["controller"] is True
    assert meta["labels"][keys.COMPONENT_LABEL] == keys.COMPONENT_RUNNER_SET
    assert meta["labels"]["team"] == "a"
    assert meta["labels"][keys.ORGANIZATION_LABEL] == "acme"
    assert meta["annotations"]["x"] == "1"
    assert meta["annotations"][keys.RUNNER_SCALE_SET_NAME_ANNOTATION] == NAME
    assert keys.SPEC_HASH_ANNOTATION in meta["annotations"]
    assert keys.INTEGRITY_HASH_ANNOTATION not in meta["annotations"]
    spec = body["spec"]
    assert spec["patchID"] == 0
    assert "replicas" not in spec
    assert spec["ephemeralRunnerSpec"]["runnerScaleSetId"] == SCALE_SET_ID
    assert spec["ephemeralRunnerSpec"]["githubConfigUrl"] == URL
    assert spec["ephemeralRunnerSpec"]["proxy"] == {"https": {"url": "http://proxy:3128"}}
    assert spec["ephemeralRunnerSpec"]["spec"] == template()["spec"]
    assert spec["ephemeralRunnerMetadata"] == {"labels": {"role": "ci"}}


def test_proxy_and_server_tls_reach_runner_set_and_listener() -> None:
    tls = {"certificateFrom": {"configMapKeyRef": {"name": "ca", "key": "ca.crt"}}}
    proxy = {"https": {"url": "http://proxy:3128", "credentialSecretRef": "proxy-auth"}}
    ars = scale_set(spec={"githubServerTLS": tls, "proxy": proxy})
    action = first(plan_now(observed(ars, verified_as=verified())))
    assert isinstance(action, CreateRunnerSet)
    runner_spec = action.body["spec"]["ephemeralRunnerSpec"]
    assert (runner_spec["githubServerTLS"], runner_spec["proxy"]) == (tls, proxy)
    o = observed(ars, runner_sets=[runner_set(in_sync_with=ars)], verified_as=verified())
    action = first(plan_now(o))
    assert isinstance(action, CreateListener)
    assert (action.body["spec"]["githubServerTLS"], action.body["spec"]["proxy"]) == (tls, proxy)


def test_excluded_label_prefixes_are_not_propagated() -> None:
    ars = scale_set(labels={"internal.example.com/owner": "x", "team": "a"})
    settings = Settings(CONTROLLER_NAMESPACE, IMAGE, exclude_label_prefixes=("internal.",))
    action = first(plan_now(observed(ars, verified_as=verified(), settings=settings)))
    assert isinstance(action, CreateRunnerSet)
    labels = action.body["metadata"]["labels"]
    assert "internal.example.com/owner" not in labels
    assert labels["team"] == "a"


def test_a_runner_set_in_sync_is_left_alone_and_the_listener_comes_next() -> None:
    ars = scale_set()
    o = observed(ars, runner_sets=[runner_set(in_sync_with=ars)], verified_as=verified())
    action = first(plan_now(o))
    assert isinstance(action, CreateListener)


def test_L10_a_runner_spec_change_updates_the_runner_set_in_place_without_waiting() -> None:
    old = scale_set()
    new = scale_set(spec={"template": template("runner:2")}, generation=2)
    busy = {"busyEphemeralRunners": 2, "idleEphemeralRunners": 1, "runningEphemeralRunners": 2}
    o = observed(
        new,
        runner_sets=[runner_set(in_sync_with=old, status=busy)],
        listeners=[listener(old)],
        verified_as=verified(generation=2),
    )
    actions = plan_now(o)
    action = first(actions)
    assert isinstance(action, UpdateRunnerSet)
    assert action.name == NAME
    assert action.patch["spec"]["ephemeralRunnerSpec"]["spec"]["containers"][0]["image"] == (
        "runner:2"
    )
    assert action.note.reason == "RunnerSetUpdated"
    assert not any(isinstance(a, DeleteListener | DeleteRunnerSet) for a in actions)


def test_L10_after_a_spec_change_the_listener_is_untouched() -> None:
    old = scale_set()
    new = scale_set(spec={"template": template("runner:2")}, generation=2)
    o = observed(
        new,
        runner_sets=[runner_set(in_sync_with=new)],
        listeners=[listener(old)],
        verified_as=verified(generation=2),
    )
    assert kinds(effects(plan_now(o))) in ([], ["WriteStatus"])


def test_proxy_secret_ref_written_by_the_runner_set_controller_is_kept() -> None:
    ars = scale_set(spec={"template": template("runner:2")})
    old_spec = dict(runner_set(in_sync_with=scale_set()).spec["ephemeralRunnerSpec"])
    old_spec["proxySecretRef"] = "arc-runner-set-abc-runner-proxy"
    current = runner_set(runner_spec=old_spec, annotations={keys.SPEC_HASH_ANNOTATION: "old"})
    action = first(plan_now(observed(ars, runner_sets=[current], verified_as=verified())))
    assert isinstance(action, UpdateRunnerSet)
    assert "proxySecretRef" not in action.patch["spec"]["ephemeralRunnerSpec"]


def test_labels_and_metadata_changes_reach_the_runner_set_without_a_spec_write() -> None:
    old = scale_set()
    new = scale_set(
        labels={"team": "b"},
        spec={"ephemeralRunnerSetMetadata": {"annotations": {"owner": "ci"}}},
    )
    o = observed(new, runner_sets=[runner_set(in_sync_with=old)], verified_as=verified())
    action = first(plan_now(o))
    assert isinstance(action, UpdateRunnerSet)
    assert "spec" not in action.patch
    assert action.patch["metadata"]["labels"] == {"team": "b"}
    assert action.patch["metadata"]["annotations"]["owner"] == "ci"
    assert action.note.message == ""


def test_ephemeral_runner_metadata_change_reaches_the_runner_set_spec() -> None:
    old = scale_set()
    new = scale_set(spec={"ephemeralRunnerMetadata": {"annotations": {"a": "1"}}})
    o = observed(new, runner_sets=[runner_set(in_sync_with=old)], verified_as=verified())
    action = first(plan_now(o))
    assert isinstance(action, UpdateRunnerSet)
    assert action.patch["spec"] == {"ephemeralRunnerMetadata": {"annotations": {"a": "1"}}}


def test_takeover_of_an_arc_runner_set_with_the_same_spec_writes_no_spec() -> None:
    ars = scale_set()
    in_sync = runner_set(in_sync_with=ars)
    arc_spec = dict(in_sync.spec["ephemeralRunnerSpec"])
    # what Go's encoder adds: zero-value structs and empty maps the chart never wrote
    arc_spec["spec"] = {
        **arc_spec["spec"],
        "containers": [{**arc_spec["spec"]["containers"][0], "resources": {}}],
    }
    arc_spec["metadata"] = {"creationTimestamp": None}
    annotations = {
        keys.INTEGRITY_HASH_ANNOTATION: "arc-hash",
        keys.RUNNER_GROUP_NAME_ANNOTATION: "Default",
        keys.RUNNER_SCALE_SET_NAME_ANNOTATION: NAME,
    }
    arc_made = runner_set(runner_spec=arc_spec, annotations=annotations)
    action = first(plan_now(observed(ars, runner_sets=[arc_made], verified_as=verified())))
    assert isinstance(action, UpdateRunnerSet)
    assert "spec" not in action.patch
    assert keys.INTEGRITY_HASH_ANNOTATION not in action.patch["metadata"]["annotations"]
    assert action.note.reason == "RunnerSetAdopted"


def test_takeover_adopts_a_0_14_2_runner_set_with_a_generated_name() -> None:
    ars = scale_set()
    generated = runner_set(f"{NAME}-x7k2p", in_sync_with=ars)
    o = observed(ars, runner_sets=[generated], verified_as=verified())
    action = first(plan_now(o))
    assert isinstance(action, CreateListener)
    assert action.body["spec"]["ephemeralRunnerSetName"] == f"{NAME}-x7k2p"


def test_extra_runner_sets_are_deleted_and_drain() -> None:
    ars = scale_set()
    older = runner_set(f"{NAME}-aaaaa", in_sync_with=ars, created="2027-01-10T00:00:00Z")
    newer = runner_set(f"{NAME}-bbbbb", in_sync_with=ars, created="2027-01-12T00:00:00Z")
    action = first(plan_now(observed(ars, runner_sets=[older, newer], verified_as=verified())))
    assert isinstance(action, DeleteRunnerSet)
    assert action.name == f"{NAME}-aaaaa"
    assert action.note.reason == "ExtraRunnerSetDeleted"


def test_while_the_runner_set_is_deleted_nothing_replaces_it_and_the_listener_stays() -> None:
    ars = scale_set()
    going = runner_set(in_sync_with=ars, deleting=True)
    actions = plan_now(
        observed(ars, runner_sets=[going], listeners=[listener(ars)], verified_as=verified())
    )
    assert kinds(effects(actions)) in ([], ["WriteStatus"])
    assert status_write(actions).changes["phase"] == "Pending"


def test_a_create_meeting_an_object_the_cache_lacks_writes_no_stale_status() -> None:
    stale = Feedback(runner_set_exists=True)
    assert plan_now(observed(scale_set(), verified_as=verified(), feedback=stale)) == [Wait()]


def test_a_runner_set_with_our_name_owned_by_someone_else_is_reported_not_taken() -> None:
    foreign = runner_set()
    foreign.raw["metadata"]["ownerReferences"] = []
    actions = plan_now(observed(scale_set(), name_holder=foreign, verified_as=verified()))
    assert kinds(effects(actions)) == ["WriteStatus"]
    cond = condition(actions, RUNNER_SET_CONFLICT)
    assert (cond["status"], cond["reason"]) == ("True", "RunnerSetNameTaken")


# --- 10. listener ------------------------------------------------------------------------------


def test_the_listener_is_created_in_the_controller_namespace_as_arc_fills_it() -> None:
    ars = scale_set(spec={"minRunners": 1, "listenerMetrics": {"counters": {}}})
    settings = Settings(CONTROLLER_NAMESPACE, IMAGE, image_pull_secrets=("regcred",))
    o = observed(
        ars, runner_sets=[runner_set(in_sync_with=ars)], verified_as=verified(), settings=settings
    )
    action = first(plan_now(o))
    assert isinstance(action, CreateListener)
    meta = action.body["metadata"]
    assert meta["namespace"] == CONTROLLER_NAMESPACE
    assert meta["name"] == listener_name(NAME, NAMESPACE, "", URL)
    assert meta["labels"][keys.COMPONENT_LABEL] == keys.COMPONENT_LISTENER
    spec = action.body["spec"]
    assert spec == {
        "githubConfigUrl": URL,
        "githubConfigSecret": "github-config",
        "runnerScaleSetId": SCALE_SET_ID,
        "autoscalingRunnerSetNamespace": NAMESPACE,
        "autoscalingRunnerSetName": NAME,
        "ephemeralRunnerSetName": NAME,
        "minRunners": 1,
        "maxRunners": 2147483647,
        "image": IMAGE,
        "imagePullSecrets": [{"name": "regcred"}],
        "metrics": {"counters": {}},
    }


def test_no_listener_churn_from_image_pull_secrets() -> None:
    ars = scale_set()
    settings = Settings(CONTROLLER_NAMESPACE, IMAGE, image_pull_secrets=("regcred",))
    o = steady(ars, listeners=[listener(ars, settings=settings)], settings=settings)
    assert kinds(effects(plan_now(o))) in ([], ["WriteStatus"])


def test_a_max_runners_change_updates_the_listener_in_place_and_not_the_runner_set() -> None:
    old = scale_set()
    new = scale_set(spec={"maxRunners": 3}, generation=2)
    o = observed(
        new,
        runner_sets=[runner_set(in_sync_with=old)],
        listeners=[listener(old)],
        verified_as=verified(generation=2),
    )
    action = first(plan_now(o))
    assert isinstance(action, UpdateListener)
    assert action.patch["spec"] == {"maxRunners": 3}
    assert action.note.reason == "ListenerUpdated"


def test_a_secret_name_change_updates_runner_set_and_listener() -> None:
    old = scale_set()
    new = scale_set(spec={"githubConfigSecret": "other"}, generation=2)
    o = observed(
        new,
        runner_sets=[runner_set(in_sync_with=old)],
        listeners=[listener(old)],
        verified_as=verified(generation=2),
    )
    action = first(plan_now(o))
    assert isinstance(action, UpdateRunnerSet)
    assert action.patch["spec"]["ephemeralRunnerSpec"] == {"githubConfigSecret": "other"}
    o = observed(
        new,
        runner_sets=[runner_set(in_sync_with=new)],
        listeners=[listener(old)],
        verified_as=verified(generation=2),
    )
    action = first(plan_now(o))
    assert isinstance(action, UpdateListener)
    assert action.patch["spec"] == {"githubConfigSecret": "other"}


def test_the_listener_always_names_the_current_runner_set() -> None:
    ars = scale_set()
    pointing_elsewhere = listener(ars, spec={"ephemeralRunnerSetName": f"{NAME}-gone1"})
    o = steady(ars, listeners=[pointing_elsewhere])
    action = first(plan_now(o))
    assert isinstance(action, UpdateListener)
    assert action.patch["spec"] == {"ephemeralRunnerSetName": NAME}


def test_a_listener_under_another_name_is_deleted_before_the_new_one_is_made() -> None:
    ars = scale_set(spec={"runnerGroup": "builders"})
    old = listener(scale_set())
    o = observed(
        ars,
        runner_sets=[runner_set(in_sync_with=ars)],
        listeners=[old],
        verified_as=verified(runner_group_id=5, runner_group_name="builders"),
    )
    action = first(plan_now(o))
    assert isinstance(action, AnnotateScaleSet)  # group annotation first
    annotated = scale_set(
        spec={"runnerGroup": "builders"},
        annotations={keys.RUNNER_GROUP_NAME_ANNOTATION: "builders"},
    )
    o = observed(
        annotated,
        runner_sets=[runner_set(in_sync_with=annotated)],
        listeners=[old],
        verified_as=verified(runner_group_id=5, runner_group_name="builders"),
    )
    action = first(plan_now(o))
    assert isinstance(action, DeleteListener)
    assert action.name == old.name


# --- 11. status (L0) ---------------------------------------------------------------------------


COUNTS = {
    "currentReplicas": 4,
    "pendingEphemeralRunners": 2,
    "runningEphemeralRunners": 1,
    "failedEphemeralRunners": 1,
    "startingEphemeralRunners": 1,
    "idleEphemeralRunners": 1,
    "busyEphemeralRunners": 1,
    "terminalEphemeralRunners": 1,
    "deletingEphemeralRunners": 0,
}
"""An EphemeralRunnerSet's runner counts (ARC's and L0's)."""

SCALE_SET_COUNTS = RETIRED_COUNTS


def test_the_retired_counts_are_every_count_of_the_scale_set_status() -> None:
    counts = {
        field.alias
        for field in AutoscalingRunnerSetStatus.model_fields.values()
        if field.annotation is int
    }
    assert counts == set(RETIRED_COUNTS)


def test_runner_counts_stay_on_the_runner_set_and_cost_the_scale_set_no_write() -> None:
    """The counts live on the EphemeralRunnerSet (L0: its status and columns, at most one write
    a second) and in the metrics; the scale set's status does not copy them, so a runner's
    change costs the scale set no status write (ARC 0.15 dropped them from both)."""
    ars = scale_set()
    actions = plan_now(steady(ars, runner_sets=[runner_set(in_sync_with=ars, status=COUNTS)]))
    changes = status_write(actions).changes
    assert changes["phase"] == "Running"
    assert not set(changes) & set(SCALE_SET_COUNTS)
    settled = scale_set(status={**changes})
    moved = {**COUNTS, "pendingEphemeralRunners": 1, "runningEphemeralRunners": 2}
    for counts in (COUNTS, moved, {"currentReplicas": 0}):
        o = steady(settled, runner_sets=[runner_set(in_sync_with=ars, status=counts)])
        assert effects(plan_now(o)) == []


def test_counts_an_older_writer_left_on_the_scale_set_are_removed_once() -> None:
    """ARC 0.14 (or an earlier scaleset) wrote the counts into the scale set's status: one write
    removes them (a merge patch's null), so its columns never show numbers nobody updates."""
    ars = scale_set()
    sets = [runner_set(in_sync_with=ars, status=COUNTS)]
    settled = status_write(plan_now(steady(ars, runner_sets=sets))).changes
    stale = {key: 3 for key in SCALE_SET_COUNTS}
    actions = plan_now(steady(scale_set(status={**settled, **stale}), runner_sets=sets))
    assert status_write(actions).changes == dict.fromkeys(SCALE_SET_COUNTS)
    assert effects(plan_now(steady(scale_set(status=settled), runner_sets=sets))) == []


def test_an_outdated_runner_set_makes_the_scale_set_outdated_and_nothing_is_deleted() -> None:
    ars = scale_set()
    outdated = runner_set(in_sync_with=ars, status={"phase": "Outdated"})
    actions = plan_now(steady(ars, runner_sets=[outdated]))
    assert kinds(effects(actions)) == ["WriteStatus"]
    assert status_write(actions).changes["phase"] == "Outdated"
    assert [n.reason for n in notes(actions) if n.warning] == ["RunnerOutdated"]


def test_without_a_runner_set_the_phase_is_pending() -> None:
    foreign = runner_set()
    foreign.raw["metadata"]["ownerReferences"] = []
    actions = plan_now(observed(scale_set(), name_holder=foreign, verified_as=verified()))
    assert status_write(actions).changes["phase"] == "Pending"


def test_a_steady_scale_set_writes_nothing() -> None:
    o = steady()
    written = status_write(plan_now(o)).changes
    settled = steady(scale_set(status=dict(written)))
    actions = plan_now(settled)
    assert effects(actions) == []
    assert reasons(actions) == []


# --- 2. deletion (L10) -------------------------------------------------------------------------


def test_L10_deletion_deletes_the_runner_set_first_and_keeps_the_listener() -> None:
    ars = scale_set(deleting=True)
    o = observed(ars, runner_sets=[runner_set(in_sync_with=ars)], listeners=[listener(ars)])
    actions = plan_now(o)
    action = first(actions)
    assert isinstance(action, DeleteRunnerSet)
    assert action.name == NAME
    assert not any(isinstance(a, DeleteListener | DeleteScaleSet) for a in actions)


def test_L10_while_the_runner_set_drains_the_listener_stays_and_progress_is_shown() -> None:
    ars = scale_set(deleting=True)
    draining = runner_set(
        in_sync_with=ars,
        deleting=True,
        status={"busyEphemeralRunners": 1, "idleEphemeralRunners": 1},
    )
    actions = plan_now(observed(ars, runner_sets=[draining], listeners=[listener(ars)]))
    assert kinds(effects(actions)) == ["WriteStatus"]
    cond = condition(actions, FINALIZING)
    assert cond["reason"] == "DrainingRunnerSet"
    assert "1 busy" in cond["message"]
    assert wait_of(actions).seconds is None


def test_L10_once_the_runner_set_is_gone_the_listener_goes() -> None:
    ars = scale_set(deleting=True)
    actions = plan_now(observed(ars, listeners=[listener(ars)]))
    assert isinstance(first(actions), DeleteListener)
    going = listener(ars, deleting=True)
    actions = plan_now(observed(ars, listeners=[going]))
    assert kinds(effects(actions)) in ([], ["WriteStatus"])
    assert not any(isinstance(a, DeleteScaleSet) for a in actions)


def test_L10_then_the_scale_set_on_github_then_its_annotation() -> None:
    ars = scale_set(deleting=True)
    action = first(plan_now(observed(ars)))
    assert isinstance(action, DeleteScaleSet)
    assert action.scale_set_id == SCALE_SET_ID
    action = first(plan_now(observed(ars, feedback=Feedback(scale_set_deleted=True))))
    assert isinstance(action, AnnotateScaleSet)
    assert action.annotations == {keys.RUNNER_SCALE_SET_ID_ANNOTATION: None}


def test_L10_then_the_chart_objects_in_arcs_order_then_our_finalizer() -> None:
    ars = scale_set(deleting=True, registered=False)
    assert effects(plan_now(observed(ars, chart_objects=None))) == [ReadChartObjects()]
    objects = [
        chart_object(keys.CLEANUP_KUBERNETES_MODE_ROLE_BINDING_NAME_ANNOTATION, ROLE_BINDING, "kb"),
        chart_object(keys.CLEANUP_KUBERNETES_MODE_ROLE_NAME_ANNOTATION, ROLE, "kr"),
        chart_object(
            keys.CLEANUP_NO_PERMISSION_SERVICE_ACCOUNT_NAME_ANNOTATION, SERVICE_ACCOUNT, "np"
        ),
        chart_object(keys.CLEANUP_GITHUB_SECRET_NAME_ANNOTATION, SECRET, "gh", protected=False),
        chart_object(keys.CLEANUP_MANAGER_ROLE_BINDING_ANNOTATION, ROLE_BINDING, "mb"),
    ]
    action = first(plan_now(observed(ars, chart_objects=objects)))
    assert isinstance(action, ReleaseChartObject)
    assert (action.kind, action.name) == (ROLE_BINDING, "kb")
    released = [
        chart_object(item.annotation, item.kind, item.name, protected=False) for item in objects
    ]
    assert isinstance(first(plan_now(observed(ars, chart_objects=released))), RemoveFinalizers)


def test_L10_deletion_without_an_id_makes_no_github_call() -> None:
    ars = scale_set(deleting=True, registered=False)
    released = RemoveFinalizers((keys.AUTOSCALING_RUNNER_SET_FINALIZER,), (), FINALIZER_REMOVED)
    assert effects(plan_now(observed(ars))) == [released]


def test_L8_a_github_problem_during_deletion_blocks_with_a_condition_and_backoff() -> None:
    ars = scale_set(deleting=True)
    problem = GitHubProblem("GitHubUnauthorized", "spec.githubConfigSecret", "401")
    actions = plan_now(observed(ars, feedback=Feedback(problem=problem)))
    assert kinds(effects(actions)) == ["WriteStatus"]
    cond = condition(actions, FINALIZING)
    assert cond["reason"] == "DeletingScaleSet"
    assert FINALIZER in cond["message"]
    assert wait_of(actions).seconds == SETTINGS.retry_initial


def test_a_deleted_scale_set_without_our_finalizer_is_left_alone() -> None:
    ars = scale_set(deleting=True, finalizers=("other/finalizer",))
    assert effects(plan_now(observed(ars, runner_sets=[runner_set()]))) == []


# --- runners that can read the namespace's Secrets (kubernetes mode) ---------------------------


def kubernetes_mode_template(**spec: object) -> dict[str, object]:
    hooks = {"name": keys.RUNNER_CONTAINER_HOOKS_ENV, "value": "/home/runner/k8s/index.js"}
    return {
        "spec": {
            "containers": [{"name": "runner", "image": "runner:1", "env": [hooks]}],
            "restartPolicy": "Never",
            "serviceAccountName": "arc-runner-set-gha-rs-kube-mode",
            **spec,
        }
    }


def test_kubernetes_mode_runners_that_can_read_secrets_are_a_condition_and_a_warning() -> None:
    ars = scale_set(spec={"template": kubernetes_mode_template()})
    actions = plan_now(steady(ars))
    exposed = condition(actions, "RunnersCanReadSecrets")
    assert (exposed["status"], exposed["reason"]) == ("True", "KubernetesModeToken")
    assert "github-config" in exposed["message"]
    assert NAMESPACE in exposed["message"]
    warnings = [n for n in notes(actions) if n.reason == "KubernetesModeToken"]
    assert warnings
    assert warnings[0].warning


def test_runners_without_the_hooks_or_without_a_token_are_not_reported() -> None:
    for ars in (
        scale_set(),
        scale_set(spec={"template": kubernetes_mode_template(automountServiceAccountToken=False)}),
    ):
        actions = plan_now(steady(ars))
        written = effects(actions)
        if written:
            conditions = status_write(actions).changes.get("conditions", [])
            assert "RunnersCanReadSecrets" not in [c["type"] for c in conditions]
