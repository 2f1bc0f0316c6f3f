"""Which EphemeralRunners the work queue serves before the creations (``runner_priority``):
those that end a hung runner (L4), then those that free a slot."""

from __future__ import annotations

from typing import Any

import pytest

from scaleset.controllers.ephemeralrunner.reconciler import (
    ENDS_A_HUNG_RUNNER,
    FREES_A_SLOT,
    runner_priority,
)
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD


def runner(status: dict[str, Any] | None = None, *, deleting: bool = False) -> KubeObject:
    metadata: dict[str, Any] = {"name": "r", "namespace": "ns", "uid": "u"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return KubeObject(EPHEMERAL_RUNNER, {"metadata": metadata, "status": status or {}})


def pod(phase: str) -> KubeObject:
    return KubeObject(
        POD, {"metadata": {"name": "r", "namespace": "ns"}, "status": {"phase": phase}}
    )


COMPLETION = {"jobCompletion": {"runnerId": 1, "runnerName": "r", "jobId": "j"}}


@pytest.mark.parametrize(
    ("cached", "cached_pod", "priority"),
    [
        (runner(), None, 0),  # new: registration and a first pod to come
        (runner({"phase": "Pending", "runnerId": 1}), pod("Running"), 0),
        (runner({"phase": "Running", "jobId": "j"}), pod("Running"), 0),
        (runner({"phase": "Running", **COMPLETION}), pod("Running"), ENDS_A_HUNG_RUNNER),
        (runner(COMPLETION, deleting=True), pod("Running"), FREES_A_SLOT),  # GitHub first
        (runner({"phase": "Pending"}, deleting=True), pod("Running"), FREES_A_SLOT),
        (runner({"phase": "Failed"}), pod("Failed"), FREES_A_SLOT),
        (runner({"phase": "Pending", "runnerId": 1}), pod("Succeeded"), FREES_A_SLOT),  # exited
        (None, None, 0),  # gone from the cache: a cheap NotFound, no hurry
    ],
)
def test_runners_that_end_a_hung_runner_or_free_a_slot_go_first(
    cached: KubeObject | None, cached_pod: KubeObject | None, priority: int
) -> None:
    assert runner_priority(cached, cached_pod) == priority
    assert ENDS_A_HUNG_RUNNER > FREES_A_SLOT > 0
