"""Job traces: CSV and JSON read back what they wrote, a bad row is refused naming its line or
index, GitHub's list-jobs answers import as jobs (never-run jobs left out and counted), and the
synthetic weekday is the same for the same seed and has the shape it promises."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from scaleset.simulate import synthetic
from scaleset.simulate.github_import import import_files
from scaleset.simulate.trace import (
    Job,
    TraceError,
    parse_csv,
    parse_json,
    read_trace,
    select,
    to_csv,
    to_json,
)

JOBS = [
    Job(datetime(2027, 1, 13, 8, 0, 4, tzinfo=UTC), 312.5, ("self-hosted", "linux")),
    Job(datetime(2027, 1, 13, 8, 0, 9, tzinfo=UTC), 95.0, ("gpu",)),
    Job(datetime(2027, 1, 13, 9, 0, 0, tzinfo=UTC), 0.0, ()),
]


def test_csv_and_json_round_trip() -> None:
    assert parse_csv(to_csv(JOBS)) == JOBS
    assert parse_json(to_json(JOBS)) == JOBS
    assert to_csv(JOBS).splitlines()[:2] == [
        "queued_at,duration,labels",
        "2027-01-13T08:00:04Z,312.5,self-hosted linux",
    ]


def test_read_trace_picks_the_format_by_suffix_and_sorts(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(to_csv(reversed(JOBS)))
    (tmp_path / "t.json").write_text(to_json(reversed(JOBS)))
    assert read_trace(tmp_path / "t.csv") == JOBS
    assert read_trace(tmp_path / "t.json") == JOBS


def test_offsets_are_read_as_utc() -> None:
    (job,) = parse_csv("queued_at,duration,labels\n2027-01-13T09:00:04+01:00,5,x\n")
    assert job.queued_at == datetime(2027, 1, 13, 8, 0, 4, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("queued_at,labels\n", "the header needs the columns"),
        ("queued_at,duration\nyesterday,5\n", "line 2: queued_at"),
        ("queued_at,duration\n2027-01-13T08:00:00Z,soon\n", "line 2: duration"),
        ("queued_at,duration\n2027-01-13T08:00:00Z,-1\n", "must be 0 or more"),
        ("queued_at,duration\n2027-01-13T08:00:00,5\n", "no time zone"),
    ],
)
def test_a_bad_csv_row_names_its_line(text: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        parse_csv(text, "t.csv")


def test_a_bad_json_job_names_its_index() -> None:
    with pytest.raises(TraceError, match=r"job \[1\]: labels"):
        parse_json(
            json.dumps(
                [
                    {"queued_at": "2027-01-13T08:00:00Z", "duration": 1},
                    {"queued_at": "2027-01-13T08:00:00Z", "duration": 1, "labels": [1]},
                ]
            )
        )
    with pytest.raises(TraceError, match="a JSON list of jobs"):
        parse_json("{}")


def test_select_keeps_the_jobs_the_scale_set_takes() -> None:
    assert select(JOBS, ["self-hosted", "linux", "x64"]) == [JOBS[0], JOBS[2]]
    assert select(JOBS, []) == JOBS


def _gh_job(
    job_id: int, created: str, started: str | None, completed: str | None
) -> dict[str, Any]:
    return {
        "id": job_id,
        "status": "completed" if completed else "queued",
        "created_at": created,
        "started_at": started,
        "completed_at": completed,
        "labels": ["self-hosted", "linux"],
        "name": "build",
    }


def test_github_list_jobs_answers_import_as_jobs(tmp_path: Path) -> None:
    jobs = [
        _gh_job(1, "2027-01-13T08:00:00Z", "2027-01-13T08:01:10Z", "2027-01-13T08:05:10Z"),
        _gh_job(2, "2027-01-13T08:00:02Z", None, None),
        _gh_job(3, "2027-01-13T07:59:00Z", "2027-01-13T08:00:00Z", "2027-01-13T08:00:30Z"),
    ]
    first = {"total_count": 3, "jobs": jobs}
    second = [{"total_count": 1, "jobs": [jobs[0]]}]
    (tmp_path / "run1.json").write_text(json.dumps(first))
    (tmp_path / "run2.json").write_text(json.dumps(second))
    imported = import_files([tmp_path / "run1.json", tmp_path / "run2.json"])
    assert [(j.queued_at.minute, j.duration) for j in imported.jobs] == [(59, 30.0), (0, 240.0)]
    assert imported.jobs[0].labels == ("self-hosted", "linux")
    assert imported.skipped == {"never ran": 1, "seen twice": 1}


def test_github_import_refuses_what_is_not_a_list_jobs_answer(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"workflow_runs": []}')
    with pytest.raises(TraceError, match="list-jobs answer"):
        import_files([tmp_path / "bad.json"])


def test_the_synthetic_weekday_is_the_same_for_the_same_seed() -> None:
    assert synthetic.weekday(3) == synthetic.weekday(3)
    assert synthetic.weekday(3) != synthetic.weekday(4)


def test_the_synthetic_weekday_has_its_shape() -> None:
    jobs = synthetic.weekday(1)
    assert 1700 <= len(jobs) <= 2300
    by_hour = [0] * 24
    for job in jobs:
        by_hour[job.queued_at.hour] += 1
    assert sum(by_hour[9:17]) > 5 * sum(by_hour[19:24] + by_hour[0:2] + by_hour[3:7])
    assert by_hour[2] >= synthetic.NIGHTLY_JOBS, "the nightly burst"
    busiest_minute = max(
        sum(1 for job in jobs if job.queued_at.hour == h and job.queued_at.minute == m)
        for h in range(9, 17)
        for m in range(60)
    )
    assert busiest_minute >= 10, "a merge storm"
    assert all(0 < job.duration <= synthetic.MAX_DURATION for job in jobs)


def test_the_synthetic_weekday_follows_its_time_zone() -> None:
    utc = synthetic.weekday(1)
    berlin = synthetic.weekday(1, zone="Europe/Berlin")
    assert [j.duration for j in utc] == [j.duration for j in berlin]
    assert berlin[0].queued_at == utc[0].queued_at.replace(day=12, hour=23)
