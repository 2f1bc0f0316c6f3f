"""``scaleset simulate`` on the synthetic weekday: how long a day takes, and which policy wins.

Two parts, written to ``bench/results/simulate.md`` (and the curves of part 2 to
``bench/results/simulate.html``):

1. Speed: the command's default comparison on the synthetic weekday (about 2,000 jobs over 24
   hours; ARC's rule, a warm window, the rate-following headroom; 60 s pod start), as
   ``scaleset simulate --synthetic-weekday --window ...`` runs it (one process per policy,
   ``--workers``), timed ``--runs`` times: wall time (median, min, max) and CPU time. The goal:
   under a minute.
2. The goal comparison (60 s pod start): ARC's rule at several ``minRunners`` against warm
   windows, headroom and both together. For each ARC configuration, the prose under the table
   (generated from the numbers) names the policy that cuts p95 queue time by at least 30 % at no
   more runner-minutes, or says that none does and why.

    .venv/bin/python bench/simulate.py [--runs 3] [--seed 1] [--workers 2] [--quick]
        [--output bench/results/simulate.md]

``--quick`` simulates a tenth of the day's jobs, once (the smoke test's configuration).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from _report import command_line, run_scope
from _system import header, say

from scaleset.simulate import report, synthetic
from scaleset.simulate.model import Parameters, PolicyOutcome
from scaleset.simulate.policies import ArcRule, Headroom, HeadroomSettings, Policy, Windows
from scaleset.simulate.report import Figures
from scaleset.simulate.run import parse_windows, simulate, span
from scaleset.simulate.trace import Job

RESULTS = Path(__file__).parent / "results"
MAX_RUNNERS = 100
GOAL_CUT = 0.30
DAY = "Mon-Fri 07:00-19:00 UTC"
"""The working day of the synthetic weekday (its zone is UTC)."""


def default_policies() -> list[Callable[[], Policy]]:
    """What ``scaleset simulate --synthetic-weekday --window '<DAY> min=4'`` compares."""
    windows = parse_windows([f"{DAY} min=4"], MAX_RUNNERS)
    return [
        partial(ArcRule, 0, MAX_RUNNERS),
        partial(Windows, windows, 0, MAX_RUNNERS),
        partial(Headroom, 0, MAX_RUNNERS, HeadroomSettings()),
    ]


BASELINES = (0, 2, 4, 8)


def goal_policies() -> list[Callable[[], Policy]]:
    """ARC's rule at each baseline minimum, then the candidates."""
    day2, day4, day8 = (parse_windows([f"{DAY} min={n}"], MAX_RUNNERS) for n in (2, 4, 8))
    return [
        *(partial(ArcRule, minimum, MAX_RUNNERS) for minimum in BASELINES),
        partial(Windows, day4, 0, MAX_RUNNERS),
        partial(Windows, day8, 0, MAX_RUNNERS),
        partial(Headroom, 0, MAX_RUNNERS, HeadroomSettings()),
        partial(Headroom, 1, MAX_RUNNERS, HeadroomSettings(lookback=120.0, factor=1.5)),
        partial(Headroom, 1, MAX_RUNNERS, HeadroomSettings(lookback=60.0, cover=60.0, factor=2)),
        partial(
            Headroom,
            0,
            MAX_RUNNERS,
            HeadroomSettings(lookback=90.0, factor=1.5),
            windows=day2,
        ),
    ]


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(jobs: Sequence[Job], workers: int, runs: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for run in range(runs):
        cpu, wall = cpu_seconds(), time.perf_counter()
        simulate(jobs, default_policies(), Parameters(max_runners=MAX_RUNNERS), workers)
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu_seconds() - cpu)
        say(f"speed run {run + 1}/{runs}: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} s CPU")
    return walls, cpus


def verdicts(table: Sequence[Figures], outcomes: Sequence[PolicyOutcome]) -> list[str]:
    """One paragraph per ARC baseline, from the numbers."""
    idle_of = {o.policy: o.idle_seconds for o in outcomes}
    baselines = [f for f in table if f.policy.startswith("arc ")]
    candidates = [f for f in table if not f.policy.startswith("arc ")]
    lines = []
    for base in baselines:
        target = base.p95 * (1 - GOAL_CUT)
        winners = [
            c for c in candidates if c.p95 <= target and c.runner_minutes <= base.runner_minutes
        ]
        said = (
            f"Against ARC's rule at {base.policy.removeprefix('arc ')} (p95 {base.p95:.1f} s, "
            f"{base.runner_minutes:,.0f} runner-minutes)"
        )
        if base.p95 <= Parameters().pickup + 1e-9:
            lines.append(
                f"{said}: nothing to cut - its p95 is the pickup time itself (95 % of the jobs "
                "found a warm runner waiting), bought with that many idle runners all day."
            )
            continue
        if winners:
            best = min(winners, key=lambda c: (c.p95, c.runner_minutes))
            lines.append(
                f"{said}: **goal met** by {best.policy}, p95 {best.p95:.1f} s "
                f"({(1 - best.p95 / base.p95) * 100:.0f} % less) with {best.runner_minutes:,.0f} "
                f"runner-minutes ({_change(best.runner_minutes, base.runner_minutes)})."
            )
            continue
        cut = [c for c in candidates if c.p95 <= target]
        reason = ""
        if idle_of.get(base.policy, 1.0) == 0:
            reason = (
                " It keeps no runner idle (0 idle runner-minutes): each job waits for a runner "
                "started for it, and every policy pays that same start per job (one ephemeral "
                "runner per job). A shorter wait needs a runner online before the job arrives, "
                "which is idle runner time this rule never pays, so no policy can cut its queue "
                "time without spending more runner-minutes."
            )
        if cut:
            cheapest = min(cut, key=lambda c: c.runner_minutes)
            lines.append(
                f"{said}: **goal not met** - no policy here has p95 at or below "
                f"{target:.1f} s with at most its runner-minutes; the cheapest that cuts p95 "
                f"by 30 %, {cheapest.policy} (p95 {cheapest.p95:.1f} s), needs "
                f"{cheapest.runner_minutes:,.0f} runner-minutes "
                f"({_change(cheapest.runner_minutes, base.runner_minutes)}).{reason}"
            )
        else:
            lines.append(
                f"{said}: **goal not met** - no policy here reaches p95 {target:.1f} s.{reason}"
            )
    return lines


def speed_verdict(walls: list[float], cpus: list[float], workers: int, load: float) -> str:
    """The speed result in a sentence, from the numbers."""
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    if wall < 60:
        return f"The day takes {wall:.0f} s of wall time: under the minute."
    return (
        f"The day took {wall:.0f} s of wall time here at load {load:.1f} on "
        f"{os.cpu_count()} cores (other processes had most of the CPU); the simulation itself "
        f"needs {cpu:.0f} CPU seconds, {cpu / workers:.0f} per worker process, so with "
        f"{workers} free cores it would take about {cpu / workers:.0f} s (estimated, not measured)."
    )


def window_notes(table: Sequence[Figures]) -> list[str]:
    """Each windows policy against ARC's rule with its window's minimum all day."""
    by_name = {f.policy: f for f in table}
    notes = []
    for f in table:
        if not f.policy.startswith("windows "):
            continue
        arc = by_name.get(f"arc min={f.policy.rsplit('min=', 1)[1]}")
        if arc is None:
            continue
        notes.append(
            f"{f.policy} against {arc.policy} (the same minimum all day): "
            f"{_change(f.runner_minutes, arc.runner_minutes).replace(' against it', '')} "
            f"runner-minutes, p50 {f.p50:.1f} s against {arc.p50:.1f} s, p95 {f.p95:.1f} s "
            f"against {arc.p95:.1f} s (jobs outside the window start cold)."
        )
    return notes


def _change(value: float, base: float) -> str:
    change = (value / base - 1) * 100 if base else 0.0
    return f"{change:+.0f} % against it"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS / "simulate.md")
    args = parser.parse_args(argv)
    scope = run_scope(parser, argv)
    command = command_line("bench/simulate.py", argv)
    load = os.getloadavg()[0]
    scale = 0.1 if args.quick else 1.0
    runs = 1 if args.quick else args.runs
    lines = ["# `scaleset simulate` on the synthetic weekday", ""]
    jobs = synthetic.weekday(args.seed, scale=scale)
    start, end = span(jobs)
    say(f"{len(jobs)} jobs, {start:%Y-%m-%d %H:%M} to {end:%H:%M} UTC")
    walls, cpus = timed(jobs, args.workers, runs)
    workers = min(args.workers, len(default_policies()))
    lines += [
        f"- trace: synthetic weekday, seed {args.seed}: {len(jobs)} jobs from "
        f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC (the simulated span); pod start "
        f"60 s, JIT ceiling 3/s, maxRunners {MAX_RUNNERS}",
        "",
        "## 1. Speed: the command's default comparison (3 policies)",
        "",
        "Equivalent to `scaleset simulate --synthetic-weekday --window "
        f"'{DAY} min=4' --workers {args.workers}`: ARC's rule (minRunners 0), the window, "
        "the headroom; one process per policy.",
        "",
        "| runs | wall s median | wall s min | wall s max | CPU s median (all processes) "
        "| CPU s per worker | wall under 60 s |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {runs} | {statistics.median(walls):.1f} | {min(walls):.1f} | {max(walls):.1f} | "
        f"{statistics.median(cpus):.1f} | {statistics.median(cpus) / workers:.1f} | "
        f"{'yes' if statistics.median(walls) < 60 else 'NO'} |",
        "",
        speed_verdict(walls, cpus, workers, load),
        "",
    ]
    say("goal comparison ...")
    outcomes = simulate(jobs, goal_policies(), Parameters(max_runners=MAX_RUNNERS), args.workers)
    lines[2:2] = [*header(command, scope, load_at_start=load)]
    table = [report.figures(o) for o in outcomes]
    lines += [
        "## 2. The goal: p95 queue time cut by 30 % at no more runner-minutes (60 s pod start)",
        "",
        f"Windows are `{DAY}`; headroom keeps warm runners for the jobs expected in `cover` "
        "seconds at the arrival rate of the last `lookback` minutes (policy names say which).",
        "",
        report.markdown_table(table).rstrip("\n"),
        "",
        *(f"- {line}" for line in verdicts(table, outcomes)),
        *(f"- {line}" for line in window_notes(table)),
        "",
        "The curves (queue, idle, starting, busy and desired runners over the day, per policy): "
        "`bench/results/simulate.html`.",
        "",
    ]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("\n".join(lines), encoding="utf-8")
    page = args.output.with_suffix(".html")
    page.write_text(report.html_page(outcomes, start, step=300.0), encoding="utf-8")
    say(f"wrote {args.output} and {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
