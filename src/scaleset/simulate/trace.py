"""Job traces: what ``scaleset simulate`` replays, read from and written to CSV or JSON.

A trace is a list of jobs, each with the instant it was queued (UTC), how long it runs once a
runner has it (seconds), and its ``runs-on`` labels. Queue time is not part of a trace: it is
what the simulation decides.

CSV (a header row, then one job per row)::

    queued_at,duration,labels
    2027-01-13T08:00:04Z,312.5,self-hosted linux
    2027-01-13T08:00:09Z,95,self-hosted linux

JSON: a list of objects ``{"queued_at": "2027-01-13T08:00:04Z", "duration": 312.5, "labels":
["self-hosted", "linux"]}``. Timestamps are RFC 3339 with ``Z`` or an offset; labels in CSV are
separated by spaces. A bad row is refused naming its line (CSV) or index (JSON).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from scaleset.api import format_kube_time, parse_kube_time

CSV_COLUMNS = ("queued_at", "duration", "labels")


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and the row or field."""


@dataclass(frozen=True, order=True)
class Job:
    """One job of a trace."""

    queued_at: datetime
    """When the job was queued (aware, UTC)."""
    duration: float
    """Seconds the job runs once a runner has picked it up."""
    labels: tuple[str, ...] = ()


def read_trace(path: Path) -> list[Job]:
    """The jobs of a CSV (``.csv``) or JSON (anything else) trace file, sorted by queue time."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TraceError(f"{path}: {error.strerror or error}") from None
    if path.suffix.lower() == ".csv":
        return parse_csv(text, str(path))
    return parse_json(text, str(path))


def parse_csv(text: str, source: str = "trace") -> list[Job]:
    """Jobs from CSV text with the columns ``queued_at,duration,labels``."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in CSV_COLUMNS[:2] if c not in (reader.fieldnames or [])]
    if missing:
        raise TraceError(f"{source}: the header needs the columns {', '.join(CSV_COLUMNS)}")
    jobs = []
    for row in reader:
        where = f"{source}, line {reader.line_num}"
        jobs.append(_job(row.get("queued_at"), row.get("duration"), row.get("labels"), where))
    return sorted(jobs)


def parse_json(text: str, source: str = "trace") -> list[Job]:
    """Jobs from a JSON list of ``{"queued_at", "duration", "labels"}`` objects."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise TraceError(f"{source}: not JSON ({error.msg}, line {error.lineno})") from None
    if not isinstance(data, list):
        raise TraceError(f"{source}: a trace is a JSON list of jobs")
    jobs = []
    for index, item in enumerate(data):
        where = f"{source}, job [{index}]"
        if not isinstance(item, dict):
            raise TraceError(f"{where}: a job is an object")
        jobs.append(_job(item.get("queued_at"), item.get("duration"), item.get("labels"), where))
    return sorted(jobs)


def _job(queued: Any, duration: Any, labels: Any, where: str) -> Job:
    try:
        queued_at = parse_kube_time(queued)
    except ValueError as error:
        raise TraceError(f"{where}: queued_at: {error}") from None
    try:
        seconds = float(duration)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: duration: a number of seconds is needed") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise TraceError(f"{where}: duration: must be 0 or more seconds")
    return Job(queued_at, seconds, _labels(labels, where))


def _labels(value: Any, where: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise TraceError(f"{where}: labels: a list of strings (CSV: separated by spaces)")


def to_csv(jobs: Iterable[Job]) -> str:
    """The CSV form of ``jobs`` (what ``parse_csv`` reads back)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for job in jobs:
        writer.writerow(
            (format_kube_time(job.queued_at), _number(job.duration), " ".join(job.labels))
        )
    return out.getvalue()


def to_json(jobs: Iterable[Job]) -> str:
    """The JSON form of ``jobs`` (what ``parse_json`` reads back)."""
    items = [
        {
            "queued_at": format_kube_time(job.queued_at),
            "duration": job.duration,
            "labels": list(job.labels),
        }
        for job in jobs
    ]
    return json.dumps(items, indent=1) + "\n"


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def select(jobs: Sequence[Job], labels: Sequence[str]) -> list[Job]:
    """The jobs a scale set with ``labels`` takes: those whose labels it all has (every job
    when ``labels`` is empty)."""
    if not labels:
        return list(jobs)
    wanted = set(labels)
    return [job for job in jobs if set(job.labels) <= wanted]
