"""Controller-runtime benchmarks: informer + work queue throughput, relist without blocking the
event loop, and cache memory per 1,000 objects.

The embedded API server runs in its own process pinned to one core; this process (our
``KubeClient``, ``Informer``, ``WorkQueue``) runs on the other, over HTTP on loopback — the same
code path production uses. Measures:

1. the work queue alone (add -> get -> done, 8 workers), keys/s;
2. relist -> queue -> workers: an informer lists 10,000 EphemeralRunners, every key is handed to
   a no-op reconcile by 4 workers — objects/s from start to the last key done;
3. watch -> queue -> workers: 10,000 ConfigMaps are created while an informer watches; events/s
   seen and processed, next to the creation rate (the informer keeps up when they match);
4. relist of 5,000 runner pods (realistic specs and statuses) with a 1 ms ticker measuring
   event-loop lag, with the default page size (500) and in one page (5,000);
5. cache memory (tracemalloc) per 1,000 EphemeralRunners and per 1,000 pods, slim projection vs
   keeping everything but managedFields.

Objects are created once; every measurement is then repeated ``--runs`` times (the watch
benchmark in a fresh namespace each time) and the table gives the median and min–max.

Writes a markdown table to bench/results/kube_informer.md (``--quick``: 200 objects, 100 pods,
pages of 50, one run, results to bench/results/kube_informer-quick.md, for CI's smoke test).

    .venv/bin/python bench/kube_informer.py [--objects 10000] [--pods 5000] [--runs 3]
        [--queue-keys 100000] [--page-size 500] [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from _report import command_line, header, run_scope
from prometheus_client import CollectorRegistry

from scaleset.api.crds import all_crds
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.errors import AlreadyExists
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import (
    ObjectKey,
    Projection,
    drop_managed_fields,
    share_subtrees,
    slim_pod,
)
from scaleset.kube.resources import (
    CONFIG_MAP,
    CUSTOM_RESOURCE_DEFINITION,
    EPHEMERAL_RUNNER,
    NAMESPACE,
    POD,
    SERVICE_ACCOUNT,
)
from scaleset.runtime.informer import Informer
from scaleset.runtime.store import InformerEvent
from scaleset.runtime.workqueue import WorkQueue

RESULTS = Path(__file__).parent / "results"
RUNNER_ACCOUNT = "arc-runner-set-gha-rs-no-permission"


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {cpu})


def _serve(conn: Connection, kubeconfig: str) -> None:
    _pin(0)
    from scaleset.embedded.apiserver import EmbeddedApiServer

    async def main() -> None:
        # No garbage collection: the pods reference EphemeralRunners that do not exist.
        async with EmbeddedApiServer(history_size=50_000, garbage_collection=False) as server:
            server.write_kubeconfig(kubeconfig)
            conn.send(server.url)
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


# ----------------------------------------------------------------------------- objects


def ephemeral_runner(index: int, namespace: str) -> dict[str, Any]:
    name = f"arc-runner-set-abcde-runner-{index:05d}"
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/component": "runner",
                "app.kubernetes.io/part-of": "gha-runner-scale-set",
                "actions.github.com/scale-set-name": "arc-runner-set",
                "actions.github.com/scale-set-namespace": namespace,
                "actions-ephemeral-runner": "True",
            },
            "annotations": {"actions.github.com/patch-id": "3", "runner-spec-hash": "7d9c5b"},
            "finalizers": [
                "ephemeralrunner.actions.github.com/finalizer",
                "ephemeralrunner.actions.github.com/runner-registration-finalizer",
            ],
            "ownerReferences": [
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "EphemeralRunnerSet",
                    "name": "arc-runner-set-abcde",
                    "uid": "0f7b7c52-9d2e-4b1a-9a57-0d7f1c2e3b4a",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "githubConfigUrl": "https://github.com/example-org/example-repo",
            "githubConfigSecret": "arc-runner-set-gha-rs-github-secret",
            "runnerScaleSetId": 7,
            "metadata": {"labels": {"app": "runner"}},
            "spec": runner_pod_spec(),
        },
    }


def runner_pod_spec() -> dict[str, Any]:
    jit = {"secretKeyRef": {"name": "runner-jit", "key": "jitToken"}}
    env = [
        {"name": "ACTIONS_RUNNER_INPUT_JITCONFIG", "valueFrom": jit},
        {"name": "DOCKER_HOST", "value": "unix:///var/run/docker.sock"},
        {"name": "RUNNER_WAIT_FOR_DOCKER_IN_SECONDS", "value": "120"},
        {"name": "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT", "value": "actions-runner-controller/x"},
    ]
    return {
        "restartPolicy": "Never",
        "serviceAccountName": RUNNER_ACCOUNT,
        "initContainers": [
            {
                "name": "init-dind-externals",
                "image": "ghcr.io/actions/actions-runner:latest",
                "command": ["cp", "-r", "/home/runner/externals/.", "/home/runner/tmpDir/"],
                "volumeMounts": [{"name": "dind-externals", "mountPath": "/home/runner/tmpDir"}],
            }
        ],
        "containers": [
            {
                "name": "runner",
                "image": "ghcr.io/actions/actions-runner:latest",
                "command": ["/home/runner/run.sh"],
                "env": env,
                "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                "volumeMounts": [
                    {"name": "work", "mountPath": "/home/runner/_work"},
                    {"name": "dind-sock", "mountPath": "/var/run"},
                ],
            },
            {
                "name": "dind",
                "image": "docker:dind",
                "args": ["dockerd", "--host=unix:///var/run/docker.sock", "--group=123"],
                "env": [{"name": "DOCKER_GROUP_GID", "value": "123"}],
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "work", "mountPath": "/home/runner/_work"},
                    {"name": "dind-sock", "mountPath": "/var/run"},
                    {"name": "dind-externals", "mountPath": "/home/runner/externals"},
                ],
            },
        ],
        "volumes": [
            {"name": "dind-sock", "emptyDir": {}},
            {"name": "dind-externals", "emptyDir": {}},
            {"name": "work", "emptyDir": {}},
        ],
    }  # fmt: skip


def runner_pod(index: int, namespace: str) -> dict[str, Any]:
    er = ephemeral_runner(index, namespace)
    return {
        "metadata": {
            "name": er["metadata"]["name"],
            "namespace": namespace,
            "labels": er["metadata"]["labels"],
            "annotations": {"actions.github.com/runner-spec-hash": "7d9c5b"},
            "ownerReferences": [
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "EphemeralRunner",
                    "name": er["metadata"]["name"],
                    "uid": f"00000000-0000-0000-0000-{index:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": runner_pod_spec(),
    }


def pod_status(index: int) -> dict[str, Any]:
    started = "2026-01-01T00:00:00Z"
    running = {"running": {"startedAt": started}}
    return {
        "status": {
            "phase": "Running",
            "podIP": f"10.0.{index // 250}.{index % 250}",
            "hostIP": "192.168.0.10",
            "startTime": started,
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": started}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "initContainerStatuses": [
                {"name": "init-dind-externals", "ready": True, "restartCount": 0,
                 "image": "ghcr.io/actions/actions-runner:latest", "imageID": "sha256:" + "a" * 64,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ],
            "containerStatuses": [
                {"name": name, "ready": True, "restartCount": 0, "started": True,
                 "image": image, "imageID": "sha256:" + "b" * 64,
                 "containerID": "containerd://" + "c" * 64, "state": running}
                for name, image in (("runner", "ghcr.io/actions/actions-runner:latest"),
                                    ("dind", "docker:dind"))
            ],
        }
    }  # fmt: skip


# --------------------------------------------------------------------------- helpers


async def bounded(concurrency: int, jobs: Sequence[Callable[[], Awaitable[Any]]]) -> float:
    """Run ``jobs`` with ``concurrency`` in flight; returns seconds taken."""
    queue = list(reversed(jobs))
    started = time.perf_counter()

    async def worker() -> None:
        while queue:
            await queue.pop()()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def run_informer(informer: Informer) -> asyncio.Task[None]:
    task = asyncio.ensure_future(informer.run())
    await informer.wait_synced()
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def drain_queue(
    queue: WorkQueue[ObjectKey], workers: int, target: int, done: asyncio.Event
) -> list[asyncio.Task[None]]:
    processed = 0

    async def worker() -> None:
        nonlocal processed
        while (key := await queue.get()) is not None:
            queue.done(key)
            processed += 1
            if processed >= target:
                done.set()

    return [asyncio.ensure_future(worker()) for _ in range(workers)]


# ------------------------------------------------------------------------- benchmarks


async def bench_queue_alone(count: int) -> float:
    queue: WorkQueue[ObjectKey] = WorkQueue("bench", metrics=RuntimeMetrics(CollectorRegistry()))
    done = asyncio.Event()
    started = time.perf_counter()
    workers = drain_queue(queue, 8, count, done)
    for index in range(count):
        queue.add(ObjectKey(f"ns-{index % 20}", f"k{index}"))
        if index % 1000 == 999:
            await asyncio.sleep(0)
    await done.wait()
    elapsed = time.perf_counter() - started
    queue.shutdown()
    await asyncio.gather(*workers)
    return count / elapsed


async def bench_relist_to_queue(client: KubeClient, namespace: str, count: int) -> dict[str, float]:
    metrics = RuntimeMetrics(CollectorRegistry())
    queue: WorkQueue[ObjectKey] = WorkQueue("relist", metrics=metrics)
    informer = Informer(client, EPHEMERAL_RUNNER, namespaces=[namespace], metrics=metrics)
    informer.add_handler(lambda event: queue.add(event.obj.key))
    done = asyncio.Event()
    started = time.perf_counter()
    workers = drain_queue(queue, 4, count, done)
    task = asyncio.ensure_future(informer.run())
    await informer.wait_synced()
    synced = time.perf_counter() - started
    await done.wait()
    total = time.perf_counter() - started
    await stop(task)
    queue.shutdown()
    await asyncio.gather(*workers)
    return {"synced_s": synced, "total_s": total, "per_s": count / total}


async def bench_watch_to_queue(client: KubeClient, namespace: str, count: int) -> dict[str, float]:
    metrics = RuntimeMetrics(CollectorRegistry())
    queue: WorkQueue[ObjectKey] = WorkQueue("watch", metrics=metrics)
    informer = Informer(client, CONFIG_MAP, namespaces=[namespace], metrics=metrics)
    seen = 0
    all_seen = asyncio.Event()

    def handler(event: InformerEvent) -> None:
        nonlocal seen
        if event.type == "ADDED":
            seen += 1
            if seen >= count:
                all_seen.set()
        queue.add(event.obj.key)

    informer.add_handler(handler)
    task = await run_informer(informer)
    done = asyncio.Event()
    workers = drain_queue(queue, 4, count, done)

    async def create(index: int) -> None:
        body = {"metadata": {"name": f"cm-{index:05d}", "namespace": namespace}, "data": {"v": "x"}}
        await client.create(CONFIG_MAP, body)

    jobs = [functools.partial(create, i) for i in range(count)]
    started = time.perf_counter()
    create_s = await bounded(16, jobs)
    await all_seen.wait()
    seen_s = time.perf_counter() - started
    await done.wait()
    processed_s = time.perf_counter() - started
    await stop(task)
    queue.shutdown()
    await asyncio.gather(*workers)
    return {
        "create_per_s": count / create_s,
        "seen_per_s": count / seen_s,
        "processed_per_s": count / processed_s,
        "lag_after_last_create_ms": (processed_s - create_s) * 1000,
    }


async def bench_relist_lag(
    client: KubeClient, namespace: str, page_size: int, freeze_gc: bool
) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    busy: list[float] = []
    stopping = asyncio.Event()

    async def ticker() -> None:
        # Wall-clock lag includes time the OS gave the CPU to other processes (the machine is
        # shared); thread CPU time between ticks is the part our own code kept the loop busy.
        while not stopping.is_set():
            before, cpu_before = loop.time(), time.thread_time()
            await asyncio.sleep(0.001)
            lags.append(loop.time() - before - 0.001)
            busy.append(time.thread_time() - cpu_before)

    gc.collect()  # before the ticker starts: a full collection here is not the relist's
    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(0.05)
    lags.clear()
    busy.clear()
    informer = Informer(
        client,
        POD,
        namespaces=[namespace],
        label_selector="actions-ephemeral-runner=True",
        page_size=page_size,
        metrics=RuntimeMetrics(CollectorRegistry()),
        freeze_gc=freeze_gc,
    )
    started = time.perf_counter()
    task = await run_informer(informer)
    relist_s = time.perf_counter() - started
    stopping.set()
    await tick
    await stop(task)
    lags.sort()
    return {
        "busy_ms": max(busy) * 1000,
        "objects": len(informer.list()),
        "relist_s": relist_s,
        "max_lag_ms": lags[-1] * 1000,
        "p99_lag_ms": lags[int(len(lags) * 0.99)] * 1000,
    }


async def bench_memory(
    client: KubeClient, namespace: str, kind: Any, projection: Any, count: int
) -> float:
    """Bytes held by an informer cache per 1,000 objects (tracemalloc, after GC)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    informer = Informer(
        client,
        kind,
        namespaces=[namespace],
        projection=projection,
        metrics=RuntimeMetrics(CollectorRegistry()),
    )
    task = await run_informer(informer)
    await stop(task)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert len(informer.list()) == count
    del informer
    return held / count * 1000


# ----------------------------------------------------------------------------- main


@dataclass
class Row:
    """One measurement: a value per run, shown as ``spec`` followed by ``unit``."""

    name: str
    spec: str
    unit: str
    values: list[float] = field(default_factory=list)

    def result(self) -> str:
        return f"{statistics.median(self.values):{self.spec}} {self.unit}"

    def spread(self) -> str:
        if len(self.values) < 2:
            return ""
        return f"{min(self.values):{self.spec}}–{max(self.values):{self.spec}}"


class Rows:
    """Measurements in the order first seen, each collecting one value per run."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def add(self, name: str, value: float, spec: str, unit: str) -> None:
        self.rows.setdefault(name, Row(name, spec, unit)).values.append(value)


def keep_everything(raw: dict[str, Any]) -> dict[str, Any]:
    return raw


async def create_all(client: KubeClient, kind: Any, bodies: list[dict[str, Any]]) -> float:
    async def create(body: dict[str, Any]) -> None:
        await client.create(kind, body)

    return await bounded(16, [functools.partial(create, body) for body in bodies])


async def run(kubeconfig: str, args: argparse.Namespace) -> Rows:
    objects, pods = args.objects, args.pods
    client = KubeClient.from_kubeconfig(
        kubeconfig,
        settings=ClientSettings(qps=math.inf, burst=1000, timeout=120.0),
        metrics=RuntimeMetrics(CollectorRegistry()),
    )
    rows = Rows()
    async with client:
        for crd in all_crds():
            with contextlib.suppress(AlreadyExists):
                await client.create(CUSTOM_RESOURCE_DEFINITION, crd)
        namespaces = ["bench-er", "bench-pod", *(f"bench-cm-{i}" for i in range(args.runs))]
        for ns in namespaces:
            await client.create(NAMESPACE, {"metadata": {"name": ns}})
        # ServiceAccount admission: a pod's account must exist (the chart creates this one)
        await client.create(
            SERVICE_ACCOUNT,
            {"metadata": {"name": RUNNER_ACCOUNT, "namespace": "bench-pod"}},
        )

        seconds = await create_all(
            client, EPHEMERAL_RUNNER, [ephemeral_runner(i, "bench-er") for i in range(objects)]
        )
        rows.add(
            f"(setup, once) create {objects:,} EphemeralRunners, concurrency 16",
            objects / seconds,
            ",.0f",
            "/s",
        )

        async def make_pod(index: int) -> None:
            created = await client.create(POD, runner_pod(index, "bench-pod"))
            await client.patch_merge(POD, created.key, pod_status(index), status=True)

        seconds = await bounded(16, [functools.partial(make_pod, i) for i in range(pods)])
        rows.add(
            f"(setup, once) create + status-patch {pods:,} runner pods, concurrency 16",
            pods / seconds,
            ",.0f",
            "pods/s",
        )
        for run_index in range(args.runs):
            print(f"[{run_index + 1}/{args.runs}] measuring", file=sys.stderr, flush=True)
            await measure(client, args, rows, f"bench-cm-{run_index}")
    return rows


async def measure(client: KubeClient, args: argparse.Namespace, rows: Rows, cm_ns: str) -> None:
    """One run of every measurement, on the objects created beforehand."""
    objects, pods, page_size = args.objects, args.pods, args.page_size
    keys = args.queue_keys
    rate = await bench_queue_alone(keys)
    rows.add(
        f"work queue alone: add -> get -> done, 8 workers, {keys:,} keys", rate, ",.0f", "keys/s"
    )
    relist = await bench_relist_to_queue(client, "bench-er", objects)
    rows.add(
        f"informer list of {objects:,} ERs (pages of 500) until synced",
        relist["synced_s"] * 1000,
        ",.0f",
        "ms",
    )
    rows.add(
        f"list -> informer -> queue -> 4 no-op workers, {objects:,} ERs",
        relist["per_s"],
        ",.0f",
        "objects/s",
    )

    watch = await bench_watch_to_queue(client, cm_ns, objects)
    rows.add(
        f"creates while an informer watches ({objects:,} ConfigMaps)",
        watch["create_per_s"],
        ",.0f",
        "/s",
    )
    rows.add("watch events seen by the informer", watch["seen_per_s"], ",.0f", "events/s")
    rows.add(
        "watch events -> queue -> 4 no-op workers", watch["processed_per_s"], ",.0f", "events/s"
    )
    rows.add(
        "last event processed, after the last create returned",
        watch["lag_after_last_create_ms"],
        ",.0f",
        "ms",
    )

    for page, freeze in ((page_size, False), (pods, False), (page_size, True)):
        lag = await bench_relist_lag(client, "bench-pod", page, freeze)
        assert lag["objects"] == pods
        how = f"pages of {page:,}" + (", gc.freeze() per page (as the manager)" * freeze)
        prefix = f"relist {pods:,} pods, {how}"
        rows.add(f"{prefix}: time to synced", lag["relist_s"] * 1000, ",.0f", "ms")
        rows.add(f"{prefix}: event-loop lag max", lag["max_lag_ms"], ",.1f", "ms")
        rows.add(f"{prefix}: event-loop lag p99", lag["p99_lag_ms"], ",.1f", "ms")
        rows.add(f"{prefix}: longest loop stretch, our CPU time", lag["busy_ms"], ",.1f", "ms")

    cases: list[tuple[str, Any, str, Projection, int]] = [
        (
            "EphemeralRunners, default (spec shared, managedFields dropped)",
            EPHEMERAL_RUNNER,
            "bench-er",
            share_subtrees,
            objects,
        ),
        (
            "EphemeralRunners, managedFields dropped only",
            EPHEMERAL_RUNNER,
            "bench-er",
            drop_managed_fields,
            objects,
        ),
        (
            "runner pods, default (slim: metadata, the status fields read, a few spec fields)",
            POD,
            "bench-pod",
            slim_pod,
            pods,
        ),
        ("runner pods, managedFields dropped only", POD, "bench-pod", drop_managed_fields, pods),
        ("runner pods, everything kept", POD, "bench-pod", keep_everything, pods),
    ]
    for label, kind, namespace, projection, count in cases:
        per_thousand = await bench_memory(client, namespace, kind, projection, count)
        rows.add(f"cache memory per 1,000 {label}", per_thousand / 1e6, ",.2f", "MB")


NOTES = [
    "Reading the numbers:",
    "",
    "- Creates/s and events/s are bounded by the embedded server on its one core: the",
    "  informer sees watch events as fast as they are created and the queue hands out the last",
    "  key as soon as the last create returns, so neither is the bottleneck here.",
    "- Event-loop lag: wall-clock lag also counts time the OS gave the CPU to other processes;",
    "  the CPU-time row is what our own code held the loop. Without `freeze_gc` a cycle",
    "  collection that starts inside a page walks every live object (the growing cache), so one",
    "  page can hold the loop far longer than its decode (the rows with and without compare",
    "  it). With `freeze_gc` (the manager's setting) the longest stretch is one page's decode and",
    "  projection; a smaller `page_size` bounds it further at the cost of more requests.",
    "- Memory is measured with tracemalloc (everything the cache keeps alive, per 1,000",
    "  objects). EphemeralRunners of one set share one copy of their pod template and of their",
    "  repeated metadata (`share_subtrees`); pods keep metadata, the status fields read and a few",
    "  spec fields, and share repeated labels and annotations (`slim_pod`).",
    "",
]


def write(rows: Rows, args: argparse.Namespace, load: float, out: Path) -> None:
    lines = [
        "# Controller runtime: informer, work queue, relist and cache memory",
        "",
        "Written by `bench/kube_informer.py`. The embedded API server runs in its own process",
        "pinned to one core; this process (our `KubeClient`, `Informer`, `WorkQueue`) on the",
        "other, over HTTP on loopback. Throughput here is bounded by the embedded server as much",
        "as by us; times move with the machine's load (in the header).",
        "",
        *header(args.command, args.scope, load_at_start=load),
        f"- runs: {args.runs}; result = median over the runs, min–max beside it (set-up rows:",
        "  one measurement)",
        "",
        "| measurement | result | min–max |",
        "| --- | ---: | ---: |",
        *(f"| {row.name} | {row.result()} | {row.spread()} |" for row in rows.rows.values()),
        "",
        *NOTES,
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"written to {out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000, help="EphemeralRunners, ConfigMaps")
    parser.add_argument("--pods", type=int, default=5_000, help="runner pods relisted")
    parser.add_argument("--queue-keys", type=int, default=100_000, help="keys, work queue alone")
    parser.add_argument("--page-size", type=int, default=500, help="relist page size")
    parser.add_argument("--runs", type=int, default=3, help="repeats of every measurement")
    parser.add_argument(
        "--quick", action="store_true", help="200 objects, 100 pods, pages of 50, 1 run"
    )
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    args.scope = run_scope(parser, argv)
    args.command = command_line("bench/kube_informer.py", argv)
    if args.quick:
        args.objects, args.pods, args.queue_keys, args.page_size, args.runs = 200, 100, 5000, 50, 1
    if min(args.objects, args.pods, args.queue_keys, args.page_size, args.runs) < 1:
        parser.error("--objects, --pods, --queue-keys, --page-size and --runs must be >= 1")
    load = os.getloadavg()[0]
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    with tempfile.TemporaryDirectory(prefix="bench-kube-") as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        server = ctx.Process(target=_serve, args=(child, kubeconfig), daemon=True)
        server.start()
        try:
            parent.recv()
            _pin(1)
            rows = asyncio.run(run(kubeconfig, args))
        finally:
            parent.send("stop")
            server.join(timeout=30)
            if server.is_alive():
                server.kill()
    out = args.output or RESULTS / ("kube_informer-quick.md" if args.quick else "kube_informer.md")
    write(rows, args, load, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
