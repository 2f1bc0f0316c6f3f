"""The controller manager in a process of its own, with an event-loop ticker beside it.

Run by ``bench/_system.py`` as ``python bench/_controller_child.py SAMPLES OPTIONS_JSON TICK``:
builds ``ControllerOptions`` from the JSON, runs ``manager_process.serve`` (exactly what ``scaleset
controller`` runs: leader election, the four controllers, their informers) and, on the same event
loop, a ticker that sleeps TICK seconds and measures how late it wakes. Every ``SAMPLE_EVERY`` it
appends one JSON line to SAMPLES: wall time, the largest lag in the interval, the loop thread's CPU
time during that late tick, the process's CPU seconds and its RSS. It imports nothing beyond what
the controller imports, so the RSS is the controller's own (plus the ticker's few objects).

With ``SCALESET_BENCH_TRACEMALLOC=DIR`` (``FRAMES`` frames per allocation from
``SCALESET_BENCH_TRACEMALLOC_FRAMES``, default 12) it traces allocations from before the first
import of scaleset, and each SIGUSR1 writes a tracemalloc snapshot to ``DIR/snapshot-N.bin``
(bench/controller_memory.py ``--tracemalloc``); the samples then carry the traced bytes and their
peak, and each time the traced bytes pass the last ``DIR/peak.bin`` by ``PEAK_STEP`` a new one is
written (what was alive at the highest point). SIGUSR2 writes the allocator's statistics
(``sys._debugmallocstats``) to the log. Tracing slows the process and adds its own
memory: its RSS is not comparable with an untraced run's.
"""

from __future__ import annotations

import os
import tracemalloc

TRACE_DIR = os.environ.get("SCALESET_BENCH_TRACEMALLOC", "")
if TRACE_DIR:
    tracemalloc.start(int(os.environ.get("SCALESET_BENCH_TRACEMALLOC_FRAMES", "12")))

import asyncio  # noqa: E402 - traced from here on
import json  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from scaleset import logs  # noqa: E402
from scaleset.controllers import manager_process  # noqa: E402

SAMPLE_EVERY = 0.25
"""How often a sample is appended (seconds)."""
PAGE = os.sysconf("SC_PAGE_SIZE")
PEAK_STEP = 8 * 1024 * 1024
"""Traced: a new ``peak.bin`` snapshot each time the traced bytes pass the last one's by this."""


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


async def _child(samples_path: Path, options_json: str, tick: float) -> int:
    raw = json.loads(options_json)
    raw["kubeconfig"] = Path(raw["kubeconfig"])
    raw["watch_namespaces"] = tuple(raw["watch_namespaces"])
    options = manager_process.ControllerOptions(**raw)
    manager_process.validate(options)
    logs.configure(options.log_level, "text")
    out = samples_path.open("a", buffering=1)
    loop = asyncio.get_running_loop()

    async def ticker() -> None:
        worst = worst_cpu = 0.0
        peak_taken = 0
        window_end = loop.time() + SAMPLE_EVERY
        while True:
            before, before_cpu = loop.time(), time.thread_time()
            await asyncio.sleep(tick)
            lag = loop.time() - before - tick
            if lag > worst:
                worst, worst_cpu = lag, time.thread_time() - before_cpu
            if loop.time() >= window_end:
                times = os.times()
                sample = {
                    "at": time.time(),
                    "lag": max(worst, 0.0),
                    "lag_cpu": worst_cpu,
                    "cpu": times.user + times.system,
                    "rss": _rss(),
                }
                if TRACE_DIR:
                    traced, traced_peak = tracemalloc.get_traced_memory()
                    sample["traced"], sample["traced_peak"] = traced, traced_peak
                    if traced > peak_taken + PEAK_STEP:
                        peak_taken = traced
                        tracemalloc.take_snapshot().dump(str(Path(TRACE_DIR) / "peak.bin"))
                out.write(json.dumps(sample) + "\n")
                worst = worst_cpu = 0.0
                window_end = loop.time() + SAMPLE_EVERY

    task = asyncio.create_task(ticker())
    if TRACE_DIR:
        taken = 0

        def snapshot() -> None:
            nonlocal taken
            taken += 1
            tracemalloc.take_snapshot().dump(str(Path(TRACE_DIR) / f"snapshot-{taken}.bin"))
            (Path(TRACE_DIR) / f"snapshot-{taken}.done").touch()

        loop.add_signal_handler(signal.SIGUSR1, snapshot)
    # the allocator's own account (arenas, pools, free blocks) to the log, traced or not
    loop.add_signal_handler(signal.SIGUSR2, sys._debugmallocstats)
    try:
        return await manager_process.serve(options)
    finally:
        task.cancel()
        out.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(_child(Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]))))
