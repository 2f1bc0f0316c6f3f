"""What ``scaleset simulate`` prints and writes: per-policy figures, a terminal table, and a
self-contained HTML page (inline SVG, no scripts, no external assets) with the queue and runner
curves of every policy over the trace.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from scaleset.simulate.model import PolicyOutcome, Sample


@dataclass(frozen=True)
class Figures:
    """One policy's row of the table."""

    policy: str
    jobs: int
    not_started: int
    p50: float
    p95: float
    max: float
    runner_minutes: float
    idle_minutes: float
    jit_configs: int


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in 0..1) of ``values``; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def figures(outcome: PolicyOutcome) -> Figures:
    times = outcome.queue_times
    return Figures(
        policy=outcome.policy,
        jobs=len(times),
        not_started=outcome.not_started,
        p50=percentile(times, 0.50),
        p95=percentile(times, 0.95),
        max=max(times, default=0.0),
        runner_minutes=outcome.runner_seconds / 60.0,
        idle_minutes=outcome.idle_seconds / 60.0,
        jit_configs=outcome.jit_configs,
    )


HEADER = (
    "policy",
    "jobs",
    "queue p50 s",
    "p95 s",
    "max s",
    "runner-min",
    "idle runner-min",
    "JIT configs",
)


def rows(table: Sequence[Figures]) -> list[tuple[str, ...]]:
    return [
        (
            f.policy,
            f"{f.jobs}" + (f" (+{f.not_started} not started)" if f.not_started else ""),
            f"{f.p50:.1f}",
            f"{f.p95:.1f}",
            f"{f.max:.1f}",
            f"{f.runner_minutes:,.0f}",
            f"{f.idle_minutes:,.0f}",
            f"{f.jit_configs}",
        )
        for f in table
    ]


def text_table(table: Sequence[Figures]) -> str:
    """The figures as an aligned text table (numbers right-aligned)."""
    body = rows(table)
    widths = [max(len(row[i]) for row in [HEADER, *body]) for i in range(len(HEADER))]

    def line(row: Sequence[str]) -> str:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        return "  ".join(cells).rstrip()

    return "\n".join([line(HEADER), line(["-" * w for w in widths]), *map(line, body)]) + "\n"


def markdown_table(table: Sequence[Figures]) -> str:
    """The figures as a Markdown table."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in rows(table)]
    return "\n".join(lines) + "\n"


# --- HTML --------------------------------------------------------------------------------------

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
_WIDTH, _HEIGHT, _PAD = 960, 220, 40


def _series(samples: Sequence[Sample], value: str, span: float, step: float) -> list[float]:
    """``value`` of the samples as a step function: its highest value within each ``step``
    seconds (so a spike shorter than a step still shows)."""
    points: list[float] = []
    index = 0
    current = 0.0
    bucket_end = step
    while bucket_end - step <= span:
        highest = current
        while index < len(samples) and samples[index].at < bucket_end:
            current = float(getattr(samples[index], value))
            highest = max(highest, current)
            index += 1
        points.append(highest)
        bucket_end += step
    return points


def _chart(
    title: str, lines: Sequence[tuple[str, list[float]]], start: datetime, span: float
) -> str:
    top = max((max(values, default=0.0) for _, values in lines), default=0.0) or 1.0
    plot_w, plot_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD
    parts = [
        f"<figure><figcaption>{html.escape(title)}</figcaption>"
        f'<svg viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" height="{_HEIGHT}" '
        'xmlns="http://www.w3.org/2000/svg" role="img">',
        f'<rect x="{_PAD}" y="{_PAD}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#ccc"/>',
    ]
    for tick in range(5):
        value = top * tick / 4
        y = _PAD + plot_h - plot_h * tick / 4
        parts.append(
            f'<text x="{_PAD - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">'
            f"{value:.0f}</text>"
        )
    hours = int(span // 3600)
    for hour in range(0, hours + 1, max(1, hours // 12)):
        x = _PAD + plot_w * hour * 3600 / span
        label = (start + timedelta(hours=hour)).strftime("%H:%M")
        parts.append(
            f'<text x="{x:.1f}" y="{_HEIGHT - _PAD + 14}" text-anchor="middle" '
            f'font-size="10">{label}</text>'
        )
    for number, (name, values) in enumerate(lines):
        colour = _COLOURS[number % len(_COLOURS)]
        count = max(len(values) - 1, 1)
        points = " ".join(
            f"{_PAD + plot_w * i / count:.1f},{_PAD + plot_h - plot_h * v / top:.1f}"
            for i, v in enumerate(values)
        )
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.2" points="{points}"/>'
        )
        parts.append(
            f'<text x="{_PAD}" y="{_HEIGHT - _PAD + 32 + 14 * number}" font-size="11" '
            f'fill="{colour}">&#9644; {html.escape(name)}</text>'
        )
    parts.append("</svg></figure>")
    return "".join(parts)


def html_page(
    outcomes: Sequence[PolicyOutcome],
    start: datetime,
    notes: Sequence[str] = (),
    step: float = 60.0,
) -> str:
    """A self-contained HTML page: the table and, per measure, one chart with every policy."""
    table = [figures(o) for o in outcomes]
    span = max((o.span for o in outcomes), default=0.0)
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows(table)
    )
    charts = []
    for title, value in (
        ("Jobs waiting for a runner", "queued"),
        ("Runners online with no job (idle)", "idle"),
        ("Runners starting (JIT config, pod start)", "starting"),
        ("Runners busy", "busy"),
        ("Desired runners (the listener's patch)", "desired"),
    ):
        lines = [(o.policy, _series(o.samples, value, span, step)) for o in outcomes]
        charts.append(_chart(title, lines, start, span))
    paragraphs = "".join(f"<p>{html.escape(note)}</p>" for note in notes)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>scaleset simulate</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}figure{margin:1.5em 0}"
        "figcaption{font-weight:bold}</style></head><body>"
        f"<h1>scaleset simulate</h1><p>Trace from {html.escape(start.isoformat())}, "
        f"{span / 3600:.1f} hours; curves: the highest value in each {step:.0f} s.</p>"
        f"<table><tr>{head}</tr>{body}</table>{paragraphs}{''.join(charts)}</body></html>\n"
    )
