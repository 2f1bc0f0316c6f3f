"""The demo's view of registrations left without their runner (L6): a leak at the end names
what the run saw of it, and one the registration pass removed during the run is told apart
from a runner merely created between a sample's two reads."""

from __future__ import annotations

from pathlib import Path

from scaleset.controllers.options import ControllerOptions
from scaleset.demo.controller_worker import options_from_json, options_to_json
from scaleset.demo.truth import Truth


def test_a_leaked_registration_names_its_registrations_and_its_runners_life() -> None:
    truth = Truth(zombie_bound=15)

    def seen(at: float, *, runner_id: int = 0, deleting: bool = False, gone: bool = False) -> None:
        truth.runner_seen(
            "set-runner-a",
            at,
            job_request_id=0,
            completion_job="",
            observed_at=None,
            deleting=deleting,
            runner_id=runner_id,
            gone=gone,
        )

    seen(30.0)
    truth.registration_seen(7, "set-runner-a", 30.5)
    truth.registration_seen(9, "set-runner-a", 95.0)
    seen(96.0, runner_id=7)
    seen(120.0, runner_id=7, deleting=True)
    seen(121.0, runner_id=7, deleting=True, gone=True)
    truth.finish(
        200.0, unfinished_jobs=[], leaked_registrations=["set-runner-a"], runner_count=0, desired=0
    )
    [violation] = truth.violations
    assert violation.invariant == "no-leaked-registration"
    assert "id 7 from 30.5s, id 9 from 95.0s" in violation.detail
    assert "seen 30.0s, being deleted 120.0s, gone 121.0s, runner ids on it [7]" in violation.detail


def test_a_registration_without_a_runner_on_two_samples_and_gone_since_was_removed() -> None:
    truth = Truth(zombie_bound=15)
    assert truth.registrations_without_runner(["a", "b"], 10.0) == []
    assert truth.registrations_without_runner(["a"], 10.5) == []  # b: one sample, a new runner
    assert truth.registrations_without_runner(["a"], 11.0) == []
    assert truth.registrations_without_runner([], 40.0) == ["a"]
    assert truth.removed_orphans == [("a", 10.0, 40.0)]


def test_the_controller_process_gets_the_options_the_demo_builds() -> None:
    options = ControllerOptions(
        controller_namespace="arc-systems",
        listener_image="ghcr.io/scaleset/scaleset:demo",
        kubeconfig=Path("/tmp/kubeconfig"),
        log_level="warn",
        identity="demo-1a2b3c",
        watch_namespaces=("arc-runners",),
        workers={"ephemeralrunner": 4},
        k8s_client_qps=200.0,
    )
    assert options_from_json(options_to_json(options)) == options
