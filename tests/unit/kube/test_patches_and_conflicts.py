"""Guarded JSON patches and retry_on_conflict's bounded re-read/re-decide loop (L2)."""

from __future__ import annotations

import random

import pytest
from prometheus_client import CollectorRegistry

from scaleset.clock import ManualClock
from scaleset.kube.conflict import retry_on_conflict
from scaleset.kube.errors import AlreadyExists, Conflict, ConflictRetriesExhausted
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import KubeObject
from scaleset.kube.patches import add_finalizer, pointer, remove_finalizer, set_finalizers
from scaleset.kube.resources import EPHEMERAL_RUNNER


def obj(finalizers: list[str] | None = None, rv: str = "7") -> KubeObject:
    metadata: dict[str, object] = {"name": "r", "namespace": "ns", "resourceVersion": rv}
    if finalizers is not None:
        metadata["finalizers"] = finalizers
    return KubeObject(EPHEMERAL_RUNNER, {"metadata": metadata})


def test_pointer_escapes_rfc6901() -> None:
    assert pointer("metadata", "annotations", "a/b~c") == "/metadata/annotations/a~1b~0c"
    assert pointer("metadata", "finalizers", 2) == "/metadata/finalizers/2"


def test_L2_remove_finalizer_tests_the_exact_element() -> None:
    ops = remove_finalizer(obj(["a", "ours", "b"]), "ours")
    assert ops == [
        {"op": "test", "path": "/metadata/finalizers/1", "value": "ours"},
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]
    assert remove_finalizer(obj(["a"]), "ours") is None
    assert remove_finalizer(obj(), "ours") is None


def test_L2_add_finalizer_never_overwrites_others() -> None:
    assert add_finalizer(obj(["ours"]), "ours") is None
    assert add_finalizer(obj(["a", "b"]), "ours") == [
        {"op": "test", "path": "/metadata/finalizers/1", "value": "b"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "ours"},
    ]
    assert add_finalizer(obj(), "ours") == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/metadata/finalizers", "value": ["ours"]},
    ]


def test_L2_set_finalizers_writes_a_decided_list_only_over_the_list_read() -> None:
    assert set_finalizers(obj(["a"]), ["a"], ["a", "ours", "also-ours"]) == [
        {"op": "test", "path": "/metadata/finalizers", "value": ["a"]},
        {"op": "replace", "path": "/metadata/finalizers", "value": ["a", "ours", "also-ours"]},
    ]
    assert set_finalizers(obj(["a", "ours"]), ("a", "ours"), ("a",)) == [
        {"op": "test", "path": "/metadata/finalizers", "value": ["a", "ours"]},
        {"op": "replace", "path": "/metadata/finalizers", "value": ["a"]},
    ]
    assert set_finalizers(obj(), (), ["ours"]) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/metadata/finalizers", "value": ["ours"]},
    ]


def conflict() -> Conflict:
    return Conflict(409, "Conflict", "the object has been modified")


async def test_L2_retry_on_conflict_rereads_and_succeeds_after_a_race() -> None:
    metrics = RuntimeMetrics(CollectorRegistry())
    reads: list[int] = []
    server_version = {"rv": 1}

    async def read_decide_write() -> str:
        seen = server_version["rv"]
        reads.append(seen)
        if len(reads) <= 2:  # someone else writes between our read and our write, twice
            server_version["rv"] += 1
        if seen != server_version["rv"]:
            raise conflict()
        return f"written at {seen}"

    result = await retry_on_conflict(
        read_decide_write, operation="phase", clock=ManualClockAuto(), metrics=metrics
    )
    assert result == "written at 3"
    assert reads == [1, 2, 3]
    assert (
        metrics.registry.get_sample_value("scaleset_conflict_retries_total", {"operation": "phase"})
        == 2
    )


async def test_L2_exhaustion_is_typed_and_counted() -> None:
    metrics = RuntimeMetrics(CollectorRegistry())
    calls = 0

    async def always_conflicts() -> None:
        nonlocal calls
        calls += 1
        raise conflict()

    with pytest.raises(ConflictRetriesExhausted) as caught:
        await retry_on_conflict(
            always_conflicts, operation="phase", clock=ManualClockAuto(), metrics=metrics
        )
    assert calls == 5
    assert caught.value.attempts == 5
    assert isinstance(caught.value.last, Conflict)
    assert (
        metrics.registry.get_sample_value(
            "scaleset_conflict_retries_exhausted_total", {"operation": "phase"}
        )
        == 1
    )


async def test_L2_already_exists_is_not_retried() -> None:
    calls = 0

    async def create() -> None:
        nonlocal calls
        calls += 1
        raise AlreadyExists(409, "AlreadyExists", "taken")

    with pytest.raises(AlreadyExists):
        await retry_on_conflict(create, operation="create", clock=ManualClockAuto())
    assert calls == 1


async def test_L2_delays_grow_and_are_jittered() -> None:
    clock = ManualClockAuto()

    async def always_conflicts() -> None:
        raise conflict()

    with pytest.raises(ConflictRetriesExhausted):
        await retry_on_conflict(
            always_conflicts,
            operation="x",
            clock=clock,
            base_delay=0.01,
            factor=2.0,
            jitter=0.5,
            rng=random.Random(1),
        )
    assert len(clock.slept) == 4
    for index, slept in enumerate(clock.slept):
        base = 0.01 * 2**index
        assert base <= slept <= base * 1.5


class ManualClockAuto(ManualClock):
    """A manual clock whose sleeps complete at once (recording how long they were)."""

    def __init__(self) -> None:
        super().__init__()
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(max(0.0, seconds))
