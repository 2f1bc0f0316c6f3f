"""Pid files that remember *which* process they mean, so ``stop`` only ever signals its own.

A record holds the pid, the kernel's start time of that process (``/proc/<pid>/stat`` field 22)
and its executable path. A pid that was reused by another program fails the identity check and is
left alone. A process caught between its ``exec`` and the kernel setting up its new arguments
(``/proc/<pid>/cmdline`` reads empty for that moment, right after ``Popen`` returns) is named by
its start time alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessRecord:
    """Identity of a process the harness started."""

    pid: int
    start_ticks: int
    executable: str


PROC = Path("/proc")


def _stat_fields(pid: int, proc: Path = PROC) -> list[str] | None:
    try:
        raw = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # the command name is in parentheses and may contain spaces: split after the last ')'
    return raw[raw.rindex(")") + 2 :].split()


def record_for(pid: int, executable: str) -> ProcessRecord:
    """The identity of live process ``pid`` started from ``executable``."""
    fields = _stat_fields(pid)
    if fields is None:
        raise ProcessLookupError(pid)
    return ProcessRecord(pid=pid, start_ticks=int(fields[19]), executable=executable)


def is_alive(record: ProcessRecord, proc: Path = PROC) -> bool:
    """True when ``record.pid`` is still the same, running (not zombie) process.

    ``proc``: where the process table is mounted (tests give a directory of their own)."""
    fields = _stat_fields(record.pid, proc)
    if fields is None or fields[0] in ("Z", "X") or int(fields[19]) != record.start_ticks:
        return False
    try:
        cmdline = (proc / str(record.pid) / "cmdline").read_bytes()
    except OSError:
        return False
    if not cmdline:  # exec under way: the start time matched, so this is the recorded process
        return True
    return cmdline.split(b"\0", 1)[0].decode(errors="replace") == record.executable


def write_record(path: Path, record: ProcessRecord) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(record)))
    tmp.replace(path)


def read_record(path: Path) -> ProcessRecord | None:
    """The record in ``path``; ``None`` if missing or unreadable."""
    try:
        data = json.loads(path.read_text())
        return ProcessRecord(
            pid=int(data["pid"]),
            start_ticks=int(data["start_ticks"]),
            executable=str(data["executable"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _reap(pid: int, bound_s: float = 5.0) -> None:
    """Collect ``pid``'s exit status if it is our own child (in-process use); a no-op for the
    processes another ``start`` left behind. A dying process may need a moment to turn zombie."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            reaped, _ = os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            return
        if reaped == pid:
            return
        time.sleep(0.01)


def terminate(record: ProcessRecord, grace_s: float = 15.0) -> bool:
    """SIGTERM the recorded process if it is still ours, SIGKILL after ``grace_s``.

    Returns True if a live process was signalled."""
    if not is_alive(record):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not is_alive(record):
            _reap(record.pid)  # our own child (in-process use) would stay a zombie otherwise
            return True
        time.sleep(0.05)
    if is_alive(record):
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while is_alive(record) and time.monotonic() < deadline:
            time.sleep(0.05)
        _reap(record.pid)
    return True
