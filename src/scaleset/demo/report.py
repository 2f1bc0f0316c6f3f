"""The demo's end-of-run report: figures from ground truth, as text and as a self-contained page.

``Sample`` is one point of the timeline (runners by L0 state, queue depth, jobs done), taken
while the run goes on. ``Report`` holds the figures the issue asks for; ``render_text`` prints
them, ``render_html`` writes a page with an inline SVG timeline of runners by state and queue
depth and a bar per job for its wait — no script, no server, no network. ``render_seed_table``
is the multi-seed summary (``--seeds N``): one row of figures per seed. The soak's report
also says where the time of each zombie past the bound went (``hops.hop_summary``) and splits
lost job events into those GitHub dropped and ours.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scaleset.demo.hops import LostEvent, ZombieHops, hop_summary
from scaleset.demo.truth import Violation

STATES = ("starting", "idle", "busy", "terminal", "deleting")
COLOURS = {
    "starting": "#f0ad4e",
    "idle": "#5bc0de",
    "busy": "#5cb85c",
    "terminal": "#777777",
    "deleting": "#d9534f",
    "queued": "#337ab7",
}


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
    """A self-contained page: figures, a timeline of runners by state and queue depth, waits."""
    text = html.escape(render_text(report))
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>scaleset demo, seed {report.seed}</title>"
        "<style>body{font-family:sans-serif;margin:2em;max-width:72em}"
        "pre{background:#f6f6f6;padding:1em}h2{margin-top:1.5em}"
        ".legend span{display:inline-block;margin-right:1em}"
        ".legend i{display:inline-block;width:1em;height:1em;margin-right:.3em;"
        "vertical-align:middle}</style></head><body>"
        f"<h1>scaleset demo — seed {report.seed}</h1>"
        f"<pre>{text}</pre>"
        "<h2>Runners by state and queue depth</h2>"
        f"{_legend()}{_timeline_svg(report.samples)}"
        "<h2>Each job's wait (queued → started)</h2>"
        f"{_waits_svg(report.waits)}"
        "</body></html>\n"
    )


def _legend() -> str:
    items = "".join(
        f"<span><i style='background:{colour}'></i>{name}</span>"
        for name, colour in COLOURS.items()
    )
    return f"<p class='legend'>{items}</p>"


def _timeline_svg(samples: Sequence[Sample], width: int = 900, height: int = 260) -> str:
    if not samples:
        return "<p>(no samples)</p>"
    end = max(s.at for s in samples) or 1.0
    top = max(max(sum(s.states.values()) for s in samples), max(s.queued for s in samples), 1)

    def x_of(at: float) -> float:
        return 40 + (width - 50) * at / end

    def y_of(count: float) -> float:
        return height - 20 - (height - 30) * count / top

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"]
    parts.append(
        f"<line x1='40' y1='{height - 20}' x2='{width - 10}' y2='{height - 20}' stroke='#999'/>"
    )
    parts.append(f"<text x='4' y='14' font-size='11'>{top}</text>")
    parts.append(f"<text x='{width - 60}' y='{height - 4}' font-size='11'>{end:.0f}s</text>")
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
                f"<polygon points='{forward} {back}' fill='{COLOURS[state]}' opacity='0.8'/>"
            )
        below = upper
    queue = " ".join(f"{x_of(s.at):.1f},{y_of(s.queued):.1f}" for s in samples)
    parts.append(
        f"<polyline points='{queue}' fill='none' stroke='{COLOURS['queued']}' stroke-width='2'/>"
    )
    parts.append("</svg>")
    return "".join(parts)


def _waits_svg(waits: Sequence[JobWait], width: int = 900) -> str:
    if not waits:
        return "<p>(no jobs)</p>"
    bar = 6
    height = 20 + bar * len(waits)
    end = max((w.queued_at + (w.wait or 0.0)) for w in waits) or 1.0
    scale = (width - 50) / end
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"]
    for row, wait in enumerate(sorted(waits, key=lambda w: w.queued_at)):
        y = 10 + row * bar
        length = max(1.0, (wait.wait or 0.0) * scale)
        colour = COLOURS["queued"] if wait.wait is not None else COLOURS["deleting"]
        title = html.escape(
            f"job {wait.index}: waited {wait.wait:.1f}s, {wait.result}"
            if wait.wait is not None
            else f"job {wait.index}: never started"
        )
        parts.append(
            f"<rect x='{40 + wait.queued_at * scale:.1f}' y='{y}' width='{length:.1f}' "
            f"height='{bar - 1}' fill='{colour}'><title>{title}</title></rect>"
        )
    parts.append("</svg>")
    return "".join(parts)
