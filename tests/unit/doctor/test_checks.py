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
LEASE = ("arc-systems", "arc-gha-rs-controller")


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
            "ownerReferences": [{"kind": "EphemeralRunnerSet", "name": "arc", "uid": "u1"}],
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


def pod(name: str, *, age: float = 110, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": stamp(age)},
        "status": {"phase": "Running", **status},
    }


def scale_set(name: str = "arc", *, age: float = 86400, **status: Any) -> dict[str, Any]:
    """An AutoscalingRunnerSet registered on GitHub (scale set 12)."""
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "creationTimestamp": stamp(age),
            "annotations": {"runner-scale-set-id": "12"},
        },
        "spec": {"githubConfigUrl": URL, "githubConfigSecret": "s"},
        "status": status,
    }


def condition(kind: str, state: str, reason: str = "Because") -> dict[str, Any]:
    return {"type": kind, "status": state, "reason": reason, "message": f"{kind} said so"}


def listener(name: str, scale_set_id: int = 12, *, age: float = 86400) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "arc-systems", "creationTimestamp": stamp(age)},
        "spec": {
            "githubConfigUrl": URL,
            "runnerScaleSetId": scale_set_id,
            "autoscalingRunnerSetNamespace": NS,
            "autoscalingRunnerSetName": "arc",
        },
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


def controller_pod(
    name: str = "arc-gha-rs-controller-7d9f-x2x4z",
    *,
    ready: bool = True,
    age: float = 86400,
    args: tuple[str, ...] = ("--enable-leader-election", f"--leader-election-id={LEASE[1]}"),
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": LEASE[0],
            "creationTimestamp": stamp(age),
            "labels": {"app.kubernetes.io/part-of": "gha-rs-controller"},
        },
        "spec": {"containers": [{"name": "manager", "args": list(args)}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def lease(*, renewed_ago: float = 2, holder: str = "arc-gha-rs-controller-7d9f-x2x4z_1") -> Any:
    return {
        "metadata": {"name": LEASE[1], "namespace": LEASE[0]},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "renewTime": (NOW - timedelta(seconds=renewed_ago)).isoformat(),
        },
    }


def healthy() -> Inventory:
    """A registered scale set whose controller runs and leads and whose listener pod runs; a
    runner busy for two hours (ARC: Running with its job), a fresh idle one; current CRDs;
    GitHub listing both registrations."""
    busy = arc_runner("set-runner-busy", age=7200, runner_id=1, jobId="j1", jobRequestId=5)
    idle = arc_runner("set-runner-idle", runner_id=2, phase="Pending")
    return Inventory(
        now=NOW,
        runners=(busy, idle),
        runner_pods=(pod("set-runner-busy", age=7190), pod("set-runner-idle")),
        scale_sets=(scale_set(conditions=[condition("ScaleSetRegistered", "True")]),),
        listeners=(listener("set-listener"),),
        listener_pods=(listener_pod("set-listener"),),
        controller_pods=(controller_pod(),),
        leases={LEASE: lease()},
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


def exited(name: str, code: int) -> dict[str, Any]:
    """A runner pod whose runner container ended with ``code``."""
    statuses = [{"name": "runner", "state": {"terminated": {"exitCode": code}}}]
    return pod(name, phase="Failed", containerStatuses=statuses)


CASES = {
    "pod-newer-than-runner": with_(
        runners=(arc_runner("r-4588", age=3600, runnerId=3),),
        runner_pods=(pod("r-4588", age=60),),
        registered_ids={URL: frozenset({1})},
    ),
    "runner-pod-missing": with_(runners=(arc_runner("r-gone-pod", age=61, runner_id=1),)),
    "running-without-job": with_(
        runners=(arc_runner("r-zombie", age=3600, runner_id=1),),
        runner_pods=(pod("r-zombie", age=3590),),
    ),
    "runner-version-deprecated": with_(
        runners=(arc_runner("r-old", phase="Pending"),), runner_pods=(exited("r-old", 7),)
    ),
    "registration-missing": with_(
        runners=(arc_runner("r-gone", runner_id=99, phase="Pending"),),
        runner_pods=(pod("r-gone"),),
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
        runner_pods=(pod("r-old", age=3 * 86400),),
    ),
    "listener-session-conflict": with_(
        listeners=(listener("arc-listener"), listener("scaleset-listener")),
    ),
    "listener-crash-loop": with_(
        listener_pods=(listener_pod("set-listener", restarts=7, waiting="CrashLoopBackOff"),),
    ),
    "listener-missing": with_(listeners=()),
    "crd-outdated": with_(crds={**healthy().crds, "ephemeralrunners.actions.github.com": None}),
    "controller-missing": with_(controller_pods=(controller_pod(ready=False),)),
    "controller-not-leading": with_(leases={LEASE: lease(renewed_ago=600)}),
    "scale-set-condition": with_(
        scale_sets=(scale_set(conditions=[condition("ScaleSetRegistered", "False")]),)
    ),
    "github-host-not-allowed": with_(
        runners=(
            {
                **arc_runner("r-elsewhere", phase="Pending", runner_id=2),
                "spec": {"githubConfigUrl": "http://attacker.example/org"},
            },
        ),
        runner_pods=(pod("r-elsewhere"),),
    ),
}


def test_every_check_has_a_case() -> None:
    assert set(CASES) == set(EVERY)


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
        found(
            with_(
                registered_ids=None,
                runners=(arc_runner("x", runner_id=99, phase="Pending"),),
                runner_pods=(pod("x"),),
            )
        )
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


def checks_of(inventory: Inventory) -> dict[str, set[str]]:
    by_check: dict[str, set[str]] = {}
    for finding in found(inventory):
        by_check.setdefault(finding.check, set()).add(finding.target)
    return by_check


@pytest.mark.parametrize("phase", ["Running", "Pending"])
def test_a_runner_whose_pod_is_gone_is_reported_after_a_minute(phase: str) -> None:
    gone = arc_runner("r", age=61, phase=phase)
    assert checks_of(with_(runners=(gone,))) == {"runner-pod-missing": {f"EphemeralRunner {NS}/r"}}
    assert checks_of(with_(runners=(arc_runner("r", age=59, phase=phase),))) == {}
    [finding] = found(with_(runners=(gone,)))
    assert finding.severity == "error"


def test_a_running_runner_without_job_and_pod_is_not_taken_for_an_idle_one() -> None:
    zombie = arc_runner("r", age=3600)
    assert set(checks_of(with_(runners=(zombie,)))) == {"runner-pod-missing"}


def test_the_minute_counts_from_the_runners_last_change() -> None:
    runner = arc_runner("r", age=3600)
    runner["metadata"]["managedFields"] = [{"time": stamp(3600)}, {"time": stamp(30)}]
    assert checks_of(with_(runners=(runner,))) == {}
    runner["metadata"]["managedFields"] = [{"time": stamp(90)}]
    assert set(checks_of(with_(runners=(runner,)))) == {"runner-pod-missing"}
    runner["status"]["failures"] = {"pod-uid": stamp(20)}
    assert checks_of(with_(runners=(runner,))) == {}


def test_an_outdated_runner_is_a_deprecated_version_not_a_terminal_one_holding_a_slot() -> None:
    outdated = arc_runner("r", phase="Outdated", reason="Outdated", message="Runner is deprecated")
    by_check = checks_of(with_(runners=(outdated,)))
    assert by_check == {"runner-version-deprecated": {f"EphemeralRunnerSet {NS}/arc"}}
    [finding] = found(with_(runners=(outdated,)))
    assert "1 runner(s) Outdated (r)" in finding.detail
    assert "runner image" in finding.action


def test_arc_reporting_healthy_with_runners_exiting_7_is_a_deprecated_version() -> None:
    """ARC #4601: the scale set Running and registered, the listener up; only the runner
    containers say it, exiting 7 one after the other."""
    inventory = with_(
        runners=(arc_runner("a", phase="Pending"), arc_runner("b", phase="Pending")),
        runner_pods=(exited("a", 7), exited("b", 7)),
        scale_sets=(scale_set(phase="Running"),),
    )
    [finding] = [f for f in found(inventory) if f.check == "runner-version-deprecated"]
    assert finding.target == f"EphemeralRunnerSet {NS}/arc"
    assert "2 runner pod(s) whose runner exited 7 (a, b)" in finding.detail
    other_exit = (exited("set-runner-idle", 1), pod("set-runner-busy", age=7190))
    assert found(with_(runner_pods=other_exit)) == []


def test_a_set_or_scale_set_in_phase_outdated_is_a_deprecated_version() -> None:
    outdated = with_(scale_sets=(scale_set(phase="Outdated"),))
    assert checks_of(outdated)["runner-version-deprecated"] == {f"AutoscalingRunnerSet {NS}/arc"}


@pytest.mark.parametrize(
    ("kind", "bad"),
    [
        ("Valid", "False"),
        ("ScaleSetRegistered", "False"),
        ("ControllerConflict", "True"),
        ("RunnerSetConflict", "True"),
    ],
)
def test_a_bad_scale_set_condition_is_found_and_a_good_one_is_not(kind: str, bad: str) -> None:
    troubled = with_(scale_sets=(scale_set(conditions=[condition(kind, bad, "Trouble")]),))
    [finding] = found(troubled)
    assert finding.check == "scale-set-condition"
    assert finding.target == f"AutoscalingRunnerSet {NS}/arc"
    assert f"{kind}={bad} (Trouble): {kind} said so" == finding.detail
    good = "True" if bad == "False" else "False"
    assert found(with_(scale_sets=(scale_set(conditions=[condition(kind, good)]),))) == []


def test_a_listener_without_its_pod_is_missing_and_a_new_one_is_not_yet() -> None:
    assert checks_of(with_(listener_pods=())) == {
        "listener-missing": {"AutoscalingListener arc-systems/set-listener"}
    }
    young = with_(listener_pods=(), listeners=(listener("set-listener", age=30),))
    assert found(young) == []
    unregistered = scale_set()
    unregistered["metadata"]["annotations"] = {}
    assert found(with_(listeners=(), scale_sets=(unregistered,))) == []


def test_a_controller_watching_other_namespaces_does_not_serve_this_one() -> None:
    elsewhere = controller_pod(args=("--watch-single-namespace=other",))
    [finding] = found(with_(controller_pods=(elsewhere,), leases={}))
    assert finding.check == "controller-missing"
    assert finding.target == f"Namespace {NS}"
    assert "no controller pod" in finding.detail
    serving = controller_pod(args=("--watch-namespace", "other", "--watch-namespace", NS))
    assert found(with_(controller_pods=(serving,), leases={})) == []
    starting = controller_pod(ready=False, age=20)
    assert found(with_(controller_pods=(starting,), leases={})) == []


@pytest.mark.parametrize(
    "lease_now",
    [None, lease(holder=""), lease(renewed_ago=600)],
    ids=["missing", "no-holder", "stale"],
)
def test_a_controller_nobody_leads_is_found(lease_now: Any) -> None:
    [finding] = found(with_(leases={LEASE: lease_now}))
    assert finding.check == "controller-not-leading"
    assert finding.target == f"Lease {LEASE[0]}/{LEASE[1]}"
    assert found(with_(leases={LEASE: lease(renewed_ago=40)})) == []  # 15 s + 30 s of skew


def test_without_leader_election_there_is_no_lease_to_check() -> None:
    single = controller_pod(args=())
    assert found(with_(controller_pods=(single,), leases={})) == []


def test_could_not_look_is_one_line_and_never_healthy() -> None:
    report = Report(could_not_look="cannot reach the Kubernetes API server at https://x")
    assert as_table(report) == "could not look: cannot reach the Kubernetes API server at https://x"
    data = json.loads(as_json(report))
    assert data["healthy"] is False
    assert data["could_not_look"].startswith("cannot reach")
    assert Report().healthy is False  # nothing checked is not healthy
