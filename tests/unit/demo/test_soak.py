"""The soak's pure parts (issue 20): the soak workload is deterministic per seed and carries the
rates and the schedule it names; the API server's failure rate is seeded and leaves excluded
resources alone; the new ground-truth checks (JIT reuse, lost job events, blackouts) catch what
they name; the multi-seed table renders."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter

import pytest

from scaleset.demo.report import Report, render_seed_table, render_text, seed_row
from scaleset.demo.run import SOAK_DEFAULTS, demo_options
from scaleset.demo.truth import Truth
from scaleset.demo.workload import SOAK_SCHEDULE, FaultKind, build_workload
from scaleset.embedded.apiserver._errors import ApiError
from scaleset.embedded.apiserver._faults import Faults, RequestInfo

# ---------------------------------------------------------------- workload


def test_soak_workload_is_the_same_for_a_seed_and_differs_between_seeds() -> None:
    first = build_workload(jobs=200, duration=60, seed=4, chaos="soak")
    assert first == build_workload(jobs=200, duration=60, seed=4, chaos="soak")
    assert first != build_workload(jobs=200, duration=60, seed=5, chaos="soak")


def test_soak_workload_has_the_rates_and_the_whole_schedule() -> None:
    workload = build_workload(jobs=4000, duration=120, seed=1, chaos="soak")
    faults = Counter(job.fault for job in workload.jobs)
    evicted = faults[FaultKind.EVICT_BUSY] + faults[FaultKind.EVICT_IDLE]
    assert 0.08 * 4000 < evicted < 0.12 * 4000
    assert 0.035 * 4000 < faults[FaultKind.OOM_BUSY] < 0.065 * 4000
    assert faults[FaultKind.EVICT_IDLE] > 0
    assert all(0 < job.fault_after < job.duration for job in workload.jobs)
    assert all(0.5 <= job.duration <= 2.5 for job in workload.jobs)
    assert workload.rates is not None
    assert (workload.rates.hang, workload.rates.api_write_failures) == (0.05, 0.02)
    scheduled = Counter(fault.kind for fault in workload.faults)
    assert scheduled == Counter(dict(SOAK_SCHEDULE))
    assert scheduled[FaultKind.KILL_LISTENER] == 3
    assert scheduled[FaultKind.KILL_CONTROLLER] == 2


def test_soak_github_incidents_never_overlap_and_the_watch_expiry_hits_a_burst() -> None:
    outage = 60.0
    for seed in range(20):
        workload = build_workload(
            jobs=300, duration=120, seed=seed, chaos="soak", outage_seconds=outage
        )
        github = sorted(
            (f.at, f.kind)
            for f in workload.faults
            if f.kind
            in (
                FaultKind.GITHUB_OUTAGE,
                FaultKind.GITHUB_5XX_BURST,
                FaultKind.MQ_TOKEN_EXPIRY,
                FaultKind.STALE_SESSION_RESTART,
            )
        )
        for (at, kind), (later, _) in itertools.pairwise(github):
            length = outage if kind == FaultKind.GITHUB_OUTAGE else 0.0
            assert later - at >= length + 120 * 0.12 - 1e-6
        (watch,) = [f.at for f in workload.faults if f.kind == FaultKind.WATCH_EXPIRY]
        burst = [job.at for job in workload.jobs if watch <= job.at <= watch + 6]
        assert len(burst) > 300 / 6  # a sixth of the jobs arrive right after it


def test_soak_options_default_to_a_thousand_jobs_and_a_one_minute_outage() -> None:
    options = demo_options(chaos="soak")
    assert (options.jobs, options.duration) == (1000, 120.0)
    assert (options.min_runners, options.max_runners) == (0, 40)
    assert options.outage_seconds == SOAK_DEFAULTS.outage_seconds == 60.0
    assert options.session_idle_seconds > options.outage_seconds
    assert demo_options(chaos="soak", jobs=120, runners="0:20").jobs == 120
    assert demo_options().jobs == 30
    with pytest.raises(ValueError, match="unknown profile"):
        demo_options(chaos="nope")


# ---------------------------------------------------------------- the API server's failure rate


def _write(resource: str = "ephemeralrunners", subresource: str = "") -> RequestInfo:
    return RequestInfo("patch", "actions.github.com", resource, subresource, "ns", "r")


async def _outcomes(faults: Faults, requests: list[RequestInfo]) -> list[int]:
    codes = []
    for info in requests:
        try:
            await faults.before(info)
            codes.append(0)
        except ApiError as error:
            codes.append(error.code)
    return codes


def test_failure_rate_is_seeded_and_hits_about_its_share() -> None:
    requests = [_write() for _ in range(5000)]

    def run(seed: int) -> list[int]:
        faults = Faults()
        faults.fail_rate(0.02, seed=seed)
        return asyncio.run(_outcomes(faults, requests))

    first = run(3)
    assert first == run(3)
    assert first != run(4)
    failed = [code for code in first if code]
    assert 0.01 * 5000 < len(failed) < 0.03 * 5000
    assert set(failed) == {409, 500, 503}


def test_failure_rate_leaves_reads_and_excluded_resources_alone_and_counts_after_clear() -> None:
    faults = Faults()
    faults.fail_rate(1.0, codes=(500,), exclude=("pods/status",))
    read = RequestInfo("get", "", "pods", "", "ns", "p")
    node = _write("pods", "status")
    codes = asyncio.run(_outcomes(faults, [read, node, _write()]))
    assert codes == [0, 0, 500]
    faults.clear()
    assert asyncio.run(_outcomes(faults, [_write()])) == [0]
    assert faults.rate_hits() == 1
    with pytest.raises(ValueError, match="between 0 and 1"):
        faults.fail_rate(1.5)


def test_failure_rate_through_the_control_command() -> None:
    faults = Faults()
    faults.control({"action": "rate", "rate": 1.0, "codes": [409], "resource": "secrets"})
    codes = asyncio.run(_outcomes(faults, [_write("secrets"), _write("pods")]))
    assert codes == [409, 0]


# ---------------------------------------------------------------- ground truth


def test_a_jit_config_started_by_a_second_process_is_a_reuse() -> None:
    truth = Truth(zombie_bound=15)
    truth.jit_started("d1", "runner-a", 0, 1.0)
    truth.jit_started("d1", "runner-a", 0, 2.0)  # the same process reporting again
    truth.jit_started("d2", "runner-b", 0, 3.0)
    assert truth.violations == []
    truth.jit_started("d1", "runner-c", 0, 4.0)
    assert [v.invariant for v in truth.violations] == ["no-jit-reuse"]
    assert "runner-a" in truth.violations[0].detail


def test_blackouts_overlap_once_and_extend_the_event_bound() -> None:
    truth = Truth(zombie_bound=15)
    outage = truth.outage_started(10)
    controller = truth.outage_started(12)
    truth.outage_ended(20, controller)
    truth.outage_ended(30, outage)
    assert truth.outage_overlap(0, 40) == 20  # 10..30, not 20 + 8
    assert truth.event_bound(25, 40) == 15 + 5


def test_lost_job_events_are_counted_once_per_event() -> None:
    truth = Truth(zombie_bound=15)
    truth.job_event_lost("JobStarted", "7", "runner-a", 16.0, 20.0)
    truth.job_event_lost("JobStarted", "7", "runner-a", 17.0, 21.0)
    truth.job_event_lost("JobCompleted", "7", "runner-a", 16.0, 21.0)
    assert truth.broken() == Counter({"no-lost-job-event": 2})


# ---------------------------------------------------------------- report


def _report(**extra: object) -> Report:
    base: dict[str, object] = {
        "seed": 3,
        "jobs_planned": 10,
        "jobs_succeeded": 8,
        "jobs_failed": 2,
        "jobs_cancelled": 0,
        "waits": [],
        "runner_seconds": 10.0,
        "busy_seconds": 5.0,
        "api_writes": 100,
        "zombie_seconds": 1.5,
        "max_zombie_age": 7.0,
        "leaked_registrations": 0,
        "wall_seconds": 60.0,
        "violations": [],
        "assumptions": [],
        "chaos": "soak",
        "zombie_bound": 15.0,
        "max_judged_zombie_age": 6.0,
        "api_failures_injected": 12,
    }
    base.update(extra)
    return Report(**base)  # type: ignore[arg-type]


def test_seed_table_has_a_row_per_seed_with_every_figure() -> None:
    truth = Truth(zombie_bound=15)
    truth.jit_started("d", "a", 0, 1.0)
    truth.jit_started("d", "b", 0, 2.0)
    rows = [seed_row(_report(), 61.2), seed_row(_report(seed=4, violations=truth.violations), 70)]
    table = render_seed_table(rows)
    lines = table.splitlines()
    assert len(lines) == 4
    assert lines[2].startswith("| 3 | 10/10 | 2 | 1.5 | 7.0 (6.0) | 0 | 0 | 0 | 0 | 0 (0) |")
    assert lines[2].endswith("| 12 | 61 | held |")
    assert "| 1 |" in lines[3]  # the JIT reuse
    assert lines[3].endswith("BROKEN: no-jit-reuse |")
    assert "JIT configs used twice 0" in render_text(_report())
