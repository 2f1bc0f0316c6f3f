"""``scaleset simulate`` as a user meets it: --help explains the policies and exit codes, a small
trace is simulated and tabled (and the HTML page and the trace written), bad options and bad
windows exit 2 with one line naming the option or field."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.test_cli import run_cli

TRACE = """queued_at,duration,labels
2027-01-13T08:00:00Z,120,self-hosted linux
2027-01-13T08:00:30Z,60,self-hosted linux
2027-01-13T08:10:00Z,300,gpu
"""


def test_help_explains_itself() -> None:
    result = run_cli("simulate", "--help")
    assert result.returncode == 0
    for needle in (
        "--trace",
        "--github-jobs",
        "--synthetic-weekday",
        "--window",
        "--pod-start",
        "ARC's rule",
        "headroom",
        "docs/simulate.md",
        "Exit codes",
    ):
        assert needle in result.stdout


def test_a_trace_is_simulated_and_tabled(tmp_path: Path) -> None:
    (tmp_path / "trace.csv").write_text(TRACE)
    result = run_cli(
        "simulate",
        "--trace",
        str(tmp_path / "trace.csv"),
        "--labels",
        "self-hosted linux",
        "--window",
        "Wed 07:30-09:00 UTC min=2",
        "--max-runners",
        "5",
        "--workers",
        "1",
        "--html",
        str(tmp_path / "report.html"),
        "--write-trace",
        str(tmp_path / "used.json"),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "2 of them run on labels self-hosted linux" in result.stdout
    policies = ("arc min=0", "windows 07:30-09:00 min=2", "headroom min=0 +1x90s of the last 10min")
    rows = {
        name: line[len(name) :].split()
        for line in lines
        for name in policies
        if line.startswith(name + " ")
    }
    assert set(rows) == set(policies)
    jobs, p50, p95 = rows["windows 07:30-09:00 min=2"][:3]
    assert (jobs, p50, p95) == ("2", "2.0", "2.0"), "both jobs found a warm runner"
    assert float(rows["arc min=0"][2]) > 60, "with no warm runner both waited for a pod"
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert '"queued_at": "2027-01-13T08:00:00Z"' in (tmp_path / "used.json").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "exactly one of --trace, --github-jobs, --synthetic-weekday"),
        (["--synthetic-weekday", "--policy", "magic"], "--policy 'magic'"),
        (["--synthetic-weekday", "--policy", "windows"], "give the windows with --window"),
        (["--synthetic-weekday", "--window", "Mon 08:00-09:00 Mars/Base min=1"], "timeZone"),
        (
            [
                "--synthetic-weekday",
                "--window",
                "08:00-12:00 UTC min=1",
                "--window",
                "Mon 11:00-13:00 UTC min=2",
            ],
            "--window[1]: overlaps",
        ),
        (
            ["--synthetic-weekday", "--window", "08:00-09:00 UTC min=9", "--max-runners", "4"],
            "minRunners: must not be greater",
        ),
        (["--synthetic-weekday", "--window", "weekdays"], "expected DAYS HH:MM-HH:MM"),
        (["--synthetic-weekday", "--zone", "Nowhere/Town"], "--zone"),
        (["--synthetic-weekday", "--min-runners", "9", "--max-runners", "3"], "--min-runners"),
        (["--trace", "/nonexistent/trace.csv"], "/nonexistent/trace.csv"),
    ],
)
def test_bad_options_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = run_cli("simulate", *args)
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr
