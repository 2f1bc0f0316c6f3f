"""The request-CPU benchmark's prose (``bench/kube_request_cpu.py``) is generated from its rows:
each sentence compares the medians of the rows it names, the TLS one included."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import kube_request_cpu as bench  # bench/ is a directory of scripts, not a package

NAMES = (
    "production",
    "production over TLS",
    "httpx2, relative path",
    "httpx2, whole URL",
    "httpcore2",
    "aiohttp",
)


def written(tmp_path: Path, medians: tuple[float, ...]) -> str:
    rows = [
        (name, [median - 10, median, median + 10], 2.0)
        for name, median in zip(NAMES, medians, strict=True)
    ]
    out = tmp_path / "table.md"
    bench.write(rows, 1000, 3, out, "`bench/kube_request_cpu.py`", "full run", 0.1)
    return out.read_text()


def test_each_row_is_a_line_of_the_table_with_its_median_and_range(tmp_path: Path) -> None:
    text = written(tmp_path, (460.0, 560.0, 530.0, 410.0, 300.0, 170.0))
    assert "| production over TLS | 560 µs (550–570) | 2.0 |" in text


def test_the_tls_sentence_is_the_difference_of_the_two_production_rows(tmp_path: Path) -> None:
    text = written(tmp_path, (460.0, 560.0, 530.0, 410.0, 300.0, 170.0))
    assert (
        "Over TLS, scaleset's whole path costs 100 µs more than over plain HTTP "
        "(560 µs against 460 µs: TLS is 18% of it)."
    ) in text


def test_a_tls_row_below_the_plain_one_is_said_as_it_is(tmp_path: Path) -> None:
    text = written(tmp_path, (460.0, 450.0, 530.0, 410.0, 300.0, 170.0))
    assert "costs 10 µs less than over plain HTTP (450 µs against 460 µs)." in text
