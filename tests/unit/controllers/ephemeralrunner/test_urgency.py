"""Which EphemeralRunners the work queue serves before the creations (``is_urgent``)."""

from __future__ import annotations

from typing import Any

import pytest

from scaleset.controllers.ephemeralrunner.reconciler import is_urgent
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
    ("cached", "cached_pod", "urgent"),
    [
        (runner(), None, False),  # new: registration and a first pod to come
        (runner({"phase": "Pending", "runnerId": 1}), pod("Running"), False),
        (runner({"phase": "Running", "jobId": "j"}), pod("Running"), False),
        (runner({"phase": "Running", **COMPLETION}), pod("Running"), True),  # L4 grace
        (runner({"phase": "Pending"}, deleting=True), pod("Running"), True),
        (runner({"phase": "Failed"}), pod("Failed"), True),
        (runner({"phase": "Pending", "runnerId": 1}), pod("Succeeded"), True),  # exited
        (None, None, False),  # gone from the cache: a cheap NotFound, no hurry
    ],
)
def test_runners_that_end_or_free_a_slot_are_urgent(
    cached: KubeObject | None, cached_pod: KubeObject | None, urgent: bool
) -> None:
    assert is_urgent(cached, cached_pod) is urgent
