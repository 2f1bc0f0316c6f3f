"""Import GitHub's workflow jobs (the REST API's list-jobs answers, saved to files) as a trace.

Each file holds what ``GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs`` (or
``.../attempts/{n}/jobs``) answers: ``{"total_count": N, "jobs": [...]}``; a plain JSON list of
job objects, or a list of such answers, is read too. Of each job: ``created_at`` is when it
was queued, ``completed_at - started_at`` how long it ran, ``labels`` its ``runs-on`` labels.
A job that never ran (no ``started_at`` or ``completed_at``, e.g. skipped or cancelled while
queued) is left out and counted; a job seen twice (same ``id``) is taken once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scaleset.api import parse_kube_time
from scaleset.simulate.trace import Job, TraceError


@dataclass
class Imported:
    """The jobs found, and how many were left out (by reason)."""

    jobs: list[Job] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def import_files(paths: Iterable[Path]) -> Imported:
    """The jobs of every file (sorted by queue time)."""
    result = Imported()
    seen: set[object] = set()
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise TraceError(f"{path}: {error.strerror or error}") from None
        except json.JSONDecodeError as error:
            raise TraceError(f"{path}: not JSON ({error.msg}, line {error.lineno})") from None
        for index, item in enumerate(_job_objects(data, str(path))):
            job_id = item.get("id")
            if job_id is not None:
                if job_id in seen:
                    result.skip("seen twice")
                    continue
                seen.add(job_id)
            job = _job(item, f"{path}, job [{index}]", result)
            if job is not None:
                result.jobs.append(job)
    result.jobs.sort()
    return result


def _job_objects(data: Any, source: str) -> Iterator[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("jobs"), list):
        items: list[Any] = data["jobs"]
    elif isinstance(data, list):
        items = []
        for entry in data:
            if isinstance(entry, dict) and isinstance(entry.get("jobs"), list):
                items.extend(entry["jobs"])
            else:
                items.append(entry)
    else:
        raise TraceError(f"{source}: expected a list-jobs answer ({{'jobs': [...]}}) or a list")
    for item in items:
        if not isinstance(item, dict):
            raise TraceError(f"{source}: a job is an object")
        yield item


def _job(item: dict[str, Any], where: str, result: Imported) -> Job | None:
    if item.get("started_at") is None or item.get("completed_at") is None:
        result.skip("never ran")
        return None
    try:
        created = parse_kube_time(item.get("created_at"))
        started = parse_kube_time(item["started_at"])
        completed = parse_kube_time(item["completed_at"])
    except ValueError as error:
        raise TraceError(f"{where}: {error}") from None
    labels = item.get("labels") or []
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise TraceError(f"{where}: labels: a list of strings")
    duration = (completed - started).total_seconds()
    if duration < 0:
        result.skip("completed before it started")
        return None
    return Job(created, duration, tuple(labels))
