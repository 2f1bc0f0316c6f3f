"""``scaleset simulate``: read or make a trace, run each policy over it, report side by side.

``SimulateOptions`` is what the command was told; ``build_policies`` turns it into policies
(refusing bad windows with the field named, as the API does); ``simulate`` runs them, one
process per policy when ``workers`` > 1 (each run is independent and CPU-bound).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import partial
from pathlib import Path

from scaleset.api import warm_windows
from scaleset.api.warm_windows import WarmWindow
from scaleset.simulate import github_import, synthetic, trace
from scaleset.simulate.model import Parameters, PolicyOutcome, Simulation
from scaleset.simulate.policies import ArcRule, Headroom, HeadroomSettings, Policy, Windows
from scaleset.simulate.trace import Job

POLICY_KINDS = ("arc", "windows", "headroom", "windows+headroom")


class OptionError(ValueError):
    """A bad option; the message names it."""


@dataclass(frozen=True)
class SimulateOptions:
    trace: Path | None = None
    github_jobs: tuple[Path, ...] = ()
    synthetic_seed: int | None = None
    synthetic_day: date = synthetic.DEFAULT_DAY
    synthetic_zone: str = "UTC"
    labels: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    min_runners: int = 0
    max_runners: int = 100
    windows: tuple[str, ...] = ()
    headroom: HeadroomSettings = field(default_factory=HeadroomSettings)
    parameters: Parameters = field(default_factory=Parameters)
    workers: int = 1


def parse_windows(texts: Sequence[str], max_runners: int) -> tuple[WarmWindow, ...]:
    """The ``--window`` options as windows, checked as ``spec.warmWindows`` is."""
    _, windows, problem = warm_windows.parse_texts(texts, "--window", max_runners=max_runners)
    if problem is not None:
        raise OptionError(problem)
    return windows


def build_policies(options: SimulateOptions) -> list[Callable[[], Policy]]:
    """A fresh-policy factory per policy to compare, in the order asked (picklable, for the
    worker processes)."""
    if options.min_runners < 0 or options.max_runners < max(options.min_runners, 1):
        raise OptionError("--min-runners must be 0 or more and at most --max-runners (>= 1)")
    windows = parse_windows(options.windows, options.max_runners)
    kinds = options.policies or (("arc", "windows", "headroom") if windows else ("arc", "headroom"))
    unknown = [kind for kind in kinds if kind.split(":")[0] not in POLICY_KINDS]
    if unknown:
        raise OptionError(
            f"--policy {unknown[0]!r}: one of {', '.join(POLICY_KINDS)} (arc:N for minRunners N)"
        )
    factories: list[Callable[[], Policy]] = []
    low, high, headroom = options.min_runners, options.max_runners, options.headroom
    for kind in kinds:
        name, _, argument = kind.partition(":")
        if name == "arc":
            minimum = _int(argument, kind) if argument else low
            factories.append(partial(ArcRule, minimum, high))
        elif not windows and name in ("windows", "windows+headroom"):
            raise OptionError(f"--policy {kind}: give the windows with --window")
        elif name == "windows":
            factories.append(partial(Windows, windows, low, high))
        elif name == "headroom":
            factories.append(partial(Headroom, low, high, headroom))
        else:
            factories.append(partial(Headroom, low, high, headroom, windows=windows))
    return factories


def _int(text: str, kind: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"--policy {kind}: the minimum after ':' is a number") from None
    if value < 0:
        raise OptionError(f"--policy {kind}: the minimum must be 0 or more")
    return value


def load_jobs(options: SimulateOptions) -> tuple[list[Job], list[str]]:
    """The trace's jobs (after the label filter) and notes on how they were found."""
    sources = sum(
        (options.trace is not None, bool(options.github_jobs), options.synthetic_seed is not None)
    )
    if sources != 1:
        raise OptionError("give exactly one of --trace, --github-jobs, --synthetic-weekday")
    notes: list[str] = []
    if options.trace is not None:
        jobs = trace.read_trace(options.trace)
        notes.append(f"trace {options.trace}: {len(jobs)} jobs")
    elif options.github_jobs:
        imported = github_import.import_files(options.github_jobs)
        jobs = imported.jobs
        skipped = ", ".join(f"{count} {why}" for why, count in sorted(imported.skipped.items()))
        notes.append(
            f"GitHub jobs from {len(options.github_jobs)} file(s): {len(jobs)} jobs"
            + (f" (left out: {skipped})" if skipped else "")
        )
    else:
        seed = options.synthetic_seed or 0
        jobs = synthetic.weekday(seed, options.synthetic_day, options.synthetic_zone)
        notes.append(
            f"synthetic weekday {options.synthetic_day} ({options.synthetic_zone}), seed {seed}: "
            f"{len(jobs)} jobs"
        )
    selected = trace.select(jobs, options.labels)
    if options.labels:
        notes.append(f"{len(selected)} of them run on labels {' '.join(options.labels)}")
    if not selected:
        raise OptionError("the trace has no job to simulate")
    return selected, notes


def span(jobs: Sequence[Job]) -> tuple[datetime, datetime]:
    """The simulated time: from the hour of the first job to half an hour after the last job
    would end had it started at once (the same span for every policy)."""
    first = min(job.queued_at for job in jobs)
    start = first.replace(minute=0, second=0, microsecond=0)
    end = max(job.queued_at + timedelta(seconds=job.duration) for job in jobs)
    return start, end + timedelta(minutes=30)


def _run_one(
    jobs: Sequence[Job], factory: Callable[[], Policy], parameters: Parameters
) -> PolicyOutcome:
    start, end = span(jobs)
    return Simulation(jobs, factory(), parameters, start=start, end=end).run()


def simulate(
    jobs: Sequence[Job],
    factories: Sequence[Callable[[], Policy]],
    parameters: Parameters,
    workers: int = 1,
) -> list[PolicyOutcome]:
    """Every policy over ``jobs``, in order (``workers`` > 1: that many processes)."""
    if workers <= 1 or len(factories) <= 1:
        return [_run_one(jobs, factory, parameters) for factory in factories]
    with ProcessPoolExecutor(max_workers=min(workers, len(factories))) as pool:
        futures = [pool.submit(_run_one, jobs, factory, parameters) for factory in factories]
        return [future.result() for future in futures]


def run_command(
    options: SimulateOptions,
    *,
    echo: Callable[[str], None],
    html_path: Path | None = None,
    trace_out: Path | None = None,
) -> int:
    """The command: load, simulate, print the table (and write the page and the trace)."""
    from scaleset.simulate import report

    factories = build_policies(options)
    jobs, notes = load_jobs(options)
    if trace_out is not None:
        text = trace.to_csv(jobs) if trace_out.suffix.lower() == ".csv" else trace.to_json(jobs)
        trace_out.write_text(text, encoding="utf-8")
        notes.append(f"trace written to {trace_out}")
    start, end = span(jobs)
    p = options.parameters
    notes.append(
        f"simulated {start.isoformat()} to {end.isoformat()}; pod start {p.pod_start:g} s, "
        f"node scale-up {p.node_scale_up:g} s"
        + (f" ({p.runners_per_node} runners a node)" if p.runners_per_node else " (no node model)")
        + f", JIT ceiling {p.jit_rate:g}/s, maxRunners {options.max_runners}"
    )
    outcomes = simulate(jobs, factories, p, options.workers)
    for note in notes:
        echo(note)
    echo("")
    echo(report.text_table([report.figures(o) for o in outcomes]).rstrip("\n"))
    if html_path is not None:
        html_path.write_text(report.html_page(outcomes, start, notes), encoding="utf-8")
        echo(f"\nHTML report: {html_path}")
    return 0
