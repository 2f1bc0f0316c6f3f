"""Which EphemeralRunners the work queue serves before the creations (``runner_priority``):
those that end a hung runner (L4) — a completion recorded and its pod still alive, whose next
step needs no GitHub call — then those that free a slot."""

from __future__ import annotations

from typing import Any

import pytest

from scaleset.controllers.decisions import Note, Report, Wait
from scaleset.controllers.ephemeralrunner.actions import (
    DeletePod,
    RegisterRunner,
    RemoveRegistration,
)
from scaleset.controllers.ephemeralrunner.reconciler import (
    ENDS_A_HUNG_RUNNER,
    FREES_A_SLOT,
    before_github,
    runner_priority,
)
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD


def runner(status: dict[str, Any] | None = None, *, deleting: bool = False) -> KubeObject:
    metadata: dict[str, Any] = {"name": "r", "namespace": "ns", "uid": "u"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return KubeObject(EPHEMERAL_RUNNER, {"metadata": metadata, "status": status or {}})


def pod(phase: str, *, deleting: bool = False) -> KubeObject:
    metadata: dict[str, Any] = {"name": "r", "namespace": "ns"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return KubeObject(POD, {"metadata": metadata, "status": {"phase": phase}})


COMPLETION = {"jobCompletion": {"runnerId": 1, "runnerName": "r", "jobId": "j"}}


@pytest.mark.parametrize(
    ("cached", "cached_pod", "priority"),
    [
        (runner(), None, 0),  # new: registration and a first pod to come
        (runner({"phase": "Pending", "runnerId": 1}), pod("Running"), 0),
        (runner({"phase": "Running", "jobId": "j"}), pod("Running"), 0),
        (runner({"phase": "Running", **COMPLETION}), pod("Running"), ENDS_A_HUNG_RUNNER),
        # its pod goes first, without GitHub (plan row 1)
        (runner(COMPLETION, deleting=True), pod("Running"), ENDS_A_HUNG_RUNNER),
        # the pod is going or gone: what is left (the registration's removal) asks GitHub
        (runner(COMPLETION, deleting=True), pod("Running", deleting=True), FREES_A_SLOT),
        (runner({"phase": "Running", **COMPLETION}), pod("Running", deleting=True), FREES_A_SLOT),
        (runner({"phase": "Running", **COMPLETION}), None, FREES_A_SLOT),
        (runner({"phase": "Running", **COMPLETION}), pod("Succeeded"), FREES_A_SLOT),
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


def test_an_urgent_reconcile_stops_before_its_first_github_call() -> None:
    """The worker kept for hung runners applies what needs no GitHub (the pod's deletion) and
    leaves the registration's removal to a lane that may wait out GitHub's retries."""
    delete = DeletePod("pod-uid", grace_seconds=1)
    assert before_github([delete, RemoveRegistration(7)]) == [delete]
    assert before_github([Report(Note("X", "y")), delete, RegisterRunner()]) == [
        Report(Note("X", "y")),
        delete,
    ]


@pytest.mark.parametrize(
    "actions",
    [
        [RemoveRegistration(7)],  # GitHub first: nothing to cut (no progress without it)
        [Report(Note("X", "y")), RemoveRegistration(7)],  # only a report before it
        [DeletePod("pod-uid"), Wait(30.0)],  # no GitHub call at all
    ],
    ids=["github-first", "report-first", "no-github"],
)
def test_nothing_is_cut_without_a_write_before_a_github_call(actions: list[Any]) -> None:
    assert before_github(actions) is None
