"""The header every result file starts with (``bench/_report.py``): a partial run says so, and
the command names no place on the machine."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import _report  # bench/ is a directory of scripts, not a package


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    made.add_argument("--runs", type=int, default=3)
    made.add_argument("--profiles", default=None)
    made.add_argument("--quick", action="store_true")
    made.add_argument("--output", type=Path, default=None)
    made.add_argument("--tracemalloc", type=Path, default=None)
    made.add_argument("--kubeconfig", default=None)
    return made


def test_the_defaults_are_the_full_run() -> None:
    assert _report.run_scope(parser(), []) == "full run (the script's defaults)"


def test_where_the_table_goes_does_not_make_a_run_partial() -> None:
    assert _report.run_scope(parser(), ["--output", "x.md"]) == "full run (the script's defaults)"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--quick"], ["`--quick`"]),
        (["--runs", "2"], ["`--runs 2` (full run: 3)"]),
        (["--runs", "2", "--profiles", "zero"], ["`--runs 2`", "`--profiles zero`"]),
    ],
)
def test_a_partial_run_says_so_and_names_what_differs(argv: list[str], named: list[str]) -> None:
    scope = _report.run_scope(parser(), argv)
    assert scope.startswith("**partial run**")
    for part in named:
        assert part in scope


def test_a_diagnosis_is_not_a_result() -> None:
    scope = _report.run_scope(parser(), ["--tracemalloc", "t"], diagnostics=("tracemalloc",))
    assert "not a result" in scope


def test_a_variant_chooses_the_table_and_keeps_the_run_full() -> None:
    scope = _report.run_scope(parser(), ["--kubeconfig", "k"], variants=("kubeconfig",))
    assert scope == "full run (the script's defaults, the table of `--kubeconfig`)"
    partial = _report.run_scope(
        parser(), ["--kubeconfig", "k", "--runs", "2"], variants=("kubeconfig",)
    )
    assert partial.startswith("**partial run**: `--runs 2`")
    assert "`--kubeconfig`" in partial


def test_an_option_not_named_a_variant_makes_the_run_partial() -> None:
    assert _report.run_scope(parser(), ["--kubeconfig", "k"]).startswith("**partial run**")


def test_the_command_hides_absolute_paths() -> None:
    line = _report.command_line(
        "bench/x.py", ["--kubeconfig", "/tmp/a/kubeconfig", "--output=/tmp/o.md", "--runs", "2"]
    )
    assert line == ".venv/bin/python bench/x.py --kubeconfig <path> --output=<path> --runs 2"
    assert "/tmp" not in line


def test_the_header_records_the_load_and_the_scope() -> None:
    lines = _report.header("cmd", "full run (the script's defaults)", load_at_start=0.0)
    text = "\n".join(lines)
    assert "load 0.0 at the start" in text
    assert "- command: `cmd`" in text
    assert "- scope: full run" in text
