"""EphemeralRunnerSet scale-up: from the listener's replicas patch to 1,000 EphemeralRunners.

The embedded API server runs in its own process pinned to one core; this process runs the
EphemeralRunnerSet controller (our ``KubeClient``, informers, ``Manager``, the reconciler as
``scaleset controller`` registers it) on the other, over HTTP on loopback. For each
configuration a fresh namespace holds one EphemeralRunnerSet at 0 replicas; the clock starts
when the listener's patch (``replicas: N, patchID: 1``) is sent and measures:

- until the controller's last create returned (all runners exist on the server);
- until the controller's own cache shows all of them (what its next pass decides on);
- how many API calls it took (creates, ERS status writes, other), and how many passes.

Runners only (no runner controller, no pods): the part of "patch to pods" this controller owns.

Each configuration runs ``--runs`` times (a fresh namespace each time); the table gives the
median and min–max of every column.

Writes a markdown table to bench/results/ers_scaleup.md (``--quick``: 50 runners, one run per
configuration, results to bench/results/ers_scaleup-quick.md, for CI's smoke test).

    .venv/bin/python bench/ers_scaleup.py [--runners 1000] [--runs 3] [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from _report import command_line, header, run_scope
from _system import proc_cpu
from prometheus_client import CollectorRegistry

from scaleset.api import keys
from scaleset.api.crds import all_crds
from scaleset.clock import SystemClock
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
from scaleset.controllers.ephemeralrunnerset.settings import ApplySettings, Settings
from scaleset.controllers.ephemeralrunnerset.setup import build
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.options import ControllerOptions
from scaleset.controllers.setup import ProcessContext
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.errors import AlreadyExists
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CUSTOM_RESOURCE_DEFINITION, EPHEMERAL_RUNNER_SET, NAMESPACE
from scaleset.runtime.leader import LeaderElectionConfig
from scaleset.runtime.manager import Manager, ManagerSettings

RESULTS = Path(__file__).parent / "results"


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {cpu})


def _serve(conn: Connection, kubeconfig: str) -> None:
    _pin(0)
    from scaleset.embedded.apiserver import EmbeddedApiServer

    async def main() -> None:
        async with EmbeddedApiServer(history_size=50_000) as server:
            server.write_kubeconfig(kubeconfig)
            conn.send(server.url)
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


def runner_set(namespace: str) -> dict[str, Any]:
    """An EphemeralRunnerSet with ARC's usual runner template (dind-less, one container)."""
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": "arc-runner-set",
            "namespace": namespace,
            "labels": {
                keys.SCALE_SET_NAME_LABEL: "arc-runner-set",
                keys.SCALE_SET_NAMESPACE_LABEL: namespace,
                keys.PART_OF_LABEL: keys.PART_OF_VALUE,
                keys.COMPONENT_LABEL: keys.COMPONENT_RUNNER_SET,
            },
            "annotations": {keys.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc-runner-set"},
        },
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "https://github.com/example-org",
                "githubConfigSecret": "arc-runner-set-gha-rs-github-secret",
                "runnerScaleSetId": 7,
                "metadata": {"labels": {"app": "runner"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "runner",
                            "image": "ghcr.io/actions/actions-runner:2.335.1",
                            "command": ["/home/runner/run.sh"],
                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                        }
                    ],
                },
            },
        },
    }


@dataclass(frozen=True)
class Config:
    label: str
    qps: float
    burst: int
    concurrency: int


@dataclass
class Run:
    config: Config
    created_s: float
    cached_s: float
    controller_cpu_s: float
    server_cpu_s: float
    creates: int
    status_writes: int
    other_calls: int
    passes: int


async def _until(condition: Callable[[], bool], within: float = 60.0) -> None:
    deadline = time.perf_counter() + within
    while True:
        if condition():
            return
        if time.perf_counter() > deadline:
            raise TimeoutError("the controller did not start")
        await asyncio.sleep(0.01)


def _sample(registry: CollectorRegistry, name: str, labels: dict[str, str]) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _total(registry: CollectorRegistry, family_name: str, **labels: str) -> float:
    """Sum of a counter's samples whose labels include ``labels``."""
    total = 0.0
    for family in registry.collect():
        if family.name != family_name:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total") and all(
                sample.labels.get(k) == v for k, v in labels.items()
            ):
                total += sample.value
    return total


async def _requests(metrics: RuntimeMetrics, method: str) -> float:
    return _total(metrics.registry, "rest_client_requests", method=method)


async def one_run(
    kubeconfig: str, config: Config, runners: int, index: int, server_pid: int
) -> Run:
    namespace = f"bench-ers-{index}"
    metrics = RuntimeMetrics(CollectorRegistry())
    settings = ClientSettings(qps=config.qps, burst=config.burst, field_manager="bench")
    client = KubeClient.from_kubeconfig(kubeconfig, settings=settings, metrics=metrics)
    admin = KubeClient.from_kubeconfig(kubeconfig, settings=ClientSettings(qps=math.inf))
    registry = CollectorRegistry()
    try:
        await admin.create(NAMESPACE, {"metadata": {"name": namespace}})
        await admin.create(EPHEMERAL_RUNNER_SET, runner_set(namespace))
        manager = Manager(
            client,
            ManagerSettings(
                election=LeaderElectionConfig(
                    lease_name="bench",
                    namespace=namespace,
                    identity="bench",
                    lease_duration=15.0,
                    renew_deadline=10.0,
                    retry_period=2.0,
                ),
                namespaces=[namespace],
                metrics_address="0",
                freeze_gc=True,
            ),
            metrics=metrics,
            registry=metrics.registry,
        )
        clock = SystemClock()
        github = GitHubClients(
            client, ClientOptions(clock=clock, environ={}, allow_http_github_url=True)
        )
        # The per-key back-off alone (no 50/s bucket on re-adds), as this bench has measured
        # since it was written; the set is one key, so the bucket would not bind either way.
        options = ControllerOptions(
            controller_namespace=namespace,
            listener_image="x",
            workqueue_rate_limiter="typed_rate_limiter",
        )
        controller, reconciler = build(
            manager,
            ProcessContext(options, client, clock),
            github=github,
            settings=Settings(apply=ApplySettings(max_concurrent_creates=config.concurrency)),
            metrics=RunnerSetMetrics(registry),
        )
        task = asyncio.ensure_future(manager.run())
        try:
            key = ObjectKey(namespace, "arc-runner-set")

            def ready() -> bool:
                cached = reconciler.sets.get(key)
                return controller.running and cached is not None and bool(cached.status)

            await _until(ready)
            await asyncio.sleep(0.2)
            base_creates = await _requests(metrics, "POST")
            base_patches = await _requests(metrics, "PATCH")
            base_all = sum([await _requests(metrics, m) for m in ("GET", "DELETE", "PUT")])
            base_passes = _total(
                metrics.registry, "controller_runtime_reconcile", controller="ephemeralrunnerset"
            )
            cpu_before = time.process_time()
            server_before = proc_cpu(server_pid)
            started = time.perf_counter()
            await admin.patch_merge(
                EPHEMERAL_RUNNER_SET, key, {"spec": {"replicas": runners, "patchID": 1}}
            )
            created_at = cached_at = 0.0
            labels = {"namespace": namespace, "name": "arc-runner-set", "reason": "ScaleUp"}
            while not (created_at and cached_at):
                now = time.perf_counter()
                done = _sample(registry, "scaleset_ephemeral_runner_set_decisions_total", labels)
                if not created_at and done >= runners:
                    created_at = now
                if not cached_at and len(reconciler.runners.store) >= runners:
                    cached_at = now
                if now - started > 300:
                    raise TimeoutError("scale-up did not finish in 300 s")
                await asyncio.sleep(0.005)
            cpu = time.process_time() - cpu_before
            server_cpu = proc_cpu(server_pid) - server_before
            await asyncio.sleep(0.5)  # let the status write of the last pass land
            passes = _total(
                metrics.registry, "controller_runtime_reconcile", controller="ephemeralrunnerset"
            )
            creates = int(await _requests(metrics, "POST") - base_creates)
            patches = int(await _requests(metrics, "PATCH") - base_patches)
            others = int(
                sum([await _requests(metrics, m) for m in ("GET", "DELETE", "PUT")]) - base_all
            )
            return Run(
                config,
                created_at - started,
                cached_at - started,
                cpu,
                server_cpu,
                creates,
                patches,
                others,
                int(passes - base_passes),
            )
        finally:
            manager.stop()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 30)
            await github.aclose()
    finally:
        await client.close()
        await admin.close()


async def run_all(
    kubeconfig: str, runners: int, configs: list[Config], runs: int, server_pid: int
) -> list[list[Run]]:
    async with KubeClient.from_kubeconfig(kubeconfig) as admin:
        for crd in all_crds():
            with contextlib.suppress(AlreadyExists):
                await admin.create(CUSTOM_RESOURCE_DEFINITION, crd)
        await asyncio.sleep(0.5)
    results: list[list[Run]] = []
    index = 0
    for config in configs:
        repeats = []
        for _ in range(runs):
            result = await one_run(kubeconfig, config, runners, index, server_pid)
            index += 1
            print(
                f"{config.label}: created {result.created_s:.2f} s, "
                f"cached {result.cached_s:.2f} s, CPU {result.controller_cpu_s:.2f} s "
                f"(controller) / {result.server_cpu_s:.2f} s (server), {result.creates} creates, "
                f"{result.status_writes} patches, {result.passes} passes",
                flush=True,
            )
            repeats.append(result)
        results.append(repeats)
    return results


def _stat(values: list[float], spec: str, unit: str = "") -> str:
    """``median unit`` and, over more than one run, ``(min–max)``."""
    text = f"{statistics.median(values):{spec}}{unit}"
    if len(values) > 1:
        text += f" ({min(values):{spec}}–{max(values):{spec}})"
    return text


def write(
    results: list[list[Run]],
    runners: int,
    runs: int,
    command: str,
    scope: str,
    load: float,
    out: Path,
) -> None:
    lines = [
        "# EphemeralRunnerSet scale-up: replicas patch to runners",
        "",
        "Written by `bench/ers_scaleup.py`. The embedded API server runs in its own process",
        "pinned to one core; the EphemeralRunnerSet controller (Manager, informers, reconciler,",
        "our `KubeClient`) in this process on the other, over HTTP on loopback. The clock",
        "starts when the listener's patch is sent. Runners only: no runner controller, no pods.",
        "Times move with the machine's load (in the header); CPU seconds move less.",
        "",
        *header(command, scope, load_at_start=load),
        f"- runners: {runners:,}; runs: {runs} per configuration, each cell the median "
        "(min–max) over them",
        "",
        "| client QPS / burst | creates in flight (max) | patch -> all created | "
        "patch -> all in the controller's cache | runners/s | CPU: controller / API server | "
        "creates | ERS status writes | other calls | passes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for repeats in results:
        config = repeats[0].config
        qps = "unlimited" if math.isinf(config.qps) else f"{config.qps:g} / {config.burst}"
        cpu = _stat([r.controller_cpu_s for r in repeats], ".2f", " s")
        server_cpu = _stat([r.server_cpu_s for r in repeats], ".2f", " s")
        lines.append(
            f"| {qps} | {config.concurrency} | "
            f"{_stat([r.created_s for r in repeats], '.2f', ' s')} | "
            f"{_stat([r.cached_s for r in repeats], '.2f', ' s')} | "
            f"{_stat([runners / r.created_s for r in repeats], ',.0f')} | "
            f"{cpu} / {server_cpu} | "
            f"{_stat([r.creates for r in repeats], ',.0f')} | "
            f"{_stat([r.status_writes for r in repeats], '.0f')} | "
            f"{_stat([r.other_calls for r in repeats], '.0f')} | "
            f"{_stat([r.passes for r in repeats], '.0f')} |"
        )
    lines += [
        "",
        "Reading the numbers:",
        "",
        "- Creates run in slow-start batches (1, 2, 4, … up to the in-flight cap) inside one",
        "  pass, at most 500 per pass (ReplicaSet's burstReplicas); the next pass follows at",
        f"  once. With the client's rate limit at ARC's default (20 QPS, burst 30) {runners:,}",
        f"  creates cannot take less than {max(0, runners - 30) / 20:.0f} s whatever the",
        "  controller does: the flag `--k8s-client-rate-limiter-qps` is the first knob for large",
        "  scale sets.",
        "- The CPU columns are what each process used between the patch and the last create",
        "  (this process: controller, informers, HTTP client; the server: the embedded API",
        "  server). On a machine shared with other work the wall time grows while these stay",
        "  put: compare CPU across runs.",
        '- "other calls" are the GETs of the set before each pass that creates (a listener',
        "  patch the cache has not shown yet must not be acted on late) and the manager's",
        "  lease.",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runners", type=int, default=1000, help="replicas the patch asks for")
    parser.add_argument("--runs", type=int, default=3, help="runs per configuration (median)")
    parser.add_argument("--quick", action="store_true", help="50 runners, 1 run: a smoke test")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    scope = run_scope(parser, argv)
    command = command_line("bench/ers_scaleup.py", argv)
    if args.quick:
        args.runners, args.runs = 50, 1
    if args.runners < 1 or args.runs < 1:
        parser.error("--runners and --runs must be >= 1")
    load = os.getloadavg()[0]
    configs = [
        Config("unlimited, 64", math.inf, 1000, 64),
        Config("unlimited, 16", math.inf, 1000, 16),
        Config("unlimited, 256", math.inf, 1000, 256),
        Config("200/300, 64", 200.0, 300, 64),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        parent, child = multiprocessing.Pipe()
        server = multiprocessing.Process(target=_serve, args=(child, kubeconfig), daemon=True)
        server.start()
        parent.recv()
        _pin(1)
        try:
            assert server.pid is not None
            results = asyncio.run(run_all(kubeconfig, args.runners, configs, args.runs, server.pid))
        finally:
            parent.send("stop")
            server.join(10)
    out = args.output or RESULTS / ("ers_scaleup-quick.md" if args.quick else "ers_scaleup.md")
    write(results, args.runners, args.runs, command, scope, load, out)
    print(out.read_text())
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
