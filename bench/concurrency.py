"""Concurrency scale: hundreds of busy runners across 10 scale sets at once.

Issue 19, item 10 (ARC users report trouble at 200–300 concurrent runners, ARC #4460/#4470).
The whole demo system (``_system.BenchSystem``: the controller manager in its own process, the
embedded API server in another; the fake GitHub, the simulated kubelet and runners and the 10
listeners in this one) with ``--sets`` AutoscalingRunnerSets (minRunners 0, maxRunners = jobs per
set). For each size N in ``--sizes`` (default 100 and 300), N jobs of ``--job-seconds`` each are
queued at once, N / sets per scale set, long enough that they all run at the same time; with
zero added latency and with the realistic profile (``--profiles``, ``_system.REALISTIC``). Measured
on the fake service's ground truth:

- queue time of each job (``queue_time`` → ``start_time``): p50, p95, max;
- peak concurrent busy runners (jobs running at once);
- CPU seconds of the controller process, the API server process and this process (fake GitHub,
  kubelet, runners, listeners), from the queueing until every job finished and every set is
  back at 0 runners: where the CPU goes.

    .venv/bin/python bench/concurrency.py [--sizes 100,300] [--sets 10] [--job-seconds 60]
        [--runs 3] [--profiles zero,realistic] [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from _report import command_line, run_scope
from _system import (
    PROFILES,
    REALISTIC,
    ApiServerProcess,
    BenchSystem,
    apply_profile,
    header,
    percentile,
    proc_cpu,
    runner_pods,
    say,
)
from _system import workdir as make_workdir

from scaleset.demo.system import SCALE_SET_NAME
from scaleset.embedded.actions.model import JobState
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET

RESULTS = Path(__file__).parent / "results"
TARGET_P95 = None
"""The issue names no number for queue time; the table reports it (and the peak) as measured."""


@dataclass(frozen=True)
class Run:
    size: int
    queue_times: list[float]
    to_scale_set: list[float]
    """queued → assigned to the scale set (the listener's message exists)."""
    to_runner: list[float]
    """assigned to the scale set → assigned to a runner (a runner was created and polled)."""
    to_start: list[float]
    """assigned to a runner → started."""
    peak_busy: int
    all_started: float
    """Seconds from queueing to the last job's start."""
    drained: float
    """Seconds from queueing to every set back at 0 runner pods."""
    cpu_controller: float
    cpu_apiserver: float
    cpu_bench: float


def _peak(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(f, -1) for _, f in intervals])
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def _bench_cpu() -> float:
    times = os.times()
    return times.user + times.system


async def _one(args: argparse.Namespace, size: int, profile: str, work: Path) -> Run:
    per_set = size // args.sets
    api = ApiServerProcess(work)
    try:
        system = BenchSystem(work, api, min_runners=0, max_runners=per_set, grace=5.0)
        await system.start()
        apply_profile(system, api, profile)
        assert system.client is not None
        assert system.fake is not None
        assert system.controller is not None
        control = system.fake.control
        names = [SCALE_SET_NAME] + [f"{SCALE_SET_NAME}-{i}" for i in range(2, args.sets + 1)]
        try:
            for name in names[1:]:
                document = yaml.safe_load(system.manifest())
                document["metadata"]["name"] = name
                await system.client.create(AUTOSCALING_RUNNER_SET, document)
            # every scale set registered and listening before the burst
            deadline = time.monotonic() + 180
            while len([s for s in control.snapshot().sessions]) < args.sets:
                if time.monotonic() > deadline:
                    raise TimeoutError("not every listener has a session after 180 s")
                await asyncio.sleep(0.2)
            say(f"  {args.sets} listeners have sessions; queueing {size} jobs")
            cpu = (proc_cpu(system.controller.pid), proc_cpu(api.process.pid), _bench_cpu())
            started = time.monotonic()
            requests = [
                control.queue_job([name], duration_seconds=args.job_seconds)
                for _ in range(per_set)
                for name in names
            ]
            deadline = started + args.job_seconds * 3 + 300
            while True:
                snapshot = control.snapshot()
                jobs = [snapshot.job(r) for r in requests]
                done = sum(1 for j in jobs if j.state == JobState.COMPLETED)
                if done == len(jobs):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{done}/{len(jobs)} jobs finished in time")
                await asyncio.sleep(0.5)
            while await runner_pods(system):
                if time.monotonic() > deadline:
                    raise TimeoutError("runner pods left after every job finished")
                await asyncio.sleep(0.5)
            drained = time.monotonic() - started
            cpu_after = (proc_cpu(system.controller.pid), proc_cpu(api.process.pid), _bench_cpu())
        finally:
            await system.stop()
    finally:
        api.stop()
    waits = [j.start_time - j.queue_time for j in jobs if j.start_time is not None]
    first_queue = min(j.queue_time for j in jobs)
    spans = [(j.start_time, j.finish_time) for j in jobs if j.start_time and j.finish_time]

    def gaps(first: str, second: str) -> list[float]:
        out = []
        for job in jobs:
            a, b = getattr(job, first), getattr(job, second)
            if a is not None and b is not None:
                out.append(b - a)
        return out

    return Run(
        size=size,
        queue_times=waits,
        to_scale_set=gaps("queue_time", "scale_set_assign_time"),
        to_runner=gaps("scale_set_assign_time", "runner_assign_time"),
        to_start=gaps("runner_assign_time", "start_time"),
        peak_busy=_peak(spans),
        all_started=max(s for s, _ in spans) - first_queue,
        drained=drained,
        cpu_controller=cpu_after[0] - cpu[0],
        cpu_apiserver=cpu_after[1] - cpu[1],
        cpu_bench=cpu_after[2] - cpu[2],
    )


def _cell(values: list[float], fmt: str) -> tuple[str, str]:
    return (
        f"{statistics.median(values):{fmt}}",
        f"{min(values):{fmt}}–{max(values):{fmt}}",
    )


def _table(runs: dict[str, list[Run]], args: argparse.Namespace) -> str:
    lines = [
        "# Concurrency scale: busy runners across scale sets at once",
        "",
        "Written by `bench/concurrency.py` (issue 19, item 10). The demo system with the",
        "controller manager and the embedded API server each in a process of its own (the",
        "demo's controller settings: client QPS 200, burst 400); the fake GitHub, simulated",
        f"kubelet and runners and the {args.sets} listeners in the benchmark's process. All N jobs",
        f"({args.job_seconds:g} s each) are queued at once, N / {args.sets} per scale set",
        "(minRunners 0, maxRunners N / sets). Queue time is the fake service's ground truth,",
        "job queued → job started on a runner. CPU seconds from the queueing until every job",
        "finished and every set is back at 0 runner pods. Profiles: zero added latency;",
        f"realistic = {REALISTIC}.",
        "",
        *header(args.command, args.scope, load_at_start=args.load_at_start),
        f"- runs: {args.runs} per size, each on a fresh system",
        "",
        "| measure | " + " | ".join(f"{s}: median | min–max" for s in runs) + " |",
        "| --- |" + " ---: | ---: |" * len(runs),
    ]
    measures: list[tuple[str, str, object]] = [
        ("queue time p50 (s)", ".2f", lambda r: statistics.median(r.queue_times)),
        ("queue time p95 (s)", ".2f", lambda r: percentile(r.queue_times, 0.95)),
        ("queue time max (s)", ".2f", lambda r: max(r.queue_times)),
        (
            "— queued → assigned to the scale set, p95 (s)",
            ".2f",
            lambda r: percentile(r.to_scale_set, 0.95),
        ),
        (
            "— scale set → assigned to a runner, p95 (s)",
            ".2f",
            lambda r: percentile(r.to_runner, 0.95),
        ),
        ("— runner assigned → job started, p95 (s)", ".2f", lambda r: percentile(r.to_start, 0.95)),
        ("peak concurrent busy runners", ".0f", lambda r: float(r.peak_busy)),
        ("queueing → last job started (s)", ".1f", lambda r: r.all_started),
        ("queueing → all sets back at 0 pods (s)", ".1f", lambda r: r.drained),
        ("controller CPU (s)", ".1f", lambda r: r.cpu_controller),
        ("controller CPU per runner (ms)", ".0f", lambda r: r.cpu_controller / r.size * 1000),
        ("API server CPU (s)", ".1f", lambda r: r.cpu_apiserver),
        ("bench process CPU: fake GitHub, kubelet, runners, listeners (s)", ".1f", None),
    ]
    for name, fmt, get in measures:
        cells = []
        for size_runs in runs.values():
            values = [(get(r) if callable(get) else r.cpu_bench) for r in size_runs]
            cells += list(_cell(values, fmt))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [""]
    for label, size_runs in runs.items():
        size = size_runs[0].size
        peak = min(r.peak_busy for r in size_runs)
        concurrent = f"all {size}" if peak == size else f"only {peak} of {size}"
        lines.append(f"- {label}: at the peak, {concurrent} jobs ran at the same time.")
    return "\n".join(lines) + "\n"


async def _main(args: argparse.Namespace) -> int:
    runs: dict[str, list[Run]] = {}
    for profile in args.profiles:
        for size in args.sizes:
            for run in range(args.runs):
                label = f"{profile}, N = {size}"
                say(f"[{label}, run {run + 1}/{args.runs}] starting a fresh system")
                with make_workdir(f"concurrency-{size}") as work:
                    result = await _one(args, size, profile, work)
                runs.setdefault(label, []).append(result)
                say(
                    f"[{label}, run {run + 1}/{args.runs}] queue time p95 "
                    f"{percentile(result.queue_times, 0.95):.2f} s, peak busy "
                    f"{result.peak_busy}, controller CPU {result.cpu_controller:.1f} s"
                )
    text = _table(runs, args)
    out = args.output or RESULTS / ("concurrency-quick.md" if args.quick else "concurrency.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    say(f"written to {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,300", help="concurrent jobs, comma-separated")
    parser.add_argument("--sets", type=int, default=10, help="AutoscalingRunnerSets")
    parser.add_argument("--job-seconds", type=float, default=60.0, help="each job's duration")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (median reported)")
    parser.add_argument("--profiles", default=",".join(PROFILES), help="zero and/or realistic")
    parser.add_argument("--quick", action="store_true", help="6 jobs on 2 sets, 3 s jobs, 1 run")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    args.scope = run_scope(parser, argv)
    args.command = command_line("bench/concurrency.py", argv)
    args.load_at_start = os.getloadavg()[0]
    if args.quick:
        args.sizes, args.sets, args.job_seconds, args.runs = "6", 2, 3.0, 1
    args.sizes = [int(s) for s in str(args.sizes).split(",") if s.strip()]
    args.profiles = [p for p in str(args.profiles).split(",") if p]
    if not args.profiles or any(p not in PROFILES for p in args.profiles):
        parser.error(f"--profiles: a comma-separated subset of {','.join(PROFILES)}")
    if args.sets < 1 or args.runs < 1 or any(s < args.sets for s in args.sizes):
        parser.error("--sets and --runs must be >= 1, every size >= --sets")
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
