"""Properties of the doctor's pure checks: no object a person, ARC or an older scaleset could
leave in a cluster makes a check crash, and ``runner-pod-missing`` fires exactly for a Running
or Pending runner without its pod, quiet for longer than the bound (a minute — not the ten
minutes after which such a runner used to be taken for an idle ``running-without-job``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scaleset.doctor.checks import GITHUB_CHECKS, KUBERNETES_CHECKS, run_checks
from scaleset.doctor.inventory import Inventory, Thresholds

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
EVERY = [*KUBERNETES_CHECKS, *GITHUB_CHECKS]

json_values: st.SearchStrategy[Any] = st.sampled_from(
    [
        None,
        True,
        0,
        7,
        -3,
        1.5,
        "",
        "x",
        "Running",
        "Pending",
        "Outdated",
        "True",
        "False",
        "2026-12-01T11:59:00Z",
        "not a time",
        [],
        [None],
        ["x", 3],
        [{}],
        [{"type": "Ready", "status": "True"}, "x"],
        [{"name": "runner", "state": {"terminated": {"exitCode": 7}}}],
        [{"name": "runner", "lastState": "x", "state": {"waiting": None}}],
        [{"kind": "EphemeralRunnerSet", "name": None}],
        [{"time": "2026-12-01T11:59:00Z"}, {"time": 3}],
        {},
        {"a": None},
        {"uid": "2026-12-01T11:59:00Z", "other": 5},
    ]
)
"""Values of every JSON type, including the shapes the checks look into, in wrong places."""


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    """An object with any of the fields the checks read, each holding anything."""
    meta = draw(
        st.fixed_dictionaries(
            {},
            optional={
                key: json_values
                for key in (
                    "name",
                    "namespace",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "finalizers",
                    "ownerReferences",
                    "managedFields",
                    "labels",
                    "annotations",
                )
            },
        )
    )
    status = draw(
        st.fixed_dictionaries(
            {},
            optional={
                key: json_values
                for key in (
                    "phase",
                    "reason",
                    "jobId",
                    "jobRequestId",
                    "runnerId",
                    "failures",
                    "conditions",
                    "containerStatuses",
                    "ready",
                )
            },
        )
    )
    spec = draw(
        st.fixed_dictionaries(
            {},
            optional={
                key: json_values
                for key in (
                    "githubConfigUrl",
                    "runnerScaleSetId",
                    "containers",
                    "holderIdentity",
                    "renewTime",
                    "leaseDurationSeconds",
                    "autoscalingRunnerSetNamespace",
                    "autoscalingRunnerSetName",
                )
            },
        )
    )
    return {"metadata": meta, "status": status, "spec": spec}


some = st.lists(objects(), max_size=3).map(tuple)


@settings(max_examples=150, deadline=None)
@given(
    runners=some,
    runner_pods=some,
    runner_sets=some,
    scale_sets=some,
    listeners=some,
    listener_pods=some,
    controller_pods=some,
    lease=st.one_of(st.none(), objects()),
)
def test_no_object_makes_a_check_crash(
    runners: tuple[dict[str, Any], ...],
    runner_pods: tuple[dict[str, Any], ...],
    runner_sets: tuple[dict[str, Any], ...],
    scale_sets: tuple[dict[str, Any], ...],
    listeners: tuple[dict[str, Any], ...],
    listener_pods: tuple[dict[str, Any], ...],
    controller_pods: tuple[dict[str, Any], ...],
    lease: dict[str, Any] | None,
) -> None:
    inventory = Inventory(
        now=NOW,
        runners=runners,
        runner_pods=runner_pods,
        runner_sets=runner_sets,
        scale_sets=scale_sets,
        listeners=listeners,
        listener_pods=listener_pods,
        controller_pods=controller_pods,
        leases={("", ""): lease, ("ns", "actions-runner-controller"): lease},
        registered_ids={},
    )
    for finding in run_checks(inventory, Thresholds(), EVERY):
        assert finding.check in EVERY
        assert finding.action


def test_a_running_runner_without_job_or_pod_is_found_after_a_minute_not_ten() -> None:
    """ARC #4588 in its plainest form: Running, no job, its pod gone for 61 s."""
    created = (NOW - timedelta(seconds=61)).strftime("%Y-%m-%dT%H:%M:%SZ")
    runner = {
        "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": created},
        "status": {"phase": "Running", "runnerId": 1},
    }
    findings = run_checks(Inventory(now=NOW, runners=(runner,)), Thresholds(), EVERY)
    assert [(f.check, f.target, f.severity) for f in findings] == [
        ("runner-pod-missing", "EphemeralRunner ns/r", "error")
    ]


@settings(max_examples=300, deadline=None)
@given(
    phase=st.sampled_from(["Running", "Pending", "Failed", "Outdated", "Succeeded", ""]),
    quiet=st.integers(0, 600),
    has_pod=st.booleans(),
    being_deleted=st.booleans(),
    has_job=st.booleans(),
)
def test_runner_pod_missing_fires_exactly_for_a_live_runner_long_without_its_pod(
    phase: str, quiet: int, has_pod: bool, being_deleted: bool, has_job: bool
) -> None:
    changed = (NOW - timedelta(seconds=quiet)).strftime("%Y-%m-%dT%H:%M:%SZ")
    runner: dict[str, Any] = {
        "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": changed},
        "status": {"phase": phase, **({"jobId": "j"} if has_job else {})},
    }
    if being_deleted:
        runner["metadata"]["deletionTimestamp"] = changed
    pods = ({"metadata": {"name": "r", "namespace": "ns"}},) if has_pod else ()
    inventory = Inventory(now=NOW, runners=(runner,), runner_pods=pods)
    fired = bool(run_checks(inventory, Thresholds(), ["runner-pod-missing"]))
    expected = phase in ("Running", "Pending") and not has_pod and not being_deleted and quiet > 60
    assert fired == expected
    if not has_pod:  # never also "idle Running": one finding for one cause
        assert not run_checks(inventory, Thresholds(), ["running-without-job"])
