"""The informer cache: indexes stay exact through updates, deletes and relists."""

from __future__ import annotations

import pytest

from scaleset.kube.objects import KubeObject, ObjectKey, drop_managed_fields, slim_pod
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD
from scaleset.runtime.store import Store

LABEL = "actions.github.com/scale-set-name"


def er(
    name: str, rv: str = "1", *, owner: str = "o1", scale_set: str = "a", namespace: str = "ns"
) -> KubeObject:
    return KubeObject(
        EPHEMERAL_RUNNER,
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{name}",
                "resourceVersion": rv,
                "labels": {LABEL: scale_set},
                "ownerReferences": [{"uid": owner, "kind": "EphemeralRunnerSet", "name": "x"}],
            }
        },
    )


def names(objects: list[KubeObject]) -> set[str]:
    return {obj.name for obj in objects}


def test_indexes_follow_updates_and_deletes() -> None:
    store = Store(label_index=[LABEL])
    store.upsert(er("r1"))
    store.upsert(er("r2"))
    store.upsert(er("r3", owner="o2", scale_set="b"))
    assert names(store.by_owner("o1")) == {"r1", "r2"}
    assert names(store.by_label(LABEL, "b")) == {"r3"}
    store.upsert(er("r2", "2", owner="o2", scale_set="b"))  # moved to another owner and set
    assert names(store.by_owner("o1")) == {"r1"}
    assert names(store.by_owner("o2")) == {"r2", "r3"}
    assert names(store.by_label(LABEL, "a")) == {"r1"}
    store.delete(ObjectKey("ns", "r3"))
    assert names(store.by_owner("o2")) == {"r2"}
    assert names(store.by_label(LABEL, "b")) == {"r2"}
    assert store.by_owner("nobody") == []


def test_unindexed_label_is_an_error_but_matching_scans() -> None:
    store = Store()
    store.upsert(er("r1"))
    with pytest.raises(KeyError):
        store.by_label(LABEL, "a")
    assert names(store.matching({LABEL: "a"})) == {"r1"}
    store.add_label_index(LABEL)
    assert names(store.by_label(LABEL, "a")) == {"r1"}


def test_replace_reports_the_difference_as_events() -> None:
    store = Store()
    for obj in (er("keep"), er("change"), er("gone"), er("other-ns", namespace="other")):
        store.upsert(obj)
    events = store.replace([er("keep"), er("change", "5"), er("new")], namespace="ns")
    summary = sorted((event.type, event.obj.name) for event in events)
    assert summary == [("ADDED", "new"), ("DELETED", "gone"), ("MODIFIED", "change")]
    assert names(store.list()) == {"keep", "change", "new", "other-ns"}  # other scope untouched
    events = store.replace([], namespace=None)
    assert len(events) == 4
    assert len(store) == 0


def test_a_relisted_object_at_the_same_version_keeps_its_cached_copy() -> None:
    store = Store(label_index=[LABEL])
    cached = er("keep")
    store.upsert(cached)
    store.upsert(er("change"))
    assert store.apply_listed(er("keep")) is None
    assert store.get(ObjectKey("ns", "keep")) is cached  # not a second copy of the same state
    event = store.apply_listed(er("change", "2"))
    assert event is not None
    assert (event.type, event.obj.resource_version) == ("MODIFIED", "2")
    recreated = er("keep")
    recreated.raw["metadata"]["uid"] = "uid-other"  # same name and version, another object
    assert store.apply_listed(recreated) is not None
    assert store.get(ObjectKey("ns", "keep")) is recreated


def test_projections_drop_managed_fields_and_pod_bulk() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "managedFields": [{"manager": "x"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "a": "b"},
        },
        "spec": {
            "nodeName": "n1",
            "restartPolicy": "Never",
            "volumes": [{"name": "work"}],
            "containers": [{"name": "runner", "env": [{"name": "X", "value": "y"}]}],
            "initContainers": [{"name": "dind", "restartPolicy": "Always", "image": "docker"}],
        },
        "status": {"phase": "Running"},
    }
    slim = slim_pod(pod)
    assert "managedFields" not in slim["metadata"]
    assert slim["metadata"]["annotations"] == {"a": "b"}
    assert slim["spec"] == {
        "nodeName": "n1",
        "restartPolicy": "Never",
        "containers": [{"name": "runner"}],
        "initContainers": [{"name": "dind", "restartPolicy": "Always"}],
    }
    assert slim["status"] == {"phase": "Running"}
    cr = drop_managed_fields({"metadata": {"managedFields": [], "name": "x"}, "spec": {"a": 1}})
    assert cr == {"metadata": {"name": "x"}, "spec": {"a": 1}}
    assert KubeObject(POD, slim).key == ObjectKey("", "p")


def test_kube_object_accessors_and_repr_without_body() -> None:
    obj = KubeObject(
        EPHEMERAL_RUNNER,
        {
            "metadata": {
                "name": "r",
                "namespace": "ns",
                "finalizers": ["f1"],
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "generation": 3,
                "ownerReferences": [
                    {"uid": "u1", "kind": "A", "name": "a", "apiVersion": "v1"},
                    {"uid": "u2", "kind": "B", "name": "b", "apiVersion": "v1", "controller": True},
                ],
            },
            "spec": {"secret": "hunter2"},
        },
    )
    assert obj.is_deleting
    assert obj.finalizers == ["f1"]
    assert obj.generation == 3
    assert obj.controller_owner is not None
    assert obj.controller_owner.uid == "u2"
    assert "hunter2" not in repr(obj)


def test_equal_specs_are_shared_and_the_cache_is_bounded() -> None:
    from scaleset.kube.objects import SubtreeCache, share_subtrees

    def runner(image: str) -> dict[str, object]:
        return {
            "metadata": {"name": "r", "managedFields": [{}]},
            "spec": {"spec": {"containers": [{"name": "runner", "image": image}]}},
        }

    first, second, other = (share_subtrees(runner(image)) for image in ("a", "a", "b"))
    assert first["spec"] is second["spec"]
    assert first["spec"] is not other["spec"]
    assert first["spec"] == {"spec": {"containers": [{"name": "runner", "image": "a"}]}}
    assert "managedFields" not in first["metadata"]
    cache = SubtreeCache(capacity=2)
    kept = [cache.share({"n": index}) for index in range(3)]
    assert len(cache) == 2
    assert cache.share({"n": 0}) is not kept[0]  # evicted, so a new copy is kept
    assert cache.share({"n": 2}) is kept[2]
