"""The listener benchmark's prose (``bench/listener_jobstarted.py``): "where the time goes" is
generated from the table's own rows, and the API server's processes are found for the CPU row."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import listener_jobstarted as bench  # bench/ is a directory of scripts, not a package

from scaleset.devtools.procs import ProcessRecord, record_for, write_record

DEFAULTS = "batch of 50 JobStarted, **defaults** (watch cache, 16 runners at once)"


def rows(p99: str, own: str, server: str) -> list[tuple[str, str, str]]:
    return [
        ("zero", f"{DEFAULTS}: **p99**", f"**{p99}**"),
        ("zero", f"{DEFAULTS}: CPU of this process per JobStarted (listener + fake GitHub)", own),
        ("zero", f"{DEFAULTS}: {bench.SERVER_CPU_ROW}", server),
    ]


def lines(table: list[tuple[str, str, str]], *, pinned: bool) -> str:
    (line,) = [
        x for x in bench.where_time_goes(table, 50, 2, pinned=pinned) if x.startswith("- zero")
    ]
    return line


def test_cpu_above_the_goal_on_every_core_says_the_goal_needs_less_cpu() -> None:
    table = rows("93.6 ms", "0.9 ms", "2.1 ms (kube-apiserver 1.6 ms, etcd 0.5 ms)")
    line = lines(table, pinned=False)
    # 45 ms + 105 ms of CPU shared by two cores: at least 75 ms, above the goal
    assert "API server on any of the 2 cores, this CPU takes at least 75 ms" in line
    assert "(kube-apiserver 1.6 ms, etcd 0.5 ms)" in line
    assert "goal cannot be met by waiting less" in line
    assert "most of it the API server's" in line


def test_cpu_below_the_goal_says_the_rest_is_waiting() -> None:
    table = rows("32.0 ms", "0.4 ms", "0.3 ms (embedded API server)")
    line = lines(table, pinned=True)
    # each on a core of its own: the larger part, 20 ms, bounds the batch
    assert "each on a core of its own, this CPU takes at least 20 ms" in line
    assert "the rest of the p99 is waiting" in line


def test_one_thread_bounds_the_batch_however_many_cores() -> None:
    table = rows("56.4 ms", "1.1 ms", "0.2 ms (kube-apiserver 0.2 ms, etcd 0.0 ms)")
    line = lines(table, pinned=False)
    # 55 ms on this process's one thread outweighs (55 + 10) / 2
    assert "this CPU takes at least 55 ms" in line
    assert "this process's first" in line


def test_a_profile_with_added_latency_is_not_weighed_against_the_goal() -> None:
    table = [
        ("realistic", name, value) for _, name, value in rows("87.2 ms", "0.8 ms", "0.6 ms (x)")
    ]
    (line,) = [
        x for x in bench.where_time_goes(table, 50, 2, pinned=True) if x.startswith("- realistic")
    ]
    assert "this CPU takes at least 40 ms" in line
    assert "the goal is stated for zero added latency" in line
    assert "within the goal" not in line


def test_without_the_server_cpu_only_this_process_is_weighed() -> None:
    table = rows("93.6 ms", "0.9 ms", "not measured (no process of it known)")
    line = lines(table, pinned=False)
    assert "this CPU takes" not in line
    assert "waiting on the API server" in line


def test_the_real_harness_processes_are_found_beside_its_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    assert bench.server_processes(str(kubeconfig), None) == {}
    executable = Path(f"/proc/{os.getpid()}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
    alive = record_for(os.getpid(), executable)
    write_record(tmp_path / "kube-apiserver.pid", alive)
    write_record(
        tmp_path / "etcd.pid",
        ProcessRecord(pid=alive.pid, start_ticks=alive.start_ticks + 1, executable=executable),
    )
    # etcd's record names a process that is not alive (another start time): left out
    assert bench.server_processes(str(kubeconfig), None) == {"kube-apiserver": os.getpid()}


def test_the_embedded_server_is_its_own_process() -> None:
    assert bench.server_processes(None, 4321) == {"embedded API server": 4321}
    assert bench.server_processes(None, None) == {}
