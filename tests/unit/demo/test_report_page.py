"""The demo's HTML report reads on its own: labelled axes, one lane per runner (created → idle →
busy → ended), the table of invariants, and the fake service's assumptions folded away."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from scaleset.demo.report import INVARIANTS, JobWait, Report, Sample, render_html, runner_lanes
from scaleset.demo.truth import Truth
from scaleset.embedded.runner import RunnerPhase


def _truth() -> Truth:
    truth = Truth(zombie_bound=5)
    for at, phase in (
        (0.0, RunnerPhase.CONNECTING),
        (1.0, RunnerPhase.LISTENING),
        (2.0, RunnerPhase.JOB_STARTED),
        (5.0, RunnerPhase.JOB_COMPLETED),
        (5.5, RunnerPhase.EXITED),
    ):
        truth.runner_phase("arc-runner-set-runner-abcde", 0, phase, at)
    truth.runner_phase("arc-runner-set-runner-fghij", 0, RunnerPhase.CONNECTING, 3.0)
    truth.runner_phase("arc-runner-set-runner-fghij", 0, RunnerPhase.LISTENING, 4.0)
    return truth


def _report(**changes: object) -> Report:
    report = Report(
        seed=4,
        jobs_planned=2,
        jobs_succeeded=1,
        jobs_failed=0,
        jobs_cancelled=0,
        waits=[JobWait("1", 0.0, 2.0, "succeeded"), JobWait("2", 3.0, None, "queued")],
        runner_seconds=9.0,
        busy_seconds=3.0,
        api_writes=20,
        zombie_seconds=0.0,
        max_zombie_age=0.0,
        leaked_registrations=0,
        wall_seconds=8.0,
        violations=[],
        assumptions=["the fake answers <this> & that"],
        samples=[Sample(0.0, {"starting": 1}, 1, 0), Sample(8.0, {"idle": 1}, 0, 1)],
        lanes=runner_lanes(_truth().processes.values(), now=8.0),
    )
    return replace(report, **changes)  # type: ignore[arg-type]


def test_each_runner_is_a_lane_from_created_to_ended() -> None:
    lanes = {lane.name: lane for lane in runner_lanes(_truth().processes.values(), now=8.0)}
    done = lanes["arc-runner-set-runner-abcde"]
    assert [(s.state, s.start, s.end) for s in done.segments] == [
        ("starting", 0.0, 1.0),
        ("idle", 1.0, 2.0),
        ("busy", 2.0, 5.0),
        ("after job", 5.0, 5.5),
    ]
    assert done.ended == 5.5
    alive = lanes["arc-runner-set-runner-fghij"]
    assert alive.ended is None
    assert alive.segments[-1].state == "idle"
    assert alive.segments[-1].end == 8.0


def test_the_page_has_labelled_axes_and_a_lane_per_runner() -> None:
    page = render_html(_report())
    assert "seconds since the run started" in page
    assert "runners / queued jobs" in page
    for name in ("arc-runner-set-runner-abcde", "arc-runner-set-runner-fghij"):
        assert name in page
    assert page.count("class='lane'") == 2


def test_the_page_tables_every_invariant_with_its_result() -> None:
    truth = Truth(zombie_bound=5)
    truth.finish(9, unfinished_jobs=["2"], leaked_registrations=[], runner_count=0, desired=0)
    page = render_html(_report(violations=truth.violations))
    rows = re.findall(r"<tr class='invariant (held|broken)'><td>([a-z-]+)</td>", page)
    assert {name for _, name in rows} == set(INVARIANTS)
    assert ("broken", "jobs-finished") in rows
    assert ("held", "no-resurrection") in rows


def test_every_invariant_the_truth_checks_is_in_the_table() -> None:
    source = (Path(__file__).parents[3] / "src/scaleset/demo/truth.py").read_text()
    checked = set(re.findall(r"_violate\(\s*\"([a-z-]+)\"", source))
    assert checked == set(INVARIANTS)


def test_the_fake_services_assumptions_fold_away() -> None:
    page = render_html(_report())
    folded = re.search(r"<details>(.*?)</details>", page, re.S)
    assert folded is not None
    assert "assumptions" in folded.group(1)
    assert "the fake answers &lt;this&gt; &amp; that" in folded.group(1)
    assert page.count("the fake answers") == 1
