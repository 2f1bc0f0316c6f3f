"""Memory and loop health: controller RSS and event-loop lag with thousands of runners cached.

Issue 19, item 7. The whole demo system (``_system.BenchSystem``) with the controller manager in
a process of its own (``_controller_child.py``: ``manager_process.serve`` plus a 5 ms event-loop
ticker that samples lag, CPU and RSS every 250 ms), the listener in another and the embedded API
server in a third. An AutoscalingRunnerSet at ``minRunners = maxRunners = N`` (5,000): the
controller creates N EphemeralRunners, their JIT Secrets and pods, the simulated kubelet runs
them (each runner container idles until stopped: the cache, not GitHub traffic, is measured
here), and the manager's informers hold N EphemeralRunners and N pods.

Then ``--relists`` times (50): the API server forgets its watch history and ends every watch
(``/_scaleset/faults``: compact + drop_watches), so every informer's next watch gets 410 Gone
and relists; a relist is over when the controller has listed and then opened a new watch on
every resource it watched before (after the one that got 410). Reported: RSS before the first
relist and after relists 1, 10 and 50, the RSS slope over the relists (least squares, MB per
relist), the largest event-loop lag during a relist and in steady state (with the loop thread's
CPU time in that tick: the rest is the OS running other processes), and the listener's RSS idle
(with a session, no job).

    .venv/bin/python bench/controller_memory.py [--runners 5000] [--relists 50] [--quick]
        [--tracemalloc DIR]

``--tracemalloc DIR`` traces the controller's allocations (``_controller_child.py``) and takes a
snapshot when it is quiet, after the first relist and after the last (and one each time the
traced bytes reach a new high), then writes where the bytes are and what was alive only at the
peak (``_tracemalloc_report.py``) to ``DIR/report.md``. Tracing slows the controller and
adds memory of its own: such a run finds where the bytes go; its RSS and lag are not results.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import signal
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _report import command_line, run_scope
from _system import (
    ApiServerProcess,
    BenchSystem,
    Sample,
    header,
    proc_cpu,
    proc_rss,
    proc_rss_parts,
    runner_pods,
    running,
    say,
    wait_for_idle_runners,
)
from _system import workdir as make_workdir
from _tracemalloc_report import report as tracemalloc_report

from scaleset.api import keys
from scaleset.demo.system import NODES, SCALE_SET_NAME
from scaleset.kube import KubeObject, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_RUNNER_SET,
    CONFIG_MAP,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    NAMESPACE,
    POD,
    SECRET,
)

RESULTS = Path(__file__).parent / "results"
TARGET_MB = 150.0
LEASE_RETRY = 2.0
"""The lease is renewed every retry period (2 s); a loop stall this long delays a renewal."""
MB = 1024 * 1024
SEED = 10
"""Runners the controller creates itself; the others are copies of them."""
OFFLINE_BOUND = 86400
"""The runner containers idle without connecting to GitHub: the registration pass must not
replace them as offline (``SCALESET_RUNNER_OFFLINE_BOUND``, default 10 minutes) mid-run."""
SERVER_FIELDS = frozenset(
    {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "name"}
)
SCRATCH = "scaleset-bench-scratch"
"""A namespace the controller does not watch (its writes only move the resourceVersion)."""


def _requests(api: ApiServerProcess, verb: str) -> Counter[str]:
    """The controller's ``verb`` requests so far, by resource."""
    counts: Counter[str] = Counter()
    for entry, count in api.access().items():
        if entry.component == "scaleset-controller" and entry.verb == verb:
            counts[entry.rbac_resource] += count
    return counts


def _strip(meta: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A template's metadata without what the server assigns, with ``changes``."""
    kept = {k: v for k, v in meta.items() if k not in SERVER_FIELDS}
    return {**kept, **changes}


def _steady(runner: KubeObject) -> bool:
    """Where the controller leaves an idle runner: its start recorded, its pod Ready."""
    status = runner.raw.get("status") or {}
    return bool(status.get("runnerStartedAt")) and status.get("ready") is True


async def _until_seed_steady(system: BenchSystem, count: int, within: float) -> None:
    """Wait until the controller has brought ``count`` runners to their steady state, JIT
    Secrets deleted. A Running pod is not enough: the controller records the start (and
    deletes the Secret) a moment after the kubelet reports it — under load, after the pods
    were all Running — and once it is stopped nobody does (the seeding then waited 120 s for a
    start nobody would record)."""
    assert system.client is not None
    namespace = system.runner_namespace
    deadline = time.monotonic() + within
    while True:
        runners = (await system.client.list(EPHEMERAL_RUNNER, namespace=namespace)).items
        names = {r.name for r in runners}
        secrets = (await system.client.list(SECRET, namespace=namespace)).items
        left = [s.name for s in secrets if s.name in names]
        steady = sum(1 for r in runners if _steady(r))
        if steady == count == len(runners) and not left:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{steady}/{count} runners steady, {len(left)} JIT Secrets left after {within:.0f}s"
            )
        await asyncio.sleep(0.5)


async def _clone_runners(system: BenchSystem, count: int) -> float:
    """Add ``count`` idle runners as the controller leaves them, copied from one it made in
    its steady state (``_until_seed_steady``): a registration on the fake service (a JIT
    config), the EphemeralRunner with its status (started, seen offline) and its pod, bound to
    a simulated node (the kubelet starts it); no JIT Secret (deleted once a runner started).
    Returns seconds."""
    assert system.client is not None
    assert system.fake is not None
    client, namespace, control = system.client, system.runner_namespace, system.fake.control
    pod = (await runner_pods(system))[0]
    # the template in its steady state; the clones get no JIT Secret: the controller deletes a
    # started runner's Secret (L5), which is where it leaves every idle runner
    runner = await client.get(EPHEMERAL_RUNNER, ObjectKey(namespace, pod.name))
    if not _steady(runner):
        raise RuntimeError(f"runner {pod.name} is not in its steady state")
    scale_set_id = int(runner.raw["spec"]["runnerScaleSetId"])
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    annotations = {
        **runner.raw["metadata"].get("annotations", {}),
        keys.OFFLINE_SINCE_ANNOTATION: now,
    }
    started = time.monotonic()
    gate = asyncio.Semaphore(16)

    async def one(index: int) -> None:
        name = f"{runner.raw['metadata']['generateName']}c{index:05d}"
        jit = control.generate_jit_config(scale_set_id, name)
        async with gate:
            meta = _strip(runner.raw["metadata"], name=name, annotations=annotations)
            meta.pop("generateName", None)
            created = await client.create(
                EPHEMERAL_RUNNER, {"metadata": meta, "spec": runner.raw["spec"]}
            )
            status = copy.deepcopy(runner.raw["status"])
            status.update(runnerId=jit.id, runnerName=name)
            await client.patch_merge(
                EPHEMERAL_RUNNER, ObjectKey(namespace, name), {"status": status}, status=True
            )
            owner = [
                {**pod.raw["metadata"]["ownerReferences"][0], "name": name, "uid": created.uid}
            ]
            spec = copy.deepcopy(pod.raw["spec"])
            token_volumes = {v["name"] for v in spec.get("volumes", []) if "projected" in v}
            spec["volumes"] = [v for v in spec.get("volumes", []) if v["name"] not in token_volumes]
            spec["nodeName"] = NODES[index % len(NODES)]
            for container in spec["containers"]:
                container["volumeMounts"] = [
                    m for m in container.get("volumeMounts", []) if m["name"] not in token_volumes
                ]
                for variable in container.get("env", []):
                    ref = (variable.get("valueFrom") or {}).get("secretKeyRef")
                    if ref is not None:
                        ref["name"] = name
                        ref["optional"] = True  # deleted once the runner started, as above
            pod_meta = _strip(pod.raw["metadata"], name=name, ownerReferences=owner)
            await client.create(POD, {"metadata": pod_meta, "spec": spec})

    await asyncio.gather(*(one(i) for i in range(count)))
    return time.monotonic() - started


def _listener_rss(system: BenchSystem) -> list[int]:
    """The RSS of the newest listener process, if it still runs (a listener restarted by its
    controller has a new process)."""
    for pid in reversed(system.listener_pids):
        try:
            return [proc_rss(pid)]
        except FileNotFoundError:
            continue
    return []


async def _bump(system: BenchSystem) -> None:
    """One write outside the watched namespaces: the server's resourceVersion moves past every
    informer's (a quiet informer's may equal it after a bookmark, and a watch from the newest
    version needs no relist), so after the compaction every watch gets 410 Gone."""
    assert system.client is not None
    body = {"metadata": {"generateName": "relist-", "namespace": SCRATCH}, "data": {}}
    await system.client.create(CONFIG_MAP, body)


async def _until_sampling(system: BenchSystem, within: float) -> None:
    """Wait until the controller process has imported everything and its loop runs (its
    ticker's first sample): before that it is not yet a controller."""
    controller = system.controller
    assert controller is not None
    deadline = time.monotonic() + within
    while not controller.samples():
        if time.monotonic() > deadline or not controller.alive():
            raise RuntimeError(f"the controller process did not start within {within:.0f} s")
        await asyncio.sleep(0.5)


async def _until_quiet(system: BenchSystem, within: float) -> float:
    """Wait until the controller (just started: it reconciles every object once) uses under a
    third of a core over 10 s, or ``within`` seconds passed (at thousands of runners the
    1-minute resync keeps it busy for part of every minute); returns its CPU seconds."""
    controller = system.controller
    assert controller is not None
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = proc_cpu(controller.pid)
        await asyncio.sleep(10)
        if proc_cpu(controller.pid) - before < 3.3:
            break
    return proc_cpu(controller.pid)


def _worst(samples: list[Sample], start: float, end: float) -> Sample | None:
    inside = [s for s in samples if start <= s.at <= end]
    return max(inside, key=lambda s: s.lag) if inside else None


def _slope(points: list[tuple[float, float]]) -> float:
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


TRACED_LEASE = {"lease_duration": 900.0, "renew_deadline": 600.0, "retry_period": 60.0}
"""A traced controller's lease: taking a snapshot holds its loop for seconds to minutes, which
must not cost it the lease (and its informers) in the middle of the measurement."""
SNAPSHOT_MOMENTS = ("quiet, before the first relist", "after relist 1", "after the last relist")


async def _snapshot(system: BenchSystem, directory: Path | None, number: int) -> None:
    """Have a traced controller write snapshot ``number`` and wait until it has."""
    if directory is None or system.controller is None:
        return
    os.kill(system.controller.pid, signal.SIGUSR1)
    done = directory / f"snapshot-{number}.done"
    deadline = time.monotonic() + 600
    while not done.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no tracemalloc snapshot {number} after 600 s")
        await asyncio.sleep(0.5)
    say(f"tracemalloc snapshot {number} ({SNAPSHOT_MOMENTS[number - 1]}) written")


async def _measure(args: argparse.Namespace, work: Path) -> dict[str, object]:
    api = ApiServerProcess(work)
    result: dict[str, object] = {}
    traced: Path | None = args.tracemalloc
    trace_env = {}
    if traced is not None:
        trace_env = {
            "SCALESET_BENCH_TRACEMALLOC": str(traced),
            "SCALESET_BENCH_TRACEMALLOC_FRAMES": str(args.tracemalloc_frames),
        }
    try:
        system = BenchSystem(
            work,
            api,
            min_runners=SEED,
            max_runners=SEED,
            idle_runners=True,
            listener_process=True,
            tick=0.005 if traced is None else 0.05,  # tracing makes a fast ticker costly
            controller_env={"SCALESET_RUNNER_OFFLINE_BOUND": str(OFFLINE_BOUND), **trace_env},
            controller_overrides=TRACED_LEASE if traced is not None else None,
        )
        await system.start()
        assert system.fake is not None
        assert system.client is not None
        system.fake._context.poll_hold_seconds = 50.0  # GitHub's hold, not the demo's 2 s
        await system.client.create(NAMESPACE, {"metadata": {"name": SCRATCH}})
        try:
            await wait_for_idle_runners(system, SEED, 300)
            await _until_seed_steady(system, SEED, 300)
            # the rest are copies of one the controller made, added while it is stopped (it
            # creates runners at its own pace, which scaleup.py measures)
            assert system.controller is not None
            result["rss_seed"] = system.controller.samples()[-1].rss
            await system.stop_controller()
            for pod in (await system.client.list(POD, namespace=system.controller_namespace)).items:
                await system.client.delete(POD, pod.key, grace_period_seconds=0)
            scale = {"spec": {"minRunners": args.runners, "maxRunners": args.runners}}
            await system.client.patch_merge(
                AUTOSCALING_RUNNER_SET, ObjectKey(system.runner_namespace, SCALE_SET_NAME), scale
            )
            sets = await system.client.list(EPHEMERAL_RUNNER_SET, namespace=system.runner_namespace)
            await system.client.patch_merge(
                EPHEMERAL_RUNNER_SET, sets.items[0].key, {"spec": {"replicas": args.runners}}
            )
            took = await _clone_runners(system, args.runners - SEED)
            say(f"{args.runners - SEED} runners added in {took:.0f}s; waiting for their pods")
            took += await wait_for_idle_runners(system, args.runners, args.setup_timeout)
            result["setup"] = took
            started = time.monotonic()
            await system.start_controller()
            await _until_sampling(system, 300)
            result["quiet"] = await _until_quiet(system, 300)
            result["startup"] = time.monotonic() - started
            pods = await runner_pods(system)
            if len(pods) != args.runners or not all(running(p) for p in pods):
                raise RuntimeError(f"the controller changed the runners: {len(pods)} pods")
            say(f"controller started and quiet after {result['startup']:.0f}s; settling")
            settle_start = time.time()
            await asyncio.sleep(args.settle)
            controller = system.controller
            assert controller is not None
            steady = _worst(controller.samples(), settle_start + args.settle / 2, time.time())
            result["steady"] = steady
            result["rss0"] = controller.samples()[-1].rss
            result["parts0"] = proc_rss_parts(controller.process.pid)
            await _snapshot(system, traced, 1)
            # idle: a session, no job, before the relists (the listener has its own process)
            result["listener_rss"] = _listener_rss(system)
            rss: list[tuple[float, float]] = []
            relist_lag: list[Sample] = []
            durations: list[float] = []
            lists_before = sum(_requests(api, "list").values())
            retriggers = 0
            relist_bound = 120.0 if traced is None else 900.0  # tracing slows the controller
            for relist in range(1, args.relists + 1):
                watched, listed = _requests(api, "watch"), _requests(api, "list")
                started = time.time()
                await _bump(system)
                api.relist_everyone()
                nudged = started
                while True:
                    await asyncio.sleep(0.5)  # the access log is large: poll it gently
                    watches, lists = _requests(api, "watch"), _requests(api, "list")
                    # per resource: the watch that got 410, a list, then the new watch
                    if all(watches[r] >= watched[r] + 2 and lists[r] > listed[r] for r in watched):
                        break
                    if time.time() - nudged > relist_bound / 2:
                        # an informer whose watch resumed without a 410 (its version was the
                        # newest): end the watches again
                        retriggers += 1
                        nudged = time.time()
                        await _bump(system)
                        api.relist_everyone()
                    if time.time() - started > relist_bound:
                        late = [r for r in watched if lists[r] == listed[r]]
                        raise TimeoutError(
                            f"relist {relist}: no list of {late} within {relist_bound:.0f} s"
                        )
                durations.append(time.time() - started)
                await asyncio.sleep(args.pause)
                samples = controller.samples()
                worst = _worst(samples, started, time.time())
                if worst is not None:
                    relist_lag.append(worst)
                rss.append((float(relist), samples[-1].rss / MB))
                if relist == 1 and args.relists > 1:
                    await _snapshot(system, traced, 2)
                if relist == args.relists:
                    result["parts_last"] = proc_rss_parts(controller.process.pid)
                    await _snapshot(system, traced, 3 if args.relists > 1 else 2)
                if relist in (1, 10, 50) or relist == args.relists or relist % 10 == 0:
                    say(
                        f"[relist {relist}/{args.relists}] {durations[-1]:.1f} s, RSS "
                        f"{rss[-1][1]:.1f} MB, max lag {worst.lag * 1000 if worst else 0:.0f} ms"
                    )
            result["lists"] = (sum(_requests(api, "list").values()) - lists_before) / args.relists
            result["rss"] = rss
            result["retriggers"] = retriggers
            result["relist_lag"] = relist_lag
            result["durations"] = durations
            result["controller_alive"] = controller.alive()
        finally:
            try:
                await system.stop()
            except Exception as error:  # the measurement is done; say what broke, keep it
                result["stop_error"] = f"{type(error).__name__}: {error}"
                say(f"stopping the system failed: {error!r}")
    finally:
        api.stop()
    return result


def _part(result: dict[str, object], moment: str, part: str) -> str:
    """One part of the controller's resident set at ``moment`` in MB ("?" when not taken)."""
    parts = result.get(moment)
    if not isinstance(parts, dict) or part not in parts:
        return "?"
    return f"{parts[part] / MB:.1f}"


def _table(result: dict[str, object], args: argparse.Namespace) -> str:
    rss: list[tuple[float, float]] = result["rss"]  # type: ignore[assignment]
    lags: list[Sample] = result["relist_lag"]  # type: ignore[assignment]
    durations: list[float] = result["durations"]  # type: ignore[assignment]
    steady: Sample | None = result["steady"]  # type: ignore[assignment]
    listener: list[int] = result["listener_rss"]  # type: ignore[assignment]
    by_index = dict(rss)
    slope = _slope(rss)
    peak = max(y for _, y in rss)
    worst = max(lags, key=lambda s: s.lag) if lags else None
    lag_values = [s.lag * 1000 for s in lags]
    growth = slope * len(rss)
    growing = growth > 0.05 * by_index[1.0]
    seed_mb = int(result["rss_seed"]) / MB  # type: ignore[call-overload]
    lines = [
        "# Memory and loop health: the controller with thousands of runners cached",
        "",
        "Written by `bench/controller_memory.py` (issue 19, item 7). The demo system with the",
        "controller manager, the listener and the embedded API server each in a process of",
        f"its own. An AutoscalingRunnerSet at minRunners = maxRunners = {args.runners}: the",
        f"manager's informers hold {args.runners} EphemeralRunners and {args.runners} runner pods",
        "(runner containers idle until stopped). Each relist: the server compacts its watch",
        "history and ends every watch, so every informer gets 410 Gone and lists again; over",
        "when the controller has listed and opened a new watch on every resource. RSS is the",
        "controller process's own (/proc/self/statm); lag is how late a 5 ms ticker on the",
        "manager's loop woke up.",
        "",
        *header(args.command, args.scope, load_at_start=args.load_at_start),
        f"- set-up: the controller made {SEED} runners, the other {args.runners - SEED} are "
        "copies of them added while it was stopped (copies, so the set-up does not wait on the "
        "controller's creation rate, which scaleup.md measures); all Running after "
        f"{result['setup']:.0f} s; the controller then started and was quiet (< 33 % of a "
        f"core over 10 s) after {result['startup']:.0f} s, {result['quiet']:.0f} CPU seconds; "
        "relists: "
        f"{args.relists} (each one run), {result['lists']:.0f} list requests each; relist "
        f"duration median {statistics.median(durations):.1f} s "
        f"({min(durations):.1f}–{max(durations):.1f}); relists that needed the watches ended "
        f"again (after half the relist bound): {result['retriggers']}; shutdown: "
        f"{result.get('stop_error', 'clean')}; controller alive at the end: "
        f"{result['controller_alive']}",
        "",
        "| measure | value |",
        "| --- | ---: |",
        f"| controller RSS, steady, before the first relist | {int(result['rss0']) / MB:.1f} MB |",  # type: ignore[call-overload]
    ]
    for index in (1, 10, 50, args.relists):
        if float(index) in by_index and f"after relist {index} |" not in "".join(lines):
            lines.append(
                f"| controller RSS after relist {index} | {by_index[float(index)]:.1f} MB |"
            )
    lines += [
        f"| controller RSS, highest after any relist | {peak:.1f} MB |",
        f"| — anonymous memory (the heap), steady / after the last relist | "
        f"{_part(result, 'parts0', 'anon')} / {_part(result, 'parts_last', 'anon')} MB |",
        f"| — mapped files (the interpreter's and extension modules' code), steady / after the "
        f"last relist | {_part(result, 'parts0', 'file')} / {_part(result, 'parts_last', 'file')}"
        " MB |",
        f"| RSS slope over the relists (least squares) | {slope * 1000:+.1f} kB per relist |",
        f"| max event-loop lag during a relist (median over relists) | "
        f"{statistics.median(lag_values):.0f} ms |",
        f"| max event-loop lag during a relist (worst relist) | "
        f"{worst.lag * 1000 if worst else 0:.0f} ms |",
        f"| — the loop thread's CPU time in that tick | "
        f"{worst.lag_cpu * 1000 if worst else 0:.0f} ms |",
        f"| max event-loop lag, steady state (no relist) | "
        f"{steady.lag * 1000 if steady else 0:.0f} ms |",
        f"| listener RSS, idle (a session, no job) | "
        f"{(listener[0] / MB if listener else 0):.1f} MB |",
        "",
    ]
    rss_ok = peak <= TARGET_MB
    lag_ok = worst is None or worst.lag < LEASE_RETRY
    lines += [
        f"- RSS ≤ {TARGET_MB:.0f} MB: "
        + ("**met**" if rss_ok else f"**missed** ({peak:.0f} MB)")
        + f"; not growing: {'**missed**' if growing else '**met**'} (slope × relists = "
        f"{growth:+.1f} MB, {growth / by_index[1.0] * 100:+.1f} % of the RSS after relist 1).",
        f"- Loop lag: worst {worst.lag * 1000 if worst else 0:.0f} ms against the lease's "
        f"{LEASE_RETRY:g} s retry period and 10 s renew deadline: "
        + ("**met** (no renewal can stall)." if lag_ok else "**missed**."),
        "- The listener runs in its own process and loop, so a controller relist cannot hold its "
        "long poll.",
    ]
    per_thousand = (peak - seed_mb) / ((args.runners - SEED) / 1000)
    lines += [
        "",
        f"Where the memory goes: {peak - seed_mb:.0f} MB of the {peak:.0f} MB came with the "
        f"{args.runners - SEED} added runners ({per_thousand:.1f} MB per 1,000: an "
        f"EphemeralRunner and a pod each, in the caches and in what the controllers keep per "
        f"runner); {seed_mb:.0f} MB is the process with {SEED} runners (interpreter, imports, "
        "clients). After the last relist, "
        f"{_part(result, 'parts_last', 'file')} MB of the RSS is mapped files (code, the same "
        f"however many runners) and {_part(result, 'parts_last', 'anon')} MB anonymous memory: "
        "the objects and the allocator's arenas (freed memory an arena keeps). "
        "bench/results/kube_informer.md measures the informer caches alone; "
        "`--tracemalloc DIR` runs this benchmark with the controller's allocations traced and "
        "reports them by call site.",
    ]
    return "\n".join(lines) + "\n"


async def _main(args: argparse.Namespace) -> int:
    with make_workdir("memory") as work:
        result = await _measure(args, work)
    text = _table(result, args)
    if args.tracemalloc is not None:
        labels = {f"snapshot-{i}": moment for i, moment in enumerate(SNAPSHOT_MOMENTS, 1)}
        if args.relists == 1:
            labels["snapshot-2"] = SNAPSHOT_MOMENTS[2]
        where = tracemalloc_report(args.tracemalloc, labels=labels)
        (args.tracemalloc / "report.md").write_text(where)
        print(where)
        say(f"tracemalloc report written to {args.tracemalloc / 'report.md'}")
    name = "controller_memory-quick.md" if args.quick else "controller_memory.md"
    default = RESULTS / name if args.tracemalloc is None else args.tracemalloc / "table.md"
    out = args.output or default  # a traced run's figures are not results
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    say(f"written to {out}")
    return 0 if result["controller_alive"] else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runners", type=int, default=5000, help="EphemeralRunners and pods")
    parser.add_argument("--relists", type=int, default=50, help="forced relists")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds before relists")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds after each relist")
    parser.add_argument("--setup-timeout", type=float, default=1200.0, help="seconds")
    parser.add_argument("--quick", action="store_true", help="40 runners, 3 relists")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    parser.add_argument(
        "--tracemalloc",
        type=Path,
        default=None,
        metavar="DIR",
        help="trace the controller's allocations; snapshots and report.md go to DIR "
        "(a run to find where the bytes go: its RSS and lag are not results)",
    )
    parser.add_argument(
        "--tracemalloc-frames",
        type=int,
        default=4,
        metavar="N",
        help="frames kept per traced allocation (more: better call sites, a slower controller)",
    )
    args = parser.parse_args(argv)
    args.scope = run_scope(parser, argv, diagnostics=("tracemalloc",))
    args.command = command_line("bench/controller_memory.py", argv)
    args.load_at_start = os.getloadavg()[0]
    if args.quick:
        args.runners, args.relists, args.settle = 40, 3, 3.0
    if args.runners < 1 or args.relists < 1:
        parser.error("--runners and --relists must be >= 1")
    if args.tracemalloc is not None:
        args.tracemalloc.mkdir(parents=True, exist_ok=True)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
