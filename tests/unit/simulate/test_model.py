"""The discrete-event model on small traces: the latencies add up as documented, a warm runner
takes a job at once, GitHub's JIT ceiling spreads a burst, a warm window opening raises the idle
runners with no job and its close lets them go, and — on arbitrary traces — every job runs once
on a runner of its own and the accounts hold (runner time covers the jobs, idle is part of it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from scaleset.simulate.model import Parameters, PolicyOutcome, Simulation
from scaleset.simulate.policies import ArcRule, Policy, Windows
from scaleset.simulate.run import parse_windows
from scaleset.simulate.trace import Job

START = datetime(2027, 1, 13, tzinfo=UTC)  # a Wednesday
P = Parameters(max_runners=50)
COLD = P.message_latency + P.reconcile_latency + P.jit_latency + P.pod_start + P.pickup
"""A job with no runner waiting: message, controller, JIT config, pod start, pickup."""


def job(at: float, duration: float = 60.0) -> Job:
    return Job(START + timedelta(seconds=at), duration)


def run(jobs: list[Job], policy: Policy, hours: float = 2.0, p: Parameters = P) -> PolicyOutcome:
    return Simulation(jobs, policy, p, start=START, end=START + timedelta(hours=hours)).run()


def idle_at(outcome: PolicyOutcome, at: float) -> int:
    current = 0
    for sample in outcome.samples:
        if sample.at > at:
            break
        current = sample.idle
    return current


def test_a_cold_job_waits_for_message_controller_jit_and_pod_start() -> None:
    outcome = run([job(600)], ArcRule(0, 10))
    assert outcome.queue_times == [COLD]
    assert outcome.jit_configs == 1
    assert outcome.idle_seconds == 0


def test_a_warm_runner_takes_a_job_at_once_and_is_replaced() -> None:
    outcome = run([job(600)], ArcRule(1, 10))
    assert outcome.queue_times == [P.pickup]
    assert outcome.jit_configs == 2, "the warm runner and its replacement"
    assert idle_at(outcome, 7000) == 1


def test_the_jit_ceiling_spreads_a_burst() -> None:
    burst = [job(600) for _ in range(30)]
    outcome = run(burst, ArcRule(0, 50))
    spread = sorted(outcome.queue_times)
    assert spread[0] == COLD
    assert spread[-1] >= COLD + 29 / P.jit_rate - 1e-9
    faster = run(burst, ArcRule(0, 50), p=Parameters(max_runners=50, jit_rate=100.0))
    assert max(faster.queue_times) < spread[-1]


def test_max_runners_caps_the_runners() -> None:
    outcome = run([job(600, 600) for _ in range(8)], ArcRule(0, 3))
    assert max(sample.desired for sample in outcome.samples) == 3
    assert max(s.starting + s.idle + s.busy for s in outcome.samples) <= 3
    assert len(outcome.queue_times) == 8, "the rest wait for a runner to finish"


def test_a_window_opening_raises_idle_runners_without_a_job() -> None:
    windows = parse_windows(["Wed 01:00-02:00 UTC min=3"], 10)
    outcome = run([], Windows(windows, 0, 10), hours=4)
    assert idle_at(outcome, 3599) == 0
    assert idle_at(outcome, 3600 + P.reconcile_latency + P.jit_latency + P.pod_start + 3) == 3
    assert idle_at(outcome, 7199) == 3
    assert idle_at(outcome, 7200 + 2 * P.poll_timeout + 10) == 0, "scaled down after it closed"
    assert outcome.jit_configs == 3


def test_arc_rule_keeps_its_minimum_all_day() -> None:
    outcome = run([], ArcRule(2, 10), hours=4)
    assert idle_at(outcome, 3 * 3600) == 2
    assert outcome.idle_seconds == 2 * 4 * 3600, "warm from the start (the warm-up is free)"


@settings(deadline=None, max_examples=25)
@given(
    st.lists(st.tuples(st.floats(0, 2 * 3600), st.floats(1, 1200)), min_size=1, max_size=25),
    st.integers(0, 3),
    st.integers(1, 12),
)
@example(  # 12,877 s of jobs serially on one runner, plus a cold start each: over 4 hours
    [(0.0, 1.0)] * 6
    + [(0.0, d) for d in (180.0, 172.0, 183.0, 242.0, 322.0, 404.0, 713.0, 6.0, 1049.0)]
    + [(0.0, 1200.0)] * 8
    + [(1.0, 1.0)],
    0,
    1,
)
def test_every_job_runs_once_on_a_runner_of_its_own(
    arrivals: list[tuple[float, float]], minimum: int, maximum: int
) -> None:
    jobs = [job(at, duration) for at, duration in arrivals]
    # long enough for the trace to end even one job at a time, each on a cold runner
    serial = max(at for at, _ in arrivals) + sum(COLD + d for _, d in arrivals)
    hours = max(4.0, (serial + 2 * P.poll_timeout) / 3600)
    outcome = run(jobs, ArcRule(min(minimum, maximum), maximum), hours=hours)
    assert outcome.not_started == 0
    assert len(outcome.queue_times) == len(jobs)
    assert all(wait >= P.pickup - 1e-9 for wait in outcome.queue_times)
    assert outcome.jit_configs >= len(jobs), "one runner, one JIT config, per job"
    assert outcome.runner_seconds >= sum(d for _, d in arrivals) - 1e-6
    assert 0 <= outcome.idle_seconds <= outcome.runner_seconds
    for sample in outcome.samples:
        assert sample.starting + sample.idle + sample.busy <= maximum


def test_nodes_added_on_demand_delay_the_pods_and_are_kept_a_while() -> None:
    p = Parameters(max_runners=50, runners_per_node=2, node_scale_up=120.0, node_idle=600.0)
    first = [job(600, 30) for _ in range(4)]
    again = [job(900, 30) for _ in range(2)]  # the nodes are empty but still there
    late = [job(3000, 30)]  # the nodes were removed after 10 minutes empty
    outcome = run(first + again + late, ArcRule(0, 50), p=p)
    waits = outcome.queue_times
    assert all(wait >= COLD + p.node_scale_up for wait in waits[:4])
    assert all(wait < COLD + 2 for wait in waits[4:6])
    assert waits[6] >= COLD + p.node_scale_up
