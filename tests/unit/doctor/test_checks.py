"""The doctor's checks on ARC-shaped objects written by hand: each fingerprint is found, a
healthy set gives nothing, the JSON is machine-readable and the table names each action."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scaleset.api import BY_KIND, KINDS, crds
from scaleset.doctor.checks import GITHUB_CHECKS, KUBERNETES_CHECKS, run_checks
from scaleset.doctor.findings import Finding, Report, Skipped
from scaleset.doctor.inventory import Inventory, Thresholds
from scaleset.doctor.report import as_json, as_table

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NS = "arc-runners"
URL = "https://github.com/octo-org"


def stamp(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def arc_runner(
    name: str, *, age: float = 120, phase: str = "Running", runner_id: int = 1, **status: Any
) -> dict[str, Any]:
    """An EphemeralRunner as ARC 0.14 leaves it (phase copied from the pod)."""
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": name,
            "namespace": NS,
            "creationTimestamp": stamp(age),
            "finalizers": [
                "ephemeralrunner.actions.github.com/finalizer",
                "ephemeralrunner.actions.github.com/runner-registration-finalizer",
            ],
        },
        "spec": {"githubConfigUrl": URL, "githubConfigSecret": "s", "runnerScaleSetId": 12},
        "status": {
            "phase": phase,
            "ready": True,
            "runnerId": runner_id,
            "runnerName": name,
            **status,
        },
    }


def pod(name: str, *, age: float = 110) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": stamp(age)},
        "status": {"phase": "Running"},
    }


def listener(name: str, scale_set_id: int = 12) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "arc-systems"},
        "spec": {"githubConfigUrl": URL, "runnerScaleSetId": scale_set_id},
    }


def listener_pod(name: str, *, restarts: int = 0, waiting: str = "") -> dict[str, Any]:
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {
        "metadata": {"name": name, "namespace": "arc-systems"},
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "listener", "restartCount": restarts, "state": state}],
        },
    }


def healthy() -> Inventory:
    """A runner busy for two hours (ARC: Running with its job), a fresh idle one, current
    CRDs, one listener whose pod runs, GitHub listing both registrations."""
    busy = arc_runner("set-runner-busy", age=7200, runner_id=1, jobId="j1", jobRequestId=5)
    idle = arc_runner("set-runner-idle", runner_id=2, phase="Pending")
    return Inventory(
        now=NOW,
        runners=(busy, idle),
        runner_pods=(pod("set-runner-busy", age=7190), pod("set-runner-idle")),
        listeners=(listener("set-listener"),),
        listener_pods=(listener_pod("set-listener"),),
        crds={info.crd_name: crds.crd(info) for info in KINDS},
        registered_ids={URL: frozenset({1, 2})},
    )


EVERY = [*KUBERNETES_CHECKS, *GITHUB_CHECKS]


def found(inventory: Inventory, limits: Thresholds | None = None) -> list[Finding]:
    return run_checks(inventory, limits or Thresholds(), EVERY)


def test_a_healthy_set_has_no_findings() -> None:
    assert found(healthy()) == []


def with_(**changes: Any) -> Inventory:
    base = healthy()
    return Inventory(**{**base.__dict__, **changes})


CASES = {
    "pod-newer-than-runner": with_(
        runners=(arc_runner("r-4588", age=3600, runnerId=3),),
        runner_pods=(pod("r-4588", age=60),),
        registered_ids={URL: frozenset({1})},
    ),
    "running-without-job": with_(
        runners=(arc_runner("r-zombie", age=3600, runner_id=1),),
    ),
    "registration-missing": with_(
        runners=(arc_runner("r-gone", runner_id=99, phase="Pending"),),
    ),
    "stuck-deleting": with_(
        runners=(
            {
                **arc_runner("r-stuck", phase="Pending"),
                "metadata": {
                    **arc_runner("r-stuck")["metadata"],
                    "deletionTimestamp": stamp(1800),
                },
            },
        ),
    ),
    "terminal-holding-slot": with_(
        runners=(arc_runner("r-failed", phase="Failed", reason="TooManyPodFailures"),),
    ),
    "idle-past-age": with_(
        runners=(arc_runner("r-old", phase="Pending", age=3 * 86400),),
    ),
    "listener-session-conflict": with_(
        listeners=(listener("arc-listener"), listener("scaleset-listener")),
    ),
    "listener-crash-loop": with_(
        listener_pods=(listener_pod("set-listener", restarts=7, waiting="CrashLoopBackOff"),),
    ),
}


@pytest.mark.parametrize("check", sorted(CASES))
def test_each_fingerprint_is_found_with_an_action(check: str) -> None:
    findings = found(CASES[check])
    assert check in {f.check for f in findings}
    for finding in findings:
        assert finding.action


def test_arc_crds_still_installed_are_found() -> None:
    arc_era = copy.deepcopy(crds.crd(BY_KIND["EphemeralRunner"]))
    status = arc_era["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    for name in ("jobCompletion", "jobCompletionDeadline", "runnerStartedAt"):
        del status["properties"][name]
    installed = {**healthy().crds, "ephemeralrunners.actions.github.com": arc_era}
    installed["autoscalinglisteners.actions.github.com"] = None
    [gap, missing] = sorted(
        (f for f in found(with_(crds=installed)) if f.check == "crd-outdated"),
        key=lambda f: f.target,
    )
    assert "status.jobCompletion" in missing.detail or "status.jobCompletion" in gap.detail
    assert "not installed" in (gap.detail + missing.detail)
    assert "scaleset crds" in gap.action


def test_thresholds_hold_back_young_objects() -> None:
    young = with_(
        runners=(arc_runner("r", age=60, runner_id=1),),
        runner_pods=(pod("r", age=30),),
        registered_ids={URL: frozenset({1})},
    )
    assert found(young) == []


def test_a_finished_runner_without_registration_is_not_a_missing_registration() -> None:
    done = arc_runner("r-done", runner_id=99, phase="Running", jobId="j9", jobRequestId=9)
    failed = arc_runner("r-failed", runner_id=98, phase="Failed")
    findings = found(with_(runners=(done, failed)))
    assert "registration-missing" not in {f.check for f in findings}


def test_without_github_the_registration_check_finds_nothing() -> None:
    assert (
        found(with_(registered_ids=None, runners=(arc_runner("x", runner_id=99, phase="Pending"),)))
        == []
    )


def test_json_is_machine_readable_and_the_table_names_each_action() -> None:
    findings = tuple(found(CASES["terminal-holding-slot"]))
    report = Report(findings, (Skipped("registration-missing", "no token"),), tuple(EVERY))
    data = json.loads(as_json(report))
    assert data["healthy"] is False
    assert data["findings"][0]["check"] == "terminal-holding-slot"
    assert set(data["findings"][0]) == {"check", "target", "detail", "action", "severity"}
    assert data["skipped"] == [{"check": "registration-missing", "why": "no token"}]
    table = as_table(report)
    assert "terminal-holding-slot" in table
    assert findings[0].action in table
    assert "skipped registration-missing: no token" in table
    assert json.loads(as_json(Report(checked=("x",))))["healthy"] is True
    assert as_table(Report(checked=("x",))).startswith("healthy")
