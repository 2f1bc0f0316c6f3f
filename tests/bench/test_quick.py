"""Smoke test of the benchmarks (issue 19): each ``bench/<name>.py --quick`` runs to the end.

Every benchmark is started as CI and a developer start it, ``python bench/<name>.py --quick
--output <tmp>/<name>.md``, in its own process (the benchmarks pin themselves to cores and start
their own embedded API server). The test checks that it exits 0 and wrote its Markdown table,
with the header that makes a result comparable: the machine line (arch, cores, Python, load),
the date, the exact command, and the scope line saying it is a partial run. Numbers are not
checked: the quick configurations are too small to mean anything, and the machine is shared.
The whole set takes about 90 s on two cores.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = (
    "api_cost",
    "apiserver_throughput",
    "kube_informer",
    "kube_request_cpu",
    "ers_scaleup",
    "listener_jobstarted",
    "listener_drain",
    "message_to_pod",
    "controller_memory",
    "idle_cost",
    "heal_time",
    "concurrency",
    "scaleup",
    "simulate",
    "start_profile",
)
TIMEOUT = 150.0
MACHINE = re.compile(r"^- machine: \S+, \d+ cores, Python 3\.\d+\.\d+, load", re.MULTILINE)
COMMAND = re.compile(r"^- command: `\.venv/bin/python bench/(\w+)\.py --quick\b", re.MULTILINE)
DATE = re.compile(r"^- date: \d{4}-\d\d-\d\d \d\d:\d\d UTC", re.MULTILINE)
PARTIAL = re.compile(r"^- scope: \*\*partial run\*\*: `--quick`", re.MULTILINE)
SEPARATOR = re.compile(r"^\| -+:? \|( -+:? \|)+$", re.MULTILINE)


def table_rows(text: str) -> list[str]:
    """The data rows of the first Markdown table in ``text`` (after its separator line)."""
    separator = SEPARATOR.search(text)
    if separator is None:
        return []
    rows = []
    for line in text[separator.end() :].lstrip("\n").splitlines():
        if not line.startswith("| "):
            break
        rows.append(line)
    return rows


def test_table_rows_reads_a_markdown_table() -> None:
    text = "# t\n\n| a | b |\n| --- | ---: |\n| x | 1 |\n| y | 2 |\n\nafter\n| z | 3 |\n"
    assert table_rows(text) == ["| x | 1 |", "| y | 2 |"]
    assert table_rows("| a | b |\n| x | 1 |\n") == []


@pytest.mark.timeout(TIMEOUT + 30)
@pytest.mark.parametrize("name", BENCHMARKS)
def test_quick_benchmark_writes_its_table(name: str, tmp_path: Path) -> None:
    output = tmp_path / f"{name}.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{name}.py"), "--quick", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}; stderr tail:\n{done.stderr[-3000:]}"
    assert output.is_file(), f"no table at {output}"
    text = output.read_text()
    assert MACHINE.search(text), f"no machine line (arch, cores, Python, load):\n{text[:1500]}"
    assert DATE.search(text), f"no date line:\n{text[:1500]}"
    command = COMMAND.search(text)
    assert command is not None, f"no exact --quick command line:\n{text[:1500]}"
    assert command.group(1) == name
    assert PARTIAL.search(text), f"a --quick run must say it is partial:\n{text[:1500]}"
    rows = table_rows(text)
    assert rows, f"no Markdown table row:\n{text[:3000]}"
    assert all(row.endswith(" |") for row in rows)
