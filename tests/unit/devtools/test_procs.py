"""Pid records remember which process they mean: stop never signals a reused pid."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from scaleset.devtools.procs import (
    ProcessRecord,
    is_alive,
    read_record,
    record_for,
    terminate,
    write_record,
)


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


def _fake_proc(root: Path, pid: int, *, start_ticks: int, state: str, cmdline: bytes) -> None:
    entry = root / str(pid)
    entry.mkdir(parents=True)
    fields = [state] + ["0"] * 18 + [str(start_ticks)] + ["0"] * 10
    (entry / "stat").write_text(f"{pid} (python3) " + " ".join(fields) + "\n")
    (entry / "cmdline").write_bytes(cmdline)


def test_a_process_between_exec_and_its_new_arguments_is_still_ours(tmp_path: Path) -> None:
    # Popen returns once the child's exec has closed its close-on-exec pipe; the kernel sets the
    # new program's argument area a moment later, and /proc/<pid>/cmdline reads empty until then.
    # The start time already names the process: a record checked in that moment is still alive.
    record = ProcessRecord(pid=4242, start_ticks=777, executable="/usr/bin/etcd")
    _fake_proc(tmp_path, 4242, start_ticks=777, state="R", cmdline=b"")

    assert is_alive(record, proc=tmp_path)


def test_another_program_under_the_recorded_start_is_not_ours(tmp_path: Path) -> None:
    record = ProcessRecord(pid=4242, start_ticks=777, executable="/usr/bin/etcd")
    _fake_proc(tmp_path, 4242, start_ticks=777, state="S", cmdline=b"/usr/bin/other\0--x\0")

    assert not is_alive(record, proc=tmp_path)
    assert is_alive(replace(record, executable="/usr/bin/other"), proc=tmp_path)
