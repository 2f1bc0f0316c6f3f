"""The EphemeralRunnerSet reconciler's memo of runner views (``view_memo.RunnerViewMemo``).

The memo must be invisible to decisions: a view it returns equals the view ``runner_view``
builds afresh from the same object at the same time, whatever happened before (updates,
removals, a changed runner spec, time moving on). The examples pin each rule (reuse on the same
resourceVersion, re-parse on a new one, eviction, the time-dependent JIT check, the spec
comparison); the property checks the equality over random histories.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.controllers.ephemeralrunnerset.builders import NOW

from scaleset.api import RunnerState, format_kube_time, keys
from scaleset.controllers.ephemeralrunnerset.observed import RunnerView, runner_view
from scaleset.controllers.ephemeralrunnerset.view_memo import RunnerViewMemo
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET

SET_UID = "uid-set"
SPEC = {"githubConfigUrl": "https://github.com/acme", "spec": {"containers": [{"name": "runner"}]}}
OLD_SPEC = {"githubConfigUrl": "https://github.com/acme", "spec": {"containers": []}}
SETTLE = 120.0


def runner(
    name: str,
    rv: int = 1,
    *,
    status: dict[str, Any] | None = None,
    age: float = 30.0,
    spec: dict[str, Any] | None = None,
    owner: str = SET_UID,
    deleting: bool = False,
) -> KubeObject:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "resourceVersion": str(rv),
        "creationTimestamp": format_kube_time(NOW - timedelta(seconds=age)),
        "annotations": {keys.PATCH_ID_ANNOTATION: "3"},
        "ownerReferences": [
            {
                "apiVersion": keys.API_VERSION,
                "kind": "EphemeralRunnerSet",
                "name": "set",
                "uid": owner,
                "controller": True,
            }
        ],
    }
    if deleting:
        metadata["deletionTimestamp"] = format_kube_time(NOW)
    raw = {"metadata": metadata, "spec": spec or SPEC, "status": status or {}}
    return KubeObject(EPHEMERAL_RUNNER, raw)


def fresh(objects: list[KubeObject], expected: dict[str, Any], now: Any) -> list[RunnerView]:
    """The views built without the memo (the set's runners, one per name, last one winning)."""
    children: dict[str, KubeObject] = {}
    for obj in objects:
        owner = obj.controller_owner
        if owner is not None and owner.uid == SET_UID:
            children[obj.name] = obj
    return [
        runner_view(obj, expected_spec=expected, now=now, jit_settle_seconds=SETTLE)
        for obj in children.values()
    ]


def views(memo: RunnerViewMemo, objects: list[KubeObject], **kw: Any) -> tuple[RunnerView, ...]:
    kw.setdefault("expected_spec", SPEC)
    kw.setdefault("now", NOW)
    return memo.runners(SET_UID, objects, **kw)[1]


# ------------------------------------------------------------------------------ examples


def test_an_unchanged_runner_is_not_parsed_again() -> None:
    memo = RunnerViewMemo(SETTLE)
    objects = [runner("a", status={"runnerId": 7, "ready": True}), runner("b")]
    first = views(memo, objects)
    assert memo.parsed == 2
    # the same resourceVersion, even in a copy of the object the informer made afresh
    again = views(memo, [KubeObject(EPHEMERAL_RUNNER, dict(o.raw)) for o in objects])
    assert memo.parsed == 2
    assert all(x is y for x, y in zip(first, again, strict=True))


def test_a_new_resource_version_is_parsed_again() -> None:
    memo = RunnerViewMemo(SETTLE)
    (before,) = views(memo, [runner("a", 1)])
    assert before.state is RunnerState.STARTING
    assert before.runner_id == 0
    (after,) = views(memo, [runner("a", 2, status={"runnerId": 9, "ready": True})])
    assert memo.parsed == 2
    assert (after.state, after.runner_id, after.resource_version) == (RunnerState.IDLE, 9, "2")


def test_runners_no_longer_listed_are_dropped() -> None:
    memo = RunnerViewMemo(SETTLE)
    views(memo, [runner("a"), runner("b"), runner("c")])
    assert len(memo) == 3
    views(memo, [runner("b")])
    assert len(memo) == 1
    views(memo, [runner("a"), runner("b")])
    assert memo.parsed == 4  # "a" came back: parsed again, not served from a stale entry
    memo.forget(SET_UID)
    assert len(memo) == 0


def test_the_jit_check_follows_the_time_for_the_same_version() -> None:
    memo = RunnerViewMemo(SETTLE)
    young = [runner("a", age=100.0)]  # starting, no runner id: a JIT request may be in flight
    (at_first,) = views(memo, young, now=NOW)
    (later,) = views(memo, young, now=NOW + timedelta(seconds=30))
    (earlier,) = views(memo, young, now=NOW)
    assert at_first.jit_in_flight
    assert not later.jit_in_flight
    assert earlier.jit_in_flight
    assert memo.parsed == 1


def test_a_changed_runner_spec_is_compared_again() -> None:
    memo = RunnerViewMemo(SETTLE)
    idle = {"runnerId": 5, "ready": True}
    objects = [
        runner("new", spec=SPEC, status=idle),
        runner("old", spec=OLD_SPEC, status=idle),
        runner("starting", spec=OLD_SPEC),
    ]
    assert [v.current_spec for v in views(memo, objects)] == [True, False, False]
    assert [v.current_spec for v in views(memo, objects, expected_spec=OLD_SPEC)] == [
        False,
        True,
        True,
    ]
    # an equal spec in another object (the set re-read): same answer, nothing rebuilt
    same = views(memo, objects, expected_spec=dict(OLD_SPEC))
    assert [v.current_spec for v in same] == [False, True, True]
    assert memo.parsed == 3


def test_only_the_sets_own_runners_are_viewed() -> None:
    memo = RunnerViewMemo(SETTLE)
    children, found = memo.runners(
        SET_UID,
        [runner("mine"), runner("theirs", owner="uid-other")],
        expected_spec=SPEC,
        now=NOW,
    )
    assert list(children) == ["mine"]
    assert [v.name for v in found] == ["mine"]


def test_the_sets_status_is_parsed_once_per_version() -> None:
    memo = RunnerViewMemo(SETTLE)

    def runner_set(rv: str, idle: int) -> KubeObject:
        raw = {
            "metadata": {"name": "set", "namespace": "ns", "uid": SET_UID, "resourceVersion": rv},
            "spec": {"ephemeralRunnerSpec": SPEC},
            "status": {"idleEphemeralRunners": idle},
        }
        return KubeObject(EPHEMERAL_RUNNER_SET, raw)

    status, digest = memo.runner_set(runner_set("4", 2))
    again, _ = memo.runner_set(runner_set("4", 2))
    moved, moved_digest = memo.runner_set(runner_set("5", 3))
    assert again is status
    assert status.idle_ephemeral_runners == 2
    assert moved.idle_ephemeral_runners == 3
    assert moved_digest == digest


# ------------------------------------------------------------------------------ property

STATUSES: list[dict[str, Any]] = [
    {},
    {"phase": "Pending"},
    {"phase": "Pending", "runnerId": 4},
    {"phase": "Pending", "runnerId": 4, "ready": True},
    {"phase": "Running", "runnerId": 4, "jobId": "j", "jobRequestId": 2},
    {"phase": "Running", "jobCompletion": {"result": "succeeded", "runnerName": "x"}},
    {"phase": "Succeeded"},
    {"phase": "Failed", "reason": "InvalidPod"},
    {"phase": "Outdated"},
]
NAMES = ["a", "b", "c", "d"]


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["update", "remove", "time", "spec", "pass"]))
        if kind == "update":
            steps.append(
                (
                    kind,
                    (
                        draw(st.sampled_from(NAMES)),
                        draw(st.sampled_from(STATUSES)),
                        draw(st.sampled_from([SPEC, OLD_SPEC])),
                        draw(st.sampled_from([SET_UID, SET_UID, "uid-other"])),
                        draw(st.integers(0, 6)) == 0,
                        draw(st.sampled_from([0.0, 60.0, 119.0, 200.0])),
                    ),
                )
            )
        elif kind == "remove":
            steps.append((kind, draw(st.sampled_from(NAMES))))
        elif kind == "time":
            steps.append((kind, draw(st.sampled_from([-30.0, 0.5, 1.0, 20.0, 90.0, 400.0]))))
        elif kind == "spec":
            steps.append((kind, draw(st.sampled_from([SPEC, OLD_SPEC]))))
        else:
            steps.append((kind, None))
    return steps


@settings(max_examples=300, deadline=None)
@given(histories())
def test_views_from_the_memo_equal_views_built_afresh(steps: list[tuple[str, Any]]) -> None:
    memo = RunnerViewMemo(SETTLE)
    store: dict[str, KubeObject] = {}
    rv = 0
    now = NOW
    expected: dict[str, Any] = SPEC
    for kind, arg in steps:
        if kind == "update":
            name, status, spec, owner, deleting, age = arg
            rv += 1
            store[name] = runner(
                name, rv, status=status, spec=spec, owner=owner, deleting=deleting, age=age
            )
        elif kind == "remove":
            store.pop(arg, None)
        elif kind == "time":
            now += timedelta(seconds=arg)
        elif kind == "spec":
            expected = dict(arg)
        objects = list(store.values())
        children, got = memo.runners(SET_UID, objects, expected_spec=expected, now=now)
        assert list(got) == fresh(objects, expected, now)
        assert list(children) == [v.name for v in got]
        assert all(children[v.name] is store[v.name] for v in got)
        assert len(memo) == len(store)
