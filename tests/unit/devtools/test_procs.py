"""Pid records remember which process they mean: stop never signals a reused pid."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from scaleset.devtools.procs import is_alive, read_record, record_for, terminate, write_record


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.DEVNULL
    )
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def test_record_identifies_a_live_process(child: subprocess.Popen[bytes]) -> None:
    record = record_for(child.pid, sys.executable)

    assert is_alive(record)


def test_record_round_trips_through_its_file(
    tmp_path: Path, child: subprocess.Popen[bytes]
) -> None:
    record = record_for(child.pid, sys.executable)
    write_record(tmp_path / "x.pid", record)

    assert read_record(tmp_path / "x.pid") == record
    assert read_record(tmp_path / "missing.pid") is None


def test_unreadable_record_is_none(tmp_path: Path) -> None:
    (tmp_path / "x.pid").write_text("12")

    assert read_record(tmp_path / "x.pid") is None


def test_terminate_stops_the_recorded_process(child: subprocess.Popen[bytes]) -> None:
    record = record_for(child.pid, sys.executable)

    assert terminate(record, grace_s=10.0)

    assert not is_alive(record)
    assert not Path(f"/proc/{child.pid}").exists()


def test_reused_pid_is_not_ours_and_is_left_alone(child: subprocess.Popen[bytes]) -> None:
    other_start = replace(record_for(child.pid, sys.executable), start_ticks=1)
    other_program = replace(record_for(child.pid, sys.executable), executable="/usr/bin/etcd")

    assert not is_alive(other_start)
    assert not terminate(other_start)
    assert not terminate(other_program)
    assert child.poll() is None
