"""The demo's pure parts: the workload is deterministic per seed, the ground-truth invariants
catch what they name (and only that), and the report renders without a server."""

from __future__ import annotations

import re

import pytest

from scaleset.demo.report import JobWait, Report, Sample, render_html, render_text
from scaleset.demo.truth import Truth
from scaleset.demo.workload import CHAOS_PROFILES, FaultKind, build_workload, parse_runners
from scaleset.embedded.runner import RunnerPhase

# ---------------------------------------------------------------- workload


def test_same_seed_same_workload_other_seed_other_workload() -> None:
    first = build_workload(jobs=30, duration=30, seed=7, chaos="all")
    assert first == build_workload(jobs=30, duration=30, seed=7, chaos="all")
    assert first != build_workload(jobs=30, duration=30, seed=8, chaos="all")


def test_jobs_arrive_within_the_duration_in_order_and_in_bursts() -> None:
    workload = build_workload(jobs=90, duration=60, seed=3)
    times = [job.at for job in workload.jobs]
    assert times == sorted(times)
    assert all(0 <= t <= 60 for t in times)
    # three bursts: every job lands within a tenth of the run after a burst start
    assert all(any(0 <= t - start <= 6 for start in (0, 20, 40)) for t in times)
    assert all(2 <= job.duration <= 6 for job in workload.jobs)
    assert workload.busy_seconds == pytest.approx(sum(j.duration for j in workload.jobs))


def test_each_chaos_profile_schedules_its_faults_once_inside_the_run() -> None:
    for name, kinds in CHAOS_PROFILES.items():
        if name == "soak":
            continue  # rates and a schedule: tests/unit/demo/test_soak.py
        workload = build_workload(jobs=5, duration=50, seed=1, chaos=name)
        assert sorted(f.kind for f in workload.faults) == sorted(kinds)
        assert all(10 <= f.at <= 40 for f in workload.faults)
    assert CHAOS_PROFILES["kill-listener"] == (FaultKind.KILL_LISTENER,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jobs": -1, "duration": 10}, "--jobs"),
        ({"jobs": 1, "duration": 0}, "--duration"),
        ({"jobs": 1, "duration": 10, "chaos": "meteor"}, "unknown profile"),
    ],
)
def test_bad_workload_options_name_the_option(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_workload(seed=1, **kwargs)  # type: ignore[arg-type]


def test_runners_option() -> None:
    assert parse_runners("0:10") == (0, 10)
    assert parse_runners("2:2") == (2, 2)
    for bad in ("10", "a:b", "5:2", "-1:3", "0:0"):
        with pytest.raises(ValueError, match="--runners"):
            parse_runners(bad)


# ---------------------------------------------------------------- truth and invariants


def _run_job(truth: Truth, pod: str, at: float) -> None:
    for offset, phase in enumerate(
        (RunnerPhase.CONNECTING, RunnerPhase.LISTENING, RunnerPhase.JOB_STARTED)
    ):
        truth.runner_phase(pod, 0, phase, at + offset)


def test_L4_a_hanging_runner_is_a_zombie_until_it_ends_and_breaks_the_bound_only_past_it() -> None:
    truth = Truth(zombie_bound=15)
    _run_job(truth, "r1", 0)
    truth.runner_phase("r1", 0, RunnerPhase.JOB_COMPLETED, 5)
    truth.runner_phase("r1", 0, RunnerPhase.HANGING, 5)
    truth.check(19.9)
    assert truth.violations == []
    truth.runner_phase("r1", 0, RunnerPhase.STOPPING, 20)
    truth.runner_phase("r1", 0, RunnerPhase.EXITED, 20.5)
    truth.check(30)
    assert truth.violations == []
    assert truth.zombie_seconds(30) == pytest.approx(15.5)
    assert truth.max_zombie_age() == pytest.approx(15.5)

    late = Truth(zombie_bound=15)
    _run_job(late, "r2", 0)
    late.runner_phase("r2", 0, RunnerPhase.HANGING, 5)
    late.check(20.5)
    late.check(25)
    assert [v.invariant for v in late.violations] == ["no-zombie-over-bound"]


def test_L4_a_github_outage_extends_a_zombies_bound_by_its_overlap_only() -> None:
    truth = Truth(zombie_bound=15)
    _run_job(truth, "r1", 0)
    truth.runner_phase("r1", 0, RunnerPhase.HANGING, 5)
    truth.outage_started(10)
    truth.outage_ended(18)
    truth.check(27.9)  # 22.9 s a zombie; 15 s bound + 8 s of outage
    assert truth.violations == []
    truth.check(28.5)
    assert [v.invariant for v in truth.violations] == ["no-zombie-over-bound"]


def test_L5_a_reused_config_refused_by_github_is_a_zombie() -> None:
    truth = Truth(zombie_bound=5)
    truth.runner_phase("r1", 1, RunnerPhase.CONNECTING, 0)
    truth.runner_phase("r1", 1, RunnerPhase.REGISTRATION_DELETED, 1)
    truth.check(7)
    assert [v.invariant for v in truth.violations] == ["no-zombie-over-bound"]


def test_a_pod_that_vanished_ends_its_processes_without_a_report() -> None:
    truth = Truth(zombie_bound=5)
    truth.runner_phase("r1", 0, RunnerPhase.HANGING, 0)
    truth.pod_gone("r1", 3)
    truth.check(100)
    assert truth.violations == []
    assert truth.runner_seconds(100) == pytest.approx(3)


def test_L3_a_runner_stopped_mid_job_is_a_violation_unless_the_demo_injected_it() -> None:
    truth = Truth(zombie_bound=5)
    _run_job(truth, "busy", 0)
    truth.runner_phase("busy", 0, RunnerPhase.STOPPING, 4)
    assert [v.invariant for v in truth.violations] == ["no-busy-runner-deleted"]

    chaos = Truth(zombie_bound=5)
    chaos.fault_injected("evicted")
    _run_job(chaos, "evicted", 0)
    chaos.runner_phase("evicted", 0, RunnerPhase.STOPPING, 4)
    assert chaos.violations == []

    idle = Truth(zombie_bound=5)
    idle.runner_phase("idle", 0, RunnerPhase.LISTENING, 0)
    idle.runner_phase("idle", 0, RunnerPhase.STOPPING, 1)
    assert idle.violations == []


def test_L2_a_terminal_runner_seen_non_terminal_again_is_a_resurrection() -> None:
    truth = Truth(zombie_bound=5)
    for phase in ("", "Pending", "Running", "Succeeded", "Succeeded"):
        truth.er_phase("uid-1", "r1", phase, 1)
    assert truth.violations == []
    truth.er_phase("uid-1", "r1", "Running", 2)
    assert [v.invariant for v in truth.violations] == ["no-resurrection"]
    truth.er_phase("uid-2", "r1", "Pending", 3)  # a new runner with the same name is not one
    assert len(truth.violations) == 1


def test_end_of_run_invariants_name_what_broke_once_each() -> None:
    truth = Truth(zombie_bound=5)
    truth.finish(10, unfinished_jobs=["7"], leaked_registrations=["r9"], runner_count=3, desired=0)
    truth.finish(11, unfinished_jobs=["7"], leaked_registrations=["r9"], runner_count=3, desired=0)
    assert [v.invariant for v in truth.violations] == [
        "jobs-finished",
        "no-leaked-registration",
        "runners-converge",
    ]
    ok = Truth(zombie_bound=5)
    ok.finish(10, unfinished_jobs=[], leaked_registrations=[], runner_count=0, desired=0)
    assert ok.violations == []


# ---------------------------------------------------------------- report


def _report(violations: bool = False) -> Report:
    truth = Truth(zombie_bound=5)
    if violations:
        truth.finish(9, unfinished_jobs=["3"], leaked_registrations=[], runner_count=0, desired=0)
    return Report(
        seed=4,
        jobs_planned=3,
        jobs_succeeded=2,
        jobs_failed=0,
        jobs_cancelled=0,
        waits=[
            JobWait("1", 0.0, 1.0, "succeeded"),
            JobWait("2", 0.5, 3.0, "succeeded"),
            JobWait("3", 1.0, None, "queued"),
        ],
        runner_seconds=10.0,
        busy_seconds=8.0,
        api_writes=20,
        zombie_seconds=0.0,
        max_zombie_age=0.0,
        leaked_registrations=0,
        wall_seconds=12.0,
        violations=truth.violations,
        assumptions=["an <assumption> & more"],
        writes_by_resource={"patch ephemeralrunners/status": 12, "create pods": 8},
        samples=[
            Sample(0.0, {"starting": 1}, 2, 0),
            Sample(1.0, {"idle": 1, "busy": 1}, 1, 1),
            Sample(2.0, {"busy": 2}, 0, 2),
        ],
    )


def test_report_text_has_every_figure_the_issue_asks_for() -> None:
    text = render_text(_report())
    for needle in (
        "2 succeeded",
        "p50",
        "p95",
        "max 3.0s",
        "10 used, 8 busy",
        "API writes",
        "10.0 per job",
        "most: patch ephemeralrunners/status 12, create pods 8",
        "zombie-seconds",
        "leaked registrations: 0",
        "an <assumption> & more",
        "invariants: all held",
    ):
        assert needle in text
    broken = render_text(_report(violations=True))
    assert "BROKEN INVARIANTS" in broken
    assert "jobs-finished" in broken


def test_report_page_is_self_contained_and_escaped() -> None:
    page = render_html(_report())
    assert page.startswith("<!doctype html>")
    assert "<svg" in page
    assert "<polygon" in page
    assert "&lt;assumption&gt; &amp; more" in page
    assert "<script" not in page
    assert not re.search(r"(src|href)=['\"]https?:", page)
