"""Throughput of the embedded API server: creates per second and the time to list 10,000 objects.

The server runs in its own process pinned to one core (when the machine has two), the load
generator in this process on the other, talking HTTP over loopback. Also measures the registry
alone (no HTTP) to show where the time goes. Writes a markdown table to
bench/results/apiserver.md (``--quick``: 200 creates, 500 listed, 2 rounds, results to
bench/results/apiserver-quick.md, for CI's smoke test).

    .venv/bin/python bench/apiserver_throughput.py [--creates 3000] [--list-size 10000]
        [--runs 3] [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
from _report import command_line, header, run_scope

RESULTS = Path(__file__).parent / "results"
LIST_ROUNDS = 5
TOKEN = "bench-token"  # noqa: S105 - a local benchmark credential
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {cpu})


def _serve(conn: Connection) -> None:
    """Child process: run the server until the parent says stop."""
    _pin(0)
    from scaleset.embedded.apiserver import EmbeddedApiServer

    async def main() -> None:
        async with EmbeddedApiServer(tokens=[TOKEN], history_size=1000) as server:
            conn.send(server.url)
            loop = asyncio.get_running_loop()
            while await loop.run_in_executor(None, conn.recv) == "cpu":
                conn.send(time.process_time())

    asyncio.run(main())


def _configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "bench", "shard": name[-1]}},
        "data": {"key": "value", "other": "x" * 64},
    }


async def _create_many(
    session: aiohttp.ClientSession, url: str, namespace: str, count: int, concurrency: int
) -> float:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)
    failures = 0

    async def worker() -> None:
        nonlocal failures
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            body = json.dumps(_configmap(f"cm-{i:06d}"))
            async with session.post(
                f"{url}/api/v1/namespaces/{namespace}/configmaps", data=body, headers=HEADERS
            ) as response:
                await response.read()
                if response.status != 201:
                    failures += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{failures} creates failed")
    return elapsed


async def _list_times(
    session: aiohttp.ClientSession, url: str, namespace: str, rounds: int
) -> tuple[list[float], int, int]:
    times: list[float] = []
    items = 0
    size = 0
    for _ in range(rounds):
        started = time.perf_counter()
        async with session.get(
            f"{url}/api/v1/namespaces/{namespace}/configmaps", headers=HEADERS
        ) as response:
            raw = await response.read()
        times.append(time.perf_counter() - started)
        size = len(raw)
        items = len(json.loads(raw)["items"])
    return times, items, size


def _server_cpu(conn: Connection) -> float:
    conn.send("cpu")
    value: float = conn.recv()
    return value


async def _http_bench(
    url: str, creates: int, list_size: int, concurrency: int, runs: int, conn: Connection
) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        for ns in ("bench-list",):
            async with session.post(
                f"{url}/api/v1/namespaces",
                data=json.dumps({"metadata": {"name": ns}}),
                headers=HEADERS,
            ) as response:
                await response.read()
        rates: list[float] = []
        cpu_rates: list[float] = []
        for round_ in range(runs):
            ns = f"bench-create-{round_}"
            async with session.post(
                f"{url}/api/v1/namespaces",
                data=json.dumps({"metadata": {"name": ns}}),
                headers=HEADERS,
            ) as response:
                await response.read()
            cpu_before = _server_cpu(conn)
            elapsed = await _create_many(session, url, ns, creates, concurrency)
            cpu = _server_cpu(conn) - cpu_before
            rates.append(creates / elapsed)
            cpu_rates.append(creates / cpu)
        fill_s = await _create_many(session, url, "bench-list", list_size, concurrency)
        cpu_before = _server_cpu(conn)
        times, items, size = await _list_times(session, url, "bench-list", LIST_ROUNDS)
        list_cpu = (_server_cpu(conn) - cpu_before) / LIST_ROUNDS
    return {
        "rates": rates,
        "cpu_rates": cpu_rates,
        "list_cpu": list_cpu,
        "creates": creates,
        "fill_rate": list_size / fill_s,
        "list_times": times,
        "list_items": items,
        "list_bytes": size,
    }


async def _in_process_bench(creates: int, list_size: int) -> dict[str, float]:
    """The registry without HTTP: create and list through the REST layer directly."""
    from scaleset.embedded.apiserver import EmbeddedApiServer
    from scaleset.embedded.apiserver._rest import ListQuery

    server = EmbeddedApiServer()
    async with server:
        rest = server.rest
        assert rest is not None
        cm = server.registry.lookup("", "v1", "configmaps")
        ns_type = server.registry.lookup("", "v1", "namespaces")
        assert cm is not None
        assert ns_type is not None
        rest.create(ns_type, "", {"metadata": {"name": "direct"}})
        started = time.perf_counter()
        for i in range(max(creates, list_size)):
            rest.create(cm, "direct", _configmap(f"cm-{i:06d}"))
        create_s = (time.perf_counter() - started) / max(creates, list_size)
        query = rest.parse_list_query(cm, {})
        assert isinstance(query, ListQuery)
        started = time.perf_counter()
        listed = await rest.list_objects(cm, "direct", query)
        body = json.dumps(listed, separators=(",", ":"))
        list_s = time.perf_counter() - started
        assert len(listed["items"]) == max(creates, list_size)
        assert body
    return {"create_per_s": 1 / create_s, "list_s": list_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--creates", type=int, default=3000, help="ConfigMaps per round")
    parser.add_argument("--list-size", type=int, default=10000, help="objects listed")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3, help="create rounds (median reported)")
    parser.add_argument("--quick", action="store_true", help="200 creates, 500 listed, 2 rounds")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    if args.quick:
        args.creates, args.list_size, args.runs = 200, 500, 2
    if args.creates < 1 or args.list_size < 1 or args.runs < 1 or args.concurrency < 1:
        parser.error("--creates, --list-size, --runs and --concurrency must be >= 1")

    load_before = os.getloadavg()[0]
    parent, child = multiprocessing.Pipe()
    ctx = multiprocessing.get_context("spawn")
    process = ctx.Process(target=_serve, args=(child,), daemon=True)
    process.start()
    try:
        url = parent.recv()
        _pin(1)
        http = asyncio.run(
            _http_bench(url, args.creates, args.list_size, args.concurrency, args.runs, parent)
        )
    finally:
        parent.send("stop")
        process.join(timeout=30)
        if process.is_alive():
            process.terminate()
    direct = asyncio.run(_in_process_bench(args.creates, args.list_size))

    rates = sorted(http["rates"])
    cpu_rates = sorted(http["cpu_rates"])
    list_times = sorted(http["list_times"])
    rows = [
        (
            f"creates/s over HTTP (ConfigMaps, concurrency {args.concurrency}, "
            f"{args.runs} rounds of {http['creates']:,}): median (min–max)",
            f"{statistics.median(rates):,.0f} ({rates[0]:,.0f}–{rates[-1]:,.0f})",
            ">= 1,000",
        ),
        (
            "creates/s per server core (creates / server process CPU seconds): median (min–max)",
            f"{statistics.median(cpu_rates):,.0f} ({cpu_rates[0]:,.0f}–{cpu_rates[-1]:,.0f})",
            ">= 1,000",
        ),
        (
            f"server CPU per list of {http['list_items']:,} objects",
            f"{http['list_cpu'] * 1000:,.0f} ms",
            "< 1 s",
        ),
        (
            f"creates/s over HTTP while filling {args.list_size:,} objects",
            f"{http['fill_rate']:,.0f}",
            "",
        ),
        (
            f"list of {http['list_items']:,} objects over HTTP, {LIST_ROUNDS} lists "
            f"({http['list_bytes'] / 1e6:.1f} MB): median (min–max)",
            f"{statistics.median(list_times) * 1000:,.0f} ms "
            f"({list_times[0] * 1000:,.0f}–{list_times[-1] * 1000:,.0f})",
            "< 1 s",
        ),
        (
            f"list of {http['list_items']:,} objects over HTTP, worst of {LIST_ROUNDS}",
            f"{list_times[-1] * 1000:,.0f} ms",
            "< 1 s",
        ),
        ("creates/s in process (registry only, no HTTP)", f"{direct['create_per_s']:,.0f}", ""),
        (
            f"list + JSON encode of {max(args.creates, args.list_size):,} objects in process",
            f"{direct['list_s'] * 1000:,.0f} ms",
            "",
        ),
    ]
    lines = [
        "# Embedded API server throughput",
        "",
        "Written by `bench/apiserver_throughput.py`. The server runs in its own process pinned to",
        "one core; the load generator (aiohttp client) runs in another process on the other core.",
        'Wall-clock rates move with the machine\'s load (in the header); the "per server core"',
        "rows divide by the server process's own CPU time, which is steadier.",
        "",
        *header(
            command_line("bench/apiserver_throughput.py", argv),
            run_scope(parser, argv),
            load_at_start=load_before,
        ),
        f"- runs: {args.runs} create rounds, {LIST_ROUNDS} lists; the other rows are one "
        "measurement each",
        "",
        "| measurement | result | goal |",
        "| --- | ---: | --- |",
        *(f"| {name} | {value} | {goal} |" for name, value, goal in rows),
        "",
    ]
    out: Path = args.output or RESULTS / ("apiserver-quick.md" if args.quick else "apiserver.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
