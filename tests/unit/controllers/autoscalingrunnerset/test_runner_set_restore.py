"""A runner set's spec is the scale set's, whatever its digest annotation says: a change made by
anyone else — a compromised listener may patch its own EphemeralRunnerSet — is restored, with a
Warning, by a patch guarded by the resourceVersion that was read. Only ``replicas`` and
``patchID`` (the listener's contract) are left as they are."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from tests.unit.controllers.autoscalingrunnerset.builders import (
    NAME,
    effects,
    first,
    listener,
    observed,
    plan_now,
    runner_set,
    scale_set,
    verified,
)

from scaleset.api import keys
from scaleset.controllers.autoscalingrunnerset import desired
from scaleset.controllers.autoscalingrunnerset.actions import UpdateRunnerSet
from scaleset.embedded.apiserver._patch import merge_patch
from scaleset.kube.objects import KubeObject


def in_sync_spec(ars: KubeObject) -> dict[str, Any]:
    spec: dict[str, Any] = copy.deepcopy(runner_set(in_sync_with=ars).spec["ephemeralRunnerSpec"])
    return spec


def tampered(ars: KubeObject, runner_spec: dict[str, Any], **extra: Any) -> KubeObject:
    """The runner set as the controller wrote it (digest and all), with ``runner_spec`` put in
    by someone else."""
    obj = runner_set(in_sync_with=ars, **extra)
    raw = copy.deepcopy(obj.raw)
    raw["spec"]["ephemeralRunnerSpec"] = runner_spec
    return KubeObject(obj.kind, raw)


def privileged(spec: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(spec)
    pod = changed["spec"]
    pod["serviceAccountName"] = "cluster-admin-sa"
    pod["containers"][0]["securityContext"] = {"privileged": True}
    pod["volumes"] = [{"name": "host", "hostPath": {"path": "/"}}]
    changed["githubConfigUrl"] = "http://attacker.internal/acme"
    return changed


def test_a_runner_spec_changed_behind_the_digest_is_restored_with_a_warning() -> None:
    ars = scale_set()
    current = tampered(ars, privileged(in_sync_spec(ars)))
    o = observed(ars, runner_sets=[current], listeners=[listener(ars)], verified_as=verified())
    action = first(plan_now(o))
    assert isinstance(action, UpdateRunnerSet)
    assert action.name == NAME
    assert action.resource_version == current.resource_version
    restored = merge_patch(
        current.spec["ephemeralRunnerSpec"], action.patch["spec"]["ephemeralRunnerSpec"]
    )
    assert desired.same(restored, in_sync_spec(ars))
    assert action.note.reason == "RunnerSetSpecRestored"
    assert action.note.warning
    assert "spec.ephemeralRunnerSpec.githubConfigUrl" in action.note.message
    assert "spec.ephemeralRunnerSpec.spec" in action.note.message
    assert "attacker" not in action.note.message, "the Event names fields, never values"


def test_runner_metadata_changed_behind_the_digest_is_restored() -> None:
    ars = scale_set()
    current = runner_set(in_sync_with=ars)
    raw = copy.deepcopy(current.raw)
    raw["spec"]["ephemeralRunnerMetadata"] = {"annotations": {"injected": "yes"}}
    current = KubeObject(current.kind, raw)
    o = observed(ars, runner_sets=[current], listeners=[listener(ars)], verified_as=verified())
    action = first(plan_now(o))
    assert isinstance(action, UpdateRunnerSet)
    assert action.patch["spec"]["ephemeralRunnerMetadata"] is None
    assert action.note.reason == "RunnerSetSpecRestored"


def test_every_runner_set_update_is_guarded_by_the_version_read() -> None:
    old = scale_set()
    new = scale_set(spec={"maxRunners": 3, "template": {"spec": {"containers": []}}})
    current = runner_set(in_sync_with=old)
    o = observed(new, runner_sets=[current], verified_as=verified())
    actions = plan_now(o)
    updates = [a for a in effects(actions) if isinstance(a, UpdateRunnerSet)]
    assert all(a.resource_version == current.resource_version for a in updates)


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    replicas=st.integers(min_value=0, max_value=1000),
    patch_id=st.integers(min_value=0, max_value=10**6),
)
def test_replicas_and_patch_id_are_the_listeners_and_left_alone(
    replicas: int, patch_id: int
) -> None:
    ars = scale_set()
    current = runner_set(in_sync_with=ars)
    raw = copy.deepcopy(current.raw)
    raw["spec"]["replicas"] = replicas
    raw["spec"]["patchID"] = patch_id
    o = observed(
        ars,
        runner_sets=[KubeObject(current.kind, raw)],
        listeners=[listener(ars)],
        verified_as=verified(),
    )
    assert not any(isinstance(a, UpdateRunnerSet) for a in effects(plan_now(o)))


JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5), st.just("http://x/y")
)
JSON = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
RUNNER_SPEC_KEYS = st.sampled_from(
    [
        "githubConfigUrl",
        "githubConfigSecret",
        "runnerScaleSetId",
        "spec",
        "metadata",
        "proxy",
        "githubServerTLS",
        "vaultConfig",
        "ephemeralRunnerConfigSecretMetadata",
        "somethingNew",
    ]
)


@hypothesis_settings(max_examples=300, deadline=None)
@given(changes=st.dictionaries(RUNNER_SPEC_KEYS, JSON, min_size=1, max_size=4))
def test_any_change_to_the_runner_spec_is_undone_by_the_planned_patch(
    changes: dict[str, Any],
) -> None:
    ars = scale_set()
    wanted = in_sync_spec(ars)
    changed = {**wanted, **changes}
    current = tampered(ars, changed)
    o = observed(ars, runner_sets=[current], listeners=[listener(ars)], verified_as=verified())
    updates = [a for a in effects(plan_now(o)) if isinstance(a, UpdateRunnerSet)]
    if desired.same(changed, wanted):
        assert updates == [], "a change that normalises away is no change"
        return
    assert updates, "a changed runner spec is restored"
    patch = updates[0].patch["spec"]["ephemeralRunnerSpec"]
    assert desired.same(merge_patch(changed, patch), wanted)
    assert updates[0].resource_version == current.resource_version
    assert keys.SPEC_HASH_ANNOTATION in updates[0].patch["metadata"]["annotations"]
