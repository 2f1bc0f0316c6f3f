"""The demo's end-of-run report: figures from ground truth, as text and as a self-contained page.

``Sample`` is one point of the timeline (runners by L0 state, queue depth, jobs done), taken
while the run goes on; ``RunnerLane`` is one runner process's life from ground truth (created →
idle → busy → ended, ``runner_lanes``). ``Report`` holds the run's figures; ``render_text``
prints them, ``render_html`` writes a page with inline SVG charts with labelled axes — runners by
state and queue depth, one lane per runner, each job's wait — the table of invariants, and the
fake service's assumptions folded away: no script, no server, no network. ``render_seed_table``
is the multi-seed summary (``--seeds N``): one row of figures per seed. The soak's report
also says where the time of each zombie past the bound went (``hops.hop_summary``) and splits
lost job events into those GitHub dropped and ours.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from scaleset.demo.hops import LostEvent, ZombieHops, hop_summary
from scaleset.demo.truth import RunnerProcess, Violation
from scaleset.embedded.runner import RunnerPhase

STATES = ("starting", "idle", "busy", "terminal", "deleting")
COLOURS = {
    "starting": "#f0ad4e",
    "idle": "#5bc0de",
    "busy": "#5cb85c",
    "terminal": "#777777",
    "deleting": "#d9534f",
    "queued": "#337ab7",
}


INVARIANTS = {
    "no-zombie-over-bound": "no runner lives on unable to work (hung after its job, registration "
    "gone, config reused) past the grace period plus one pass (L4, L5)",
    "no-busy-runner-deleted": "no runner's pod is stopped while it runs a job, except by an "
    "injected fault (L3)",
    "no-resurrection": "no EphemeralRunner leaves a terminal phase (L2)",
    "no-jit-reuse": "no JIT config is started by two runner processes (L5)",
    "no-lost-job-event": "every JobStarted and JobCompleted lands on its living runner within "
    "the bound (L7)",
    "jobs-finished": "at the end every job completed or was cancelled",
    "no-leaked-registration": "at the end every registration has its runner (L6)",
    "runners-converge": "at the end the runners are back at the minimum (L3, L6)",
}
"""The invariants the demo checks on ground truth, with what each one means."""

LANE_STATES = {
    RunnerPhase.CONNECTING: "starting",
    RunnerPhase.OUTDATED: "starting",
    RunnerPhase.INVALID_CONFIG: "starting",
    RunnerPhase.LISTENING: "idle",
    RunnerPhase.JOB_RECEIVED: "busy",
    RunnerPhase.JOB_STARTED: "busy",
    RunnerPhase.JOB_COMPLETED: "after job",
    RunnerPhase.JOB_CANCELED: "after job",
    RunnerPhase.HANGING: "stuck",
    RunnerPhase.SESSION_CONFLICT: "stuck",
    RunnerPhase.REGISTRATION_DELETED: "stuck",
    RunnerPhase.STOPPING: "stopping",
}
"""The lane state a runner process is in after reporting each phase (exited and crashed end it)."""
LANE_COLOURS = {
    "starting": "#f0ad4e",
    "idle": "#5bc0de",
    "busy": "#5cb85c",
    "after job": "#999999",
    "stuck": "#d9534f",
    "stopping": "#cccccc",
}


@dataclass(frozen=True)
class LaneSegment:
    state: str
    start: float
    end: float


@dataclass(frozen=True)
class RunnerLane:
    """One runner process's life: its states over time (seconds since the run started)."""

    name: str
    segments: tuple[LaneSegment, ...]
    ended: float | None
    """When the process ended (``None``: still running at the end of the run)."""


def runner_lanes(processes: Iterable[RunnerProcess], *, now: float) -> list[RunnerLane]:
    """A lane per runner process, in the order they started, from the phases it reported."""
    lanes: list[RunnerLane] = []
    for process in sorted(processes, key=lambda p: (p.started_at, p.pod)):
        segments: list[LaneSegment] = []
        end = process.ended_at if process.ended_at is not None else now
        history = process.history or [(process.started_at, RunnerPhase.CONNECTING)]
        for index, (at, phase) in enumerate(history):
            state = LANE_STATES.get(phase)
            until = history[index + 1][0] if index + 1 < len(history) else end
            if state is None or until <= at:
                continue
            if segments and segments[-1].state == state:
                segments[-1] = LaneSegment(state, segments[-1].start, until)
            else:
                segments.append(LaneSegment(state, at, until))
        lanes.append(RunnerLane(process.pod, tuple(segments), process.ended_at))
    return lanes


@dataclass(frozen=True)
class Sample:
    at: float
    """Seconds since the run started."""
    states: dict[str, int]
    queued: int
    done: int


@dataclass(frozen=True)
class JobWait:
    index: str
    queued_at: float
    """Seconds since the run started."""
    wait: float | None
    """Seconds from queued to started; ``None`` if it never started."""
    result: str


@dataclass
class Report:
    seed: int
    jobs_planned: int
    jobs_succeeded: int
    jobs_failed: int
    jobs_cancelled: int
    waits: list[JobWait]
    runner_seconds: float
    busy_seconds: float
    api_writes: int
    zombie_seconds: float
    max_zombie_age: float
    leaked_registrations: int
    wall_seconds: float
    violations: list[Violation]
    assumptions: list[str]
    samples: list[Sample] = field(default_factory=list)
    writes_by_resource: dict[str, int] = field(default_factory=dict)
    """``verb resource`` -> count, for the writes counted in ``api_writes``."""
    chaos: str = "none"
    zombie_bound: float = 0.0
    """Grace + one pass: what a zombie's judged age is held to."""
    max_judged_zombie_age: float = 0.0
    """The oldest zombie minus the blackouts it lived through."""
    api_failures_injected: int = 0
    """API server requests the soak's failure rate answered with 409/500/503."""
    setup_seconds: float = 0.0
    """Real seconds from the start of the process to the first job (system start-up)."""
    crossings: list[ZombieHops] = field(default_factory=list)
    """Zombies whose judged age crossed the bound, hop by hop."""
    hung: list[ZombieHops] = field(default_factory=list)
    """Every runner that hung after its job (the L4 path), hop by hop."""
    lost_events: list[LostEvent] = field(default_factory=list)
    """Job events missing on their living runner past the bound, ours and GitHub's."""
    lanes: list[RunnerLane] = field(default_factory=list)
    """Every runner process's life (``runner_lanes``), for the page's lanes."""

    @property
    def lost_ours(self) -> int:
        """Lost job events that GitHub did deliver or keep: ours to lose."""
        return sum(1 for e in self.lost_events if not e.github_dropped)

    @property
    def lost_by_github(self) -> int:
        """Lost job events GitHub dropped before any listener got them (session expired)."""
        return sum(1 for e in self.lost_events if e.github_dropped)

    @property
    def lost_delivered_never_applied(self) -> int:
        """Events delivered to the listener that never showed on their runner: a bug."""
        return sum(1 for e in self.lost_events if e.delivered and e.landed_at is None)

    @property
    def ok(self) -> bool:
        return not self.violations

    def broken(self, invariant: str) -> int:
        """How many subjects broke ``invariant``."""
        return sum(1 for v in self.violations if v.invariant == invariant)

    @property
    def jobs_completed(self) -> int:
        return self.jobs_succeeded + self.jobs_failed + self.jobs_cancelled

    @property
    def max_queue_time(self) -> float:
        waits = self.queue_percentiles()
        return waits[2] if waits is not None else 0.0

    def queue_percentiles(self) -> tuple[float, float, float] | None:
        waits = sorted(w.wait for w in self.waits if w.wait is not None)
        if not waits:
            return None
        return (_percentile(waits, 50), _percentile(waits, 95), waits[-1])

    @property
    def writes_per_job(self) -> float:
        done = self.jobs_succeeded + self.jobs_failed
        return self.api_writes / done if done else float(self.api_writes)


def _percentile(ordered: Sequence[float], pct: float) -> float:
    if len(ordered) == 1:
        return ordered[0]
    quantiles = statistics.quantiles(ordered, n=100, method="inclusive")
    return quantiles[min(98, max(0, round(pct) - 1))]


def render_text(report: Report) -> str:
    """The report as the terminal shows it at the end of a run."""
    lines = [f"scaleset demo report (seed {report.seed}, {report.wall_seconds:.1f}s)"]
    lines.append(
        f"  jobs:               {report.jobs_succeeded} succeeded, {report.jobs_failed} failed, "
        f"{report.jobs_cancelled} cancelled of {report.jobs_planned}"
    )
    waits = report.queue_percentiles()
    if waits is not None:
        lines.append(
            f"  queue time:         p50 {waits[0]:.1f}s  p95 {waits[1]:.1f}s  max {waits[2]:.1f}s"
        )
    used, busy = report.runner_seconds, report.busy_seconds
    share = f" ({busy / used:.0%} busy)" if used else ""
    lines.append(f"  runner-seconds:     {used:.0f} used, {busy:.0f} busy{share}")
    if report.api_writes < 0:
        lines.append("  API writes:         not counted (an external API server has no counters)")
    else:
        lines.append(
            f"  API writes:         {report.api_writes} ({report.writes_per_job:.1f} per job, "
            "Events and the node's own writes excluded)"
        )
        top = sorted(report.writes_by_resource.items(), key=lambda item: (-item[1], item[0]))
        if top:
            lines.append("    most: " + ", ".join(f"{name} {count}" for name, count in top[:5]))
    lines.append(
        f"  zombies:            {report.zombie_seconds:.1f} zombie-seconds, "
        f"oldest {report.max_zombie_age:.1f}s"
    )
    lines.append(f"  leaked registrations: {report.leaked_registrations}")
    if report.chaos == "soak":
        lines.append(
            f"  soak:               judged zombie age {report.max_judged_zombie_age:.1f}s "
            f"(bound {report.zombie_bound:.0f}s), resurrected {report.broken('no-resurrection')}, "
            f"busy deleted {report.broken('no-busy-runner-deleted')}, JIT configs used twice "
            f"{report.broken('no-jit-reuse')}, lost job events "
            f"{report.lost_ours} ours ({report.lost_delivered_never_applied} delivered and never "
            f"applied) + {report.lost_by_github} dropped by GitHub, API failures injected "
            f"{report.api_failures_injected}"
        )
        lines.extend(
            f"  {line}"
            for line in hop_summary(report.crossings, title="zombies past the bound, by hop")
        )
        lines.extend(
            f"  {line}" for line in hop_summary(report.hung, title="runners hung after their job")
        )
    if report.assumptions:
        lines.append("  fake-service assumptions this run relied on:")
        lines.extend(f"    - {text}" for text in report.assumptions)
    if report.violations:
        lines.append("  BROKEN INVARIANTS:")
        lines.extend(f"    - {v.invariant} at {v.at:.1f}s: {v.detail}" for v in report.violations)
    else:
        lines.append("  invariants: all held (sampled throughout the run)")
    return "\n".join(lines)


SEED_COLUMNS = (
    ("seed", "seed"),
    ("jobs", "jobs done/planned"),
    ("failed", "failed"),
    ("zsec", "zombie-s"),
    ("zmax", "max zombie age s (judged)"),
    ("leak", "leaked regs"),
    ("res", "resurrected"),
    ("busy", "busy deleted"),
    ("jit", "JIT used twice"),
    ("lost", "lost job events ours (GitHub dropped)"),
    ("queue", "max queue s"),
    ("apif", "API faults"),
    ("wall", "wall s"),
    ("ok", "invariants"),
)


def seed_row(report: Report, wall: float) -> dict[str, str]:
    """One seed's figures as the table shows them."""
    return {
        "seed": str(report.seed),
        "jobs": f"{report.jobs_completed}/{report.jobs_planned}",
        "failed": str(report.jobs_failed),
        "zsec": f"{report.zombie_seconds:.1f}",
        "zmax": f"{report.max_zombie_age:.1f} ({report.max_judged_zombie_age:.1f})",
        "leak": str(report.leaked_registrations),
        "res": str(report.broken("no-resurrection")),
        "busy": str(report.broken("no-busy-runner-deleted")),
        "jit": str(report.broken("no-jit-reuse")),
        "lost": f"{report.lost_ours} ({report.lost_by_github})",
        "queue": f"{report.max_queue_time:.1f}",
        "apif": str(report.api_failures_injected),
        "wall": f"{wall:.0f}",
        "ok": "held"
        if report.ok
        else "BROKEN: " + ", ".join(sorted({v.invariant for v in report.violations})),
    }


def seed_detail(report: Report) -> dict[str, list[dict[str, object]]]:
    """A seed's zombie hops and lost job events as JSON (summed up over all seeds)."""
    return {
        "crossings": [hops.to_json() for hops in report.crossings],
        "hung": [hops.to_json() for hops in report.hung],
        "lost": [event.to_json() for event in report.lost_events],
    }


def render_seeds_detail(details: Sequence[Mapping[str, Sequence[Mapping[str, Any]]]]) -> str:
    """Over all seeds: where the time of the zombies past the bound went, hop by hop, and the
    lost job events split into GitHub's and ours."""
    crossings = [ZombieHops.from_json(d) for detail in details for d in detail.get("crossings", [])]
    hung = [ZombieHops.from_json(d) for detail in details for d in detail.get("hung", [])]
    lost = [LostEvent.from_json(d) for detail in details for d in detail.get("lost", [])]
    lines = hop_summary(crossings, title="zombies past the bound over all seeds, by hop")
    lines += hop_summary(hung, title="runners hung after their job over all seeds")
    ours = [e for e in lost if not e.github_dropped]
    never = [e for e in ours if e.delivered and e.landed_at is None]
    lines.append(
        f"lost job events: {len(lost) - len(ours)} dropped by GitHub, {len(ours)} ours "
        f"({sum(1 for e in ours if e.landed_at is not None)} applied late, "
        f"{len(never)} delivered and never applied)"
    )
    return "\n".join(lines)


def render_seed_table(rows: Sequence[dict[str, str]]) -> str:
    """The multi-seed summary as a Markdown table (readable on a terminal as it is)."""
    header = "| " + " | ".join(title for _, title in SEED_COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in SEED_COLUMNS) + "|"
    body = ["| " + " | ".join(row.get(key, "") for key, _ in SEED_COLUMNS) + " |" for row in rows]
    return "\n".join([header, rule, *body])


def render_html(report: Report) -> str:
    """A self-contained page: the figures, runners by state and queue depth, a lane per runner,
    each job's wait, the invariants, and the fake service's assumptions folded away."""
    text = html.escape(render_text(replace(report, assumptions=[])))
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>scaleset demo, seed {report.seed}</title>"
        "<style>body{font-family:sans-serif;margin:2em;max-width:72em}"
        "pre{background:#f6f6f6;padding:1em}h2{margin-top:1.5em}"
        ".legend span{display:inline-block;margin-right:1em}"
        ".legend i{display:inline-block;width:1em;height:1em;margin-right:.3em;"
        "vertical-align:middle}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
        "tr.broken td{background:#f8d7da}tr.held td:nth-child(3){color:#2d7d2d}"
        "svg text{font-size:11px}</style></head><body>"
        f"<h1>scaleset demo — seed {report.seed}</h1>"
        f"<pre>{text}</pre>"
        "<h2>Invariants</h2>"
        f"{_invariant_table(report)}"
        "<h2>Runners by state and queue depth</h2>"
        f"{_legend(COLOURS)}{_timeline_svg(report.samples)}"
        "<h2>Each runner's life</h2>"
        f"{_legend(LANE_COLOURS)}{_lanes_svg(report.lanes, report.wall_seconds)}"
        "<h2>Each job's wait (queued → started)</h2>"
        f"{_waits_svg(report.waits)}"
        f"{_assumptions(report.assumptions)}"
        "</body></html>\n"
    )


def _invariant_table(report: Report) -> str:
    rows = []
    for name, meaning in INVARIANTS.items():
        broken = [v for v in report.violations if v.invariant == name]
        if broken:
            first = min(broken, key=lambda v: v.at)
            result = (
                f"broken ({len(broken)}): first at {first.at:.1f}s, {html.escape(first.detail)}"
            )
        else:
            result = "held"
        state = "broken" if broken else "held"
        rows.append(
            f"<tr class='invariant {state}'><td>{name}</td><td>{html.escape(meaning)}</td>"
            f"<td>{result}</td></tr>"
        )
    return (
        "<table><tr><th>invariant</th><th>what it checks</th><th>result</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _assumptions(assumptions: Sequence[str]) -> str:
    if not assumptions:
        return ""
    items = "".join(f"<li>{html.escape(text)}</li>" for text in assumptions)
    return (
        "<details><summary>The fake GitHub service's assumptions this run relied on "
        f"({len(assumptions)}): behaviour no public source pins down</summary>"
        f"<ul>{items}</ul></details>"
    )


def _legend(colours: Mapping[str, str]) -> str:
    items = "".join(
        f"<span><i style='background:{colour}'></i>{name}</span>"
        for name, colour in colours.items()
    )
    return f"<p class='legend'>{items}</p>"


LEFT = 60
"""Pixels left of the plot area (the y axis and its labels)."""


def _ticks(end: float, count: int = 6) -> list[float]:
    """Round tick values from 0 to ``end``."""
    if end <= 0:
        return [0.0]
    raw = end / count
    step = min(
        (c for c in (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1200, 3600) if c >= raw),
        default=raw,
    )
    return [float(step * i) for i in range(int(end // step) + 1)]


def _x_axis(x_of: Any, end: float, y: float, width: int, left: int = LEFT) -> list[str]:
    """The time axis at height ``y``: ticks, their seconds, and the axis title."""
    parts = [f"<line x1='{left}' y1='{y}' x2='{width - 10}' y2='{y}' stroke='#999'/>"]
    for tick in _ticks(end):
        x = x_of(tick)
        parts.append(f"<line x1='{x:.1f}' y1='{y}' x2='{x:.1f}' y2='{y + 4}' stroke='#999'/>")
        parts.append(f"<text x='{x:.1f}' y='{y + 15}' text-anchor='middle'>{tick:g}</text>")
    parts.append(
        f"<text x='{(left + width) / 2:.0f}' y='{y + 30}' text-anchor='middle'>"
        "seconds since the run started</text>"
    )
    return parts


def _timeline_svg(samples: Sequence[Sample], width: int = 900, height: int = 300) -> str:
    if not samples:
        return "<p>(no samples)</p>"
    end = max(s.at for s in samples) or 1.0
    top = max(max(sum(s.states.values()) for s in samples), max(s.queued for s in samples), 1)
    bottom = height - 40

    def x_of(at: float) -> float:
        return LEFT + (width - LEFT - 10) * at / end

    def y_of(count: float) -> float:
        return bottom - (bottom - 10) * count / top

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"]
    parts.append(f"<line x1='{LEFT}' y1='10' x2='{LEFT}' y2='{bottom}' stroke='#999'/>")
    for tick in _ticks(top, 4):
        y = y_of(tick)
        parts.append(f"<text x='{LEFT - 6}' y='{y + 4:.1f}' text-anchor='end'>{tick:g}</text>")
    parts.append(
        f"<text x='14' y='{bottom / 2:.0f}' text-anchor='middle' "
        f"transform='rotate(-90 14 {bottom / 2:.0f})'>runners / queued jobs</text>"
    )
    parts.extend(_x_axis(x_of, end, bottom, width))
    # Stacked areas: each state on top of the ones before it.
    below = [0] * len(samples)
    for state in STATES:
        upper = [b + s.states.get(state, 0) for b, s in zip(below, samples, strict=True)]
        if any(upper[i] != below[i] for i in range(len(samples))):
            forward = " ".join(
                f"{x_of(s.at):.1f},{y_of(u):.1f}" for s, u in zip(samples, upper, strict=True)
            )
            back = " ".join(
                f"{x_of(s.at):.1f},{y_of(b):.1f}"
                for s, b in reversed(list(zip(samples, below, strict=True)))
            )
            parts.append(
                f"<polygon points='{forward} {back}' fill='{COLOURS[state]}' opacity='0.8'>"
                f"<title>{state} runners</title></polygon>"
            )
        below = upper
    queue = " ".join(f"{x_of(s.at):.1f},{y_of(s.queued):.1f}" for s in samples)
    parts.append(
        f"<polyline points='{queue}' fill='none' stroke='{COLOURS['queued']}' stroke-width='2'>"
        "<title>queued jobs</title></polyline>"
    )
    parts.append("</svg>")
    return "".join(parts)


def _lanes_svg(lanes: Sequence[RunnerLane], wall: float, width: int = 900) -> str:
    if not lanes:
        return "<p>(no runner started)</p>"
    row, left = 14, 200
    bottom = 10 + row * len(lanes)
    end = max([wall, *(seg.end for lane in lanes for seg in lane.segments)]) or 1.0

    def x_of(at: float) -> float:
        return left + (width - left - 10) * at / end

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{bottom + 40}'>"]
    for index, lane in enumerate(lanes):
        y = 10 + index * row
        parts.append(f"<g class='lane'><text x='{left - 6}' y='{y + 10}' text-anchor='end'>")
        parts.append(f"{html.escape(lane.name[-30:])}</text>")
        for seg in lane.segments:
            span = max(1.0, x_of(seg.end) - x_of(seg.start))
            title = html.escape(f"{lane.name}: {seg.state} {seg.start:.1f}s → {seg.end:.1f}s")
            parts.append(
                f"<rect x='{x_of(seg.start):.1f}' y='{y}' width='{span:.1f}' height='{row - 3}' "
                f"fill='{LANE_COLOURS[seg.state]}'><title>{title}</title></rect>"
            )
        if lane.ended is not None:
            parts.append(
                f"<line x1='{x_of(lane.ended):.1f}' y1='{y}' x2='{x_of(lane.ended):.1f}' "
                f"y2='{y + row - 3}' stroke='#333'><title>ended {lane.ended:.1f}s</title></line>"
            )
        parts.append("</g>")
    parts.extend(_x_axis(x_of, end, bottom, width, left))
    parts.append("</svg>")
    return "".join(parts)


def _waits_svg(waits: Sequence[JobWait], width: int = 900) -> str:
    if not waits:
        return "<p>(no jobs)</p>"
    bar = 6
    bottom = 10 + bar * len(waits)
    end = max((w.queued_at + (w.wait or 0.0)) for w in waits) or 1.0

    def x_of(at: float) -> float:
        return LEFT + (width - LEFT - 10) * at / end

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{bottom + 40}'>"]
    parts.append(
        f"<text x='14' y='{bottom / 2:.0f}' text-anchor='middle' "
        f"transform='rotate(-90 14 {bottom / 2:.0f})'>jobs</text>"
    )
    for row, wait in enumerate(sorted(waits, key=lambda w: w.queued_at)):
        y = 10 + row * bar
        length = max(1.0, x_of(wait.queued_at + (wait.wait or 0.0)) - x_of(wait.queued_at))
        colour = COLOURS["queued"] if wait.wait is not None else COLOURS["deleting"]
        title = html.escape(
            f"job {wait.index}: waited {wait.wait:.1f}s, {wait.result}"
            if wait.wait is not None
            else f"job {wait.index}: never started"
        )
        parts.append(
            f"<rect x='{x_of(wait.queued_at):.1f}' y='{y}' width='{length:.1f}' "
            f"height='{bar - 1}' fill='{colour}'><title>{title}</title></rect>"
        )
    parts.extend(_x_axis(x_of, end, bottom, width))
    parts.append("</svg>")
    return "".join(parts)
