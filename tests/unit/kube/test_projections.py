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
    identity,
    intern_strings,
    pod_phase,
    share_spec,
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
                "containerStatuses": [{"image": "".join(["i", "mg"])}],
            },
        }

    first, second = slim_pod(pod("a")), slim_pod(pod("b"))
    assert first["metadata"]["labels"]["app"] is second["metadata"]["labels"]["app"]
    assert first["status"]["phase"] is second["status"]["phase"]
    assert (
        first["status"]["containerStatuses"][0]["image"]
        is second["status"]["containerStatuses"][0]["image"]
    )
    one, two = (share_spec({**pod(name), "spec": {"x": 1}}) for name in ("c", "d"))
    assert one["status"]["phase"] is two["status"]["phase"]
    assert one["metadata"]["labels"]["app"] is two["metadata"]["labels"]["app"]
