"""The one-off list projections (``identity``, ``pod_phase``): an object projected answers who it
is, who owns it and whether it is being deleted exactly as the whole object does, and keeps
nothing else."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scaleset.kube.objects import (
    KubeObject,
    SubtreeCache,
    identity,
    intern_strings,
    pod_phase,
    share_subtrees,
    slim_pod,
)
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD

_names = st.text(alphabet="abcdefghij-0123456789", min_size=1, max_size=12)
_strings = st.dictionaries(_names, _names, max_size=3)
_owner = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": _names, "name": _names, "uid": _names},
    optional={"controller": st.booleans()},
)
_metadata = st.fixed_dictionaries(
    {"name": _names, "namespace": _names, "uid": _names, "resourceVersion": _names},
    optional={
        "labels": _strings,
        "annotations": _strings,
        "ownerReferences": st.lists(_owner, max_size=2),
        "finalizers": st.lists(_names, max_size=2),
        "deletionTimestamp": st.just("2026-12-03T00:00:00Z"),
        "generation": st.integers(0, 9),
        "managedFields": st.lists(st.fixed_dictionaries({"manager": _names}), max_size=2),
    },
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _names,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_names, inner, max_size=3),
    max_leaves=12,
)
_pod = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Pod"), "metadata": _metadata},
    optional={
        "spec": st.dictionaries(_names, _json, max_size=4),
        "status": st.fixed_dictionaries(
            {}, optional={"phase": st.sampled_from(["Pending", "Running", "Failed"])}
        ).flatmap(lambda s: st.dictionaries(_names, _json, max_size=3).map(lambda x: {**x, **s})),
    },
)


def _identity_answers(obj: KubeObject) -> tuple[Any, ...]:
    return (
        obj.kind,
        obj.key,
        obj.uid,
        obj.resource_version,
        obj.owner_references,
        obj.controller_owner,
        obj.is_deleting,
        obj.deletion_timestamp,
    )


@given(_pod)
def test_pod_phase_answers_as_the_whole_pod_and_keeps_no_more(raw: dict[str, Any]) -> None:
    whole = KubeObject(POD, copy.deepcopy(raw))
    slim = KubeObject(POD, pod_phase(copy.deepcopy(raw)))
    assert _identity_answers(slim) == _identity_answers(whole)
    assert slim.status.get("phase") == whole.status.get("phase")
    assert set(slim.raw) <= {"apiVersion", "kind", "metadata", "status"}
    assert set(slim.status) <= {"phase"}
    assert (slim.spec, slim.labels, slim.annotations) == ({}, {}, {})


@given(_pod.map(lambda pod: {**pod, "kind": "EphemeralRunner"}))
def test_identity_answers_as_the_whole_object_and_keeps_no_more(raw: dict[str, Any]) -> None:
    whole = KubeObject(EPHEMERAL_RUNNER, copy.deepcopy(raw))
    slim = KubeObject(EPHEMERAL_RUNNER, identity(copy.deepcopy(raw)))
    assert _identity_answers(slim) == _identity_answers(whole)
    assert set(slim.raw) == {"apiVersion", "kind", "metadata"}
    assert set(slim.metadata) <= {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "deletionTimestamp",
        "ownerReferences",
    }
    assert (slim.spec, slim.status, tuple(slim.finalizers)) == ({}, {}, ())


@given(_json)
def test_interning_changes_no_value(tree: Any) -> None:
    before = copy.deepcopy(tree)
    intern_strings(tree)
    assert tree == before


def test_cached_pods_and_runners_share_their_repeated_strings() -> None:
    def pod(name: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"app": "".join(["run", "ner"])}},
            "status": {
                "phase": "".join(["Run", "ning"]),
                "containerStatuses": [{"name": "".join(["run", "ner"])}],
            },
        }

    first, second = slim_pod(pod("a")), slim_pod(pod("b"))
    assert first["metadata"]["labels"]["app"] is second["metadata"]["labels"]["app"]
    assert first["status"]["phase"] is second["status"]["phase"]
    assert (
        first["status"]["containerStatuses"][0]["name"]
        is second["status"]["containerStatuses"][0]["name"]
    )
    one, two = (share_subtrees({**pod(name), "spec": {"x": 1}}) for name in ("c", "d"))
    assert one["status"]["phase"] is two["status"]["phase"]
    assert one["metadata"]["labels"]["app"] is two["metadata"]["labels"]["app"]


_time = st.sampled_from(["2026-12-04T11:47:45Z", "2026-12-04T11:48:00Z", None])
_extra = st.dictionaries(st.sampled_from(["podIP", "hostIP", "qosClass", "x"]), _names, max_size=2)
_state_detail = st.fixed_dictionaries(
    {},
    optional={
        "reason": _names,
        "message": _names,
        "exitCode": st.integers(0, 255),
        "startedAt": _time,
        "finishedAt": _time,
        "containerID": _names,
    },
)
_state = st.dictionaries(
    st.sampled_from(["waiting", "running", "terminated"]), _state_detail, max_size=1
)
_container_status = st.fixed_dictionaries(
    {"name": st.sampled_from(["runner", "listener", "init", "sidecar"])},
    optional={
        "state": _state,
        "lastState": _state,
        "ready": st.booleans(),
        "restartCount": st.integers(0, 3),
        "started": st.booleans(),
        "image": _names,
        "imageID": _names,
        "containerID": _names,
    },
)
_condition = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Ready", "PodScheduled", "Initialized", "ContainersReady"]),
        "status": st.sampled_from(["True", "False", "Unknown"]),
    },
    optional={
        "reason": _names,
        "message": _names,
        "lastProbeTime": _time,
        "lastTransitionTime": _time,
    },
)
_pod_status = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        "reason": _names,
        "message": _names,
        "startTime": _time,
        "conditions": st.lists(_condition, max_size=4),
        "containerStatuses": st.lists(_container_status, max_size=2),
        "initContainerStatuses": st.lists(_container_status, max_size=2),
    },
).flatmap(lambda status: _extra.map(lambda extra: {**extra, **status}))
_init_container = st.fixed_dictionaries(
    {"name": st.sampled_from(["init", "sidecar"])},
    optional={"restartPolicy": st.just("Always"), "image": _names},
)
_runner_pod = st.fixed_dictionaries(
    {
        "apiVersion": st.just("v1"),
        "kind": st.just("Pod"),
        "metadata": _metadata,
        "status": _pod_status,
        "spec": st.fixed_dictionaries(
            {"containers": st.just([{"name": "runner", "image": "i"}])},
            optional={"initContainers": st.lists(_init_container, max_size=2)},
        ),
    },
)


@given(_runner_pod)
def test_a_slim_pod_is_seen_by_every_controller_as_the_whole_pod(raw: dict[str, Any]) -> None:
    """What the EphemeralRunner and AutoscalingListener controllers and the registration pass
    read of a pod is the same from the cached slim pod as from the whole one."""
    from scaleset.controllers.autoscalinglistener import observed as listener_observed
    from scaleset.controllers.ephemeralrunner import observed as runner_observed

    whole = KubeObject(POD, copy.deepcopy(raw))
    slim = KubeObject(POD, slim_pod(copy.deepcopy(raw)))
    assert runner_observed.observe_pod(slim) == runner_observed.observe_pod(whole)
    assert listener_observed.observe_pod(slim) == listener_observed.observe_pod(whole)
    assert _identity_answers(slim) == _identity_answers(whole)
    assert (slim.labels, slim.annotations) == (whole.labels, whole.annotations)
    assert slim.status.get("phase") == whole.status.get("phase")  # the registration pass's
    assert not {"podIP", "hostIP", "qosClass", "startTime", "x"} & set(slim.status)


def test_runners_and_pods_of_one_set_share_their_repeated_metadata() -> None:
    def runner(name: str, patch_id: str) -> dict[str, Any]:
        return {
            "metadata": {
                "name": name,
                "labels": {"app": "runner", "set": "s"},
                "annotations": {"actions.github.com/patch-id": patch_id},
                "finalizers": ["f"],
                "ownerReferences": [{"kind": "EphemeralRunnerSet", "name": "s", "uid": "u"}],
            },
            "spec": {"x": 1},
        }

    one, two, later = (
        share_subtrees(runner(n, p)) for n, p in (("a", "1"), ("b", "1"), ("c", "2"))
    )
    for field in ("labels", "annotations", "finalizers", "ownerReferences"):
        assert one["metadata"][field] is two["metadata"][field]
    assert later["metadata"]["labels"] is one["metadata"]["labels"]
    assert later["metadata"]["annotations"] == {"actions.github.com/patch-id": "2"}
    assert later["metadata"]["annotations"] is not one["metadata"]["annotations"]
    pods = [
        slim_pod({"metadata": {"name": n, "labels": {"app": "runner"}, "annotations": {"a": "b"}}})
        for n in ("p", "q")
    ]
    assert pods[0]["metadata"]["labels"] is pods[1]["metadata"]["labels"]
    assert pods[0]["metadata"]["annotations"] is pods[1]["metadata"]["annotations"]


def test_a_shared_subtree_changed_in_place_is_found_when_it_is_handed_out_again() -> None:
    cache = SubtreeCache()
    was = SubtreeCache.check_unchanged
    SubtreeCache.check_unchanged = True
    try:
        kept = cache.share({"app": "runner"})
        assert cache.share({"app": "runner"}) is kept
        assert SubtreeCache.changed == []
        kept["app"] = "changed"  # what a controller must never do to a cached object
        cache.share({"app": "runner"})
        assert SubtreeCache.changed == ['{"app":"runner"}']
    finally:
        SubtreeCache.changed.clear()
        SubtreeCache.check_unchanged = was
