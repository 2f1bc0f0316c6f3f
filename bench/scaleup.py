"""Scale-up to runner pods (issue 19, items 1-3): scaleset's defaults, scaleset with ARC's settings
and a minimal script, side by side in one run, with zero added latency and with a realistic profile.

Three processes: the embedded API server (pinned to core 0), the fake GitHub service (also on
core 0: it stands for GitHub, not for us) and this one (core 1), which runs the controller
manager exactly as ``scaleset controller`` builds it (``manager_process.build_manager``: every
registered reconciler, the EphemeralRunnerSet and EphemeralRunner controllers doing the work)
or, for the minimal rows, a script. Each run gets a fresh namespace holding one
EphemeralRunnerSet at 0 replicas, and a scale set in a GitHub organization of its own in the
fake (runner names are unique within an organization); the clock starts when the listener's
patch (``replicas: N``) is sent and stops when a watch on the namespace's pods has seen N of
them created — each runner's EphemeralRunner, JIT config (fake GitHub), JIT Secret and Pod.

Configurations (``CONFIGS``):

- scaleset's defaults: client QPS 20 / burst 30, 2 EphemeralRunnerSet workers, 2
  EphemeralRunner workers, 64 runner creates in flight (``controllers/options.py``, cli);
- scaleset with ARC's settings: QPS 20 / burst 30, 1 EphemeralRunnerSet worker, 2
  EphemeralRunner workers (ARC's controller defaults), run by scaleset — ARC itself cannot run
  here, so this row is scaleset's code with ARC's settings, not ARC;
- the minimal script: per runner only the unavoidable writes (create the EphemeralRunner,
  generatejitconfig, create the Secret, create the Pod), with our client library
  (``KubeClient``, ``GitHubClients``) and the same client settings, 64 runners in flight;
- the same two with the client's rate limit lifted (``--k8s-client-rate-limiter-qps``
  raised): how fast the API server itself lets it go;
- with zero latency, also the unthrottled minimal script plus the one write
  scaleset's lifecycle adds per runner (``MINIMAL_FAST_RECORD``: the guarded status record
  before the pod, L5), to tell the cost of that write from the controller's own work.

Profiles: ``zero`` (no added latency) and ``realistic`` (the API server delays every request
10 ms; the fake GitHub every call 300 ms; generatejitconfig is limited by a token bucket of 3/s,
burst 3, answered over the limit as GitHub's secondary rate limit: 403 with Retry-After).

Writes bench/results/scaleup.md (``--quick``: 10 runners with zero latency, 3 with the
realistic profile, one run each, to bench/results/scaleup-quick.md, CI's smoke test).

    .venv/bin/python bench/scaleup.py [--zero 100,1000] [--realistic 100,300] [--runs 3]
        [--quick] [--output PATH]
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
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from _report import command_line, header, run_scope
from prometheus_client import REGISTRY, CollectorRegistry

from scaleset import logs
from scaleset.api import keys
from scaleset.api.crds import all_crds
from scaleset.clock import SystemClock
from scaleset.controllers.ephemeralrunner.observed import observe_runner
from scaleset.controllers.ephemeralrunner.pod import jit_secret, runner_pod, work_folder
from scaleset.controllers.ephemeralrunnerset.runner_body import runner_body
from scaleset.controllers.github_access import ClientOptions, GitHubClients, GitHubTarget
from scaleset.controllers.manager_process import build_manager, client_settings
from scaleset.controllers.options import ControllerOptions
from scaleset.github import GitHubError, RetriesExhausted
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.errors import AlreadyExists, KubeError
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import (
    CONFIG_MAP,
    CUSTOM_RESOURCE_DEFINITION,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    NAMESPACE,
    POD,
    SECRET,
    SERVICE_ACCOUNT,
)

RESULTS = Path(__file__).parent / "results"
SET_NAME = "arc-runner-set"
GITHUB_SECRET = "arc-runner-set-gha-rs-github-secret"  # noqa: S105 (its name)
PAT = "ghp_benchscaleup0123456789abcdef0123"
JIT_PATH = "/generatejitconfig"
MINIMAL_IN_FLIGHT = 64
"""Runners the minimal script handles at once: our EphemeralRunnerSet's creates-in-flight cap."""
RUN_TIMEOUT = 900.0
MAX_FAILED_RUNS = 3
PASSES = ("ephemeralrunnerset", "ephemeralrunner")
REQUESTS_PER_RUNNER_GOAL = 4.5
"""Issue 28: API requests per new runner at QPS 20 (zero latency)."""
UNTHROTTLED_RATIO_GOAL = 1.3
"""Issue 28: 1,000 runners with the client unthrottled, scaleset ÷ the minimal script in the same
run (the minimal script is what the machine allows; an absolute time is not a goal here)."""


# ---------------------------------------------------------------------------- the other processes


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {cpu})


def _serve_apiserver(conn: Connection, kubeconfig: str) -> None:
    """The embedded API server; commands: ("latency", seconds) (0 clears), ("counts",) (the
    requests served by verb and resource since the last ``counts``), ("stop",)."""
    _pin(0)
    from scaleset.embedded.apiserver import EmbeddedApiServer

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with EmbeddedApiServer(history_size=50_000) as server:
            server.write_kubeconfig(kubeconfig)
            conn.send(server.url)
            while True:
                command = await loop.run_in_executor(None, conn.recv)
                if command[0] == "stop":
                    return
                if command[0] == "counts":
                    conn.send(server.faults.request_counts())
                    server.faults.reset_counts()
                    continue
                server.faults.clear()
                if command[1] > 0:
                    server.faults.add_latency(command[1])
                conn.send("ok")

    asyncio.run(main())


def _serve_github(conn: Connection) -> None:
    """The fake GitHub; commands: ("profile", latency, rate, burst), ("scale-set", name, org)
    (a new scale set in a new organization: its config URL and id), ("jit", since), ("stop",).

    ``jit`` answers the wall times and statuses of the generatejitconfig calls since ``since``
    (and forgets the recorded requests)."""
    _pin(0)
    from scaleset.embedded.actions import FakeGitHub

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with FakeGitHub(host="127.0.0.1", port=0, poll_hold_seconds=1.0) as fake:
            fake.add_pat(PAT)
            conn.send("ready")
            faults = fake.control.faults
            while True:
                command = await loop.run_in_executor(None, conn.recv)
                if command[0] == "stop":
                    return
                if command[0] == "profile":
                    _, latency, rate, burst = command
                    faults.clear()
                    if latency > 0:
                        faults.add_latency(latency)
                    if rate > 0:
                        faults.throttle(rate, burst, method="POST", path_contains=JIT_PATH)
                    fake.control.clear_requests()
                    conn.send("ok")
                elif command[0] == "scale-set":
                    _, name, org = command
                    url = fake.config_url(org)
                    conn.send((url, fake.control.create_scale_set(url, name)))
                elif command[0] == "jit":
                    calls = [
                        (r.at, r.status)
                        for r in fake.control.requests_to(JIT_PATH, "POST")
                        if r.at >= command[1]
                    ]
                    fake.control.clear_requests()
                    conn.send(calls)

    asyncio.run(main())


# ---------------------------------------------------------------------------- the matrix


@dataclass(frozen=True)
class Profile:
    name: str
    api_latency: float
    github_latency: float
    jit_rate: float
    """generatejitconfig calls per second GitHub accepts (0: no ceiling)."""
    jit_burst: int

    def describe(self) -> str:
        if not self.api_latency and not self.github_latency and not self.jit_rate:
            return "zero added latency"
        return (
            f"API server +{self.api_latency * 1000:.0f} ms/request, GitHub "
            f"+{self.github_latency * 1000:.0f} ms/call, JIT ceiling {self.jit_rate:g}/s "
            f"(burst {self.jit_burst})"
        )


ZERO = Profile("zero", 0.0, 0.0, 0.0, 1)
REALISTIC = Profile("realistic", 0.010, 0.300, 3.0, 3)


@dataclass(frozen=True)
class Config:
    key: str
    label: str
    qps: float
    burst: int
    set_workers: int | None
    """EphemeralRunnerSet workers (None: the minimal script, no controller)."""
    runner_workers: int = 2
    record: bool = False
    """The minimal script also writes the runner's status record before its pod (L5)."""

    @property
    def minimal(self) -> bool:
        return self.set_workers is None


OURS = Config("ours", "scaleset, its defaults", 20.0, 30, 2)
ARC = Config("arc", "scaleset with ARC's settings", 20.0, 30, 1)
MINIMAL = Config("minimal", "minimal script, QPS 20 / burst 30", 20.0, 30, None)
OURS_FAST = Config("ours-fast", "scaleset, client QPS unlimited", math.inf, 1000, 2)
MINIMAL_FAST = Config("minimal-fast", "minimal script, client QPS unlimited", math.inf, 1000, None)
MINIMAL_FAST_RECORD = Config(
    "minimal-fast-record",
    "minimal script + the status record before the pod, client QPS unlimited",
    math.inf,
    1000,
    None,
    record=True,
)
CONFIGS = (OURS, ARC, MINIMAL, OURS_FAST, MINIMAL_FAST)
"""The rows of one (profile, N) block, in order; the ratios pair ARC's settings/ours,
ours/minimal and ours-fast/minimal-fast. ``MINIMAL_FAST_RECORD`` runs beside them with zero
latency only: how much of the gap the one write scaleset's lifecycle adds costs."""
ALL_CONFIGS = (*CONFIGS, MINIMAL_FAST_RECORD)
"""Every configuration ``--configs`` may name."""


@dataclass
class Run:
    config: Config
    seconds: float
    """Patch -> N pods created."""
    cpu_s: float
    server_cpu_s: float
    github_cpu_s: float
    requests: dict[str, int] = field(default_factory=dict)
    """The controller's (or script's) API requests by verb."""
    jit_ok: list[float] = field(default_factory=list)
    """Seconds after the patch at which each successful generatejitconfig was answered."""
    jit_refused: int = 0
    served: dict[tuple[str, str], int] = field(default_factory=dict)
    """What the API server served meanwhile, by verb and resource (the pod watch included)."""
    passes: dict[str, int] = field(default_factory=dict)
    """Reconciles per controller meanwhile (``PASSES``)."""


# ---------------------------------------------------------------------------- helpers


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _requests_by_verb(registry: CollectorRegistry) -> dict[str, int]:
    counts: dict[str, int] = {}
    for family in registry.collect():
        if family.name != "rest_client_requests":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                method = sample.labels.get("method", "?")
                counts[method] = counts.get(method, 0) + int(sample.value)
    return counts


def _passes(registry: CollectorRegistry, controller: str) -> int:
    """Reconciles a controller has run (``controller_runtime_reconcile_total``)."""
    total = 0.0
    for family in registry.collect():
        if family.name != "controller_runtime_reconcile":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels.get("controller") == controller:
                total += sample.value
    return int(total)


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {
        verb: after[verb] - before.get(verb, 0)
        for verb in after
        if after[verb] > before.get(verb, 0)
    }


async def _until(condition: Callable[[], bool], what: str, within: float = 60.0) -> None:
    deadline = time.perf_counter() + within
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.01)


def runner_set(namespace: str, config_url: str, scale_set_id: int) -> dict[str, Any]:
    """An EphemeralRunnerSet at 0 replicas with ARC's usual runner template."""
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": SET_NAME,
            "namespace": namespace,
            "labels": {
                keys.SCALE_SET_NAME_LABEL: SET_NAME,
                keys.SCALE_SET_NAMESPACE_LABEL: namespace,
                keys.PART_OF_LABEL: keys.PART_OF_VALUE,
                keys.COMPONENT_LABEL: keys.COMPONENT_RUNNER_SET,
            },
            "annotations": {keys.RUNNER_SCALE_SET_NAME_ANNOTATION: SET_NAME},
        },
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": config_url,
                "githubConfigSecret": GITHUB_SECRET,
                "runnerScaleSetId": scale_set_id,
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


@dataclass
class Bench:
    kubeconfig: str
    server_pid: int
    github_pid: int
    api: Connection
    github: Connection
    admin: KubeClient
    index: int = 0

    async def _namespace(self) -> str:
        self.index += 1
        namespace = f"bench-scaleup-{self.index}"
        admin = self.admin
        await admin.create(NAMESPACE, {"metadata": {"name": namespace}})
        with contextlib.suppress(AlreadyExists):  # the server may make them
            await admin.create(
                SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": namespace}}
            )
        with contextlib.suppress(AlreadyExists):  # the server may make them
            await admin.create(
                CONFIG_MAP,
                {
                    "metadata": {"name": "kube-root-ca.crt", "namespace": namespace},
                    "data": {"ca.crt": ""},
                },
            )
        await admin.create(
            SECRET,
            {
                "metadata": {"name": GITHUB_SECRET, "namespace": namespace},
                "type": "Opaque",
                "stringData": {"github_token": PAT},
            },
        )
        # an organization of its own per run: runner names are unique within an organization,
        # and the 5 random characters of generateName repeat one of the thousands registered by
        # earlier runs often enough to fail a run of 1,000 (GitHub answers 409)
        self.github.send(("scale-set", SET_NAME, f"example-org-{self.index}"))
        config_url, scale_set_id = self.github.recv()
        await admin.create(EPHEMERAL_RUNNER_SET, runner_set(namespace, config_url, scale_set_id))
        return namespace

    async def _count_pods(self, namespace: str, runners: int, seen: asyncio.Event) -> float:
        """Watch the namespace's pods; the perf_counter time at which the N-th was created."""
        listed = await self.admin.list(POD, namespace=namespace)
        names = {item.name for item in listed.items}
        async with self.admin.watch(
            POD, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=900
        ) as events:
            seen.set()
            async for event in events:
                if event.type == "ADDED":
                    names.add(event.object.name)
                    if len(names) >= runners:
                        return time.perf_counter()
        raise RuntimeError("the pod watch ended early")

    async def one_run(self, config: Config, runners: int) -> Run:
        namespace = await self._namespace()
        if config.minimal:
            return await self._minimal(config, namespace, runners)
        return await self._controller(config, namespace, runners)

    async def _controller(self, config: Config, namespace: str, runners: int) -> Run:
        options = ControllerOptions(
            controller_namespace=namespace,
            listener_image="ghcr.io/scaleset/scaleset:bench",
            metrics_addr="0",
            health_probe_bind_address="0",
            watch_namespaces=(namespace,),
            leader_election_id="bench-scaleup",
            runner_max_concurrent_reconciles=config.runner_workers,
            k8s_client_qps=config.qps,
            k8s_client_burst=config.burst,
            workers={"ephemeralrunnerset": config.set_workers or 1},
            graceful_shutdown=2.0,  # after the measurement: in-flight work need not finish
            allow_http_github_url=True,  # the fake GitHub serves http
        )
        settings = client_settings(options)
        client = KubeClient.from_kubeconfig(self.kubeconfig, settings=settings)
        election = KubeClient.from_kubeconfig(self.kubeconfig, settings=settings)
        try:
            manager = build_manager(options, client, election, environ=os.environ)
            task = asyncio.ensure_future(manager.run())
            try:
                await _until(
                    lambda: (
                        manager.leading.is_set()
                        and manager.ready()[0]
                        and all(c.running for c in manager.controllers)
                    ),
                    "the controller manager did not start",
                )
                await asyncio.sleep(0.3)
                return await self._measure(
                    config,
                    namespace,
                    runners,
                    lambda: self.admin.patch_merge(
                        EPHEMERAL_RUNNER_SET,
                        ObjectKey(namespace, SET_NAME),
                        {"spec": {"replicas": runners, "patchID": 1}},
                    ),
                    REGISTRY,
                )
            finally:
                manager.stop()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(task, 30)
        finally:
            await client.close()
            await election.close()

    async def _minimal(self, config: Config, namespace: str, runners: int) -> Run:
        metrics = RuntimeMetrics(CollectorRegistry())
        settings = ClientSettings(qps=config.qps, burst=config.burst, field_manager="bench")
        client = KubeClient.from_kubeconfig(self.kubeconfig, settings=settings, metrics=metrics)
        github = GitHubClients(
            client, ClientOptions(clock=SystemClock(), allow_http_github_url=True)
        )
        runner_set_obj = await self.admin.get(EPHEMERAL_RUNNER_SET, ObjectKey(namespace, SET_NAME))
        slots = asyncio.Semaphore(MINIMAL_IN_FLIGHT)

        async def one() -> None:
            async with slots:
                created: KubeObject = await client.create(
                    EPHEMERAL_RUNNER, runner_body(runner_set_obj, 1), namespace=namespace
                )
                runner = observe_runner(created)
                actions = await github.client_for(GitHubTarget.of_runner(runner))
                while True:
                    try:
                        jit = await actions.generate_jit_runner_config(
                            runner.spec.runner_scale_set_id, created.name, work_folder(runner)
                        )
                        break
                    except RetriesExhausted:
                        # refused (403) on every attempt under the ceiling: ask again, as a
                        # controller's requeue would, without waiting more than the client did
                        continue
                await client.create(SECRET, jit_secret(runner, jit), namespace=namespace)
                if config.record:
                    # scaleset's write-ahead record (L5): the status says a pod is about to
                    # exist, guarded by the version just created, before the pod is
                    await client.patch_with_lock(
                        created,
                        {
                            "status": {
                                "phase": "Pending",
                                "runnerId": jit.runner.id,
                                "runnerName": jit.runner.name or created.name,
                            }
                        },
                        status=True,
                    )
                await client.create(
                    POD, runner_pod(runner, user_agent="bench"), namespace=namespace
                )

        async def start() -> None:
            async with asyncio.TaskGroup() as group:
                for _ in range(runners):
                    group.create_task(one())

        try:
            return await self._measure(config, namespace, runners, start, metrics.registry)
        finally:
            await github.aclose()
            await client.close()

    async def _measure(
        self,
        config: Config,
        namespace: str,
        runners: int,
        trigger: Callable[[], Any],
        registry: CollectorRegistry,
    ) -> Run:
        seen = asyncio.Event()
        counting = asyncio.ensure_future(self._count_pods(namespace, runners, seen))
        await seen.wait()
        before = _requests_by_verb(registry)
        passes_before = {name: _passes(registry, name) for name in PASSES}
        self.api.send(("counts",))
        self.api.recv()
        cpu_before = time.process_time()
        server_before = _cpu_seconds(self.server_pid)
        github_before = _cpu_seconds(self.github_pid)
        wall = time.time()
        started = time.perf_counter()
        work = asyncio.ensure_future(trigger())
        try:
            # a failing script (or patch) ends the run at once instead of at the timeout
            await asyncio.wait(
                {counting, work}, timeout=RUN_TIMEOUT, return_when=asyncio.FIRST_EXCEPTION
            )
            if work.done() and work.exception() is not None:
                await work
            if not counting.done():
                raise TimeoutError(f"{runners} pods not created within {RUN_TIMEOUT:.0f} s")
            done_at = counting.result()
            await work
        finally:
            work.cancel()
            counting.cancel()
        cpu = time.process_time() - cpu_before
        server_cpu = _cpu_seconds(self.server_pid) - server_before
        github_cpu = _cpu_seconds(self.github_pid) - github_before
        requests = _delta(_requests_by_verb(registry), before)
        passes = {name: _passes(registry, name) - passes_before[name] for name in PASSES}
        self.api.send(("counts",))
        served: dict[tuple[str, str], int] = self.api.recv()
        self.github.send(("jit", wall - 1.0))
        calls: list[tuple[float, int]] = self.github.recv()
        return Run(
            config,
            done_at - started,
            cpu,
            server_cpu,
            github_cpu,
            requests,
            sorted(at - wall for at, status in calls if status < 300),
            sum(1 for _, status in calls if status == 403),
            served,
            passes,
        )


# ---------------------------------------------------------------------------- running


@dataclass
class Block:
    profile: Profile
    runners: int
    runs: dict[str, list[Run]]
    failed: dict[str, int] = field(default_factory=dict)
    """Runs that failed (a request error, e.g. a timeout on a loaded machine) and were
    repeated, by configuration."""


def _configs_for(profile: Profile, runners: int) -> tuple[Config, ...]:
    """What one (profile, N) block runs, to keep the default run near 20 minutes: with zero
    latency at 1,000 only the unlimited-QPS pair (at QPS 20 the client's rate limit alone
    makes a run take minutes: ~8,000 requests at 20/s), and at every N the unlimited minimal
    script with the status record; under the JIT ceiling no unlimited
    minimal script (the ceiling bounds it exactly as the QPS-20 one), and above 100 runners only
    scaleset's defaults (the minimal script's time under the ceiling is (N - burst) / rate)."""
    if profile is ZERO:
        fast = (OURS_FAST, MINIMAL_FAST) if runners > 300 else CONFIGS
        return (*fast, MINIMAL_FAST_RECORD)
    if runners > 100:
        return (OURS,)
    return (OURS, ARC, MINIMAL, OURS_FAST)


async def run_all(
    kubeconfig: str,
    server: tuple[Connection, int],
    fake: tuple[Connection, int],
    plan: list[tuple[Profile, int]],
    runs: int,
    only: frozenset[str] = frozenset(),
) -> list[Block]:
    api, server_pid = server
    github, github_pid = fake
    admin_metrics = RuntimeMetrics(CollectorRegistry())  # the controller's counts stay its own
    async with KubeClient.from_kubeconfig(
        kubeconfig, settings=ClientSettings(qps=math.inf), metrics=admin_metrics
    ) as admin:
        for crd in all_crds():
            with contextlib.suppress(AlreadyExists):
                await admin.create(CUSTOM_RESOURCE_DEFINITION, crd)
        await asyncio.sleep(0.5)
        bench = Bench(kubeconfig, server_pid, github_pid, api, github, admin)
        blocks = []
        for profile, runners in plan:
            api.send(("latency", profile.api_latency))
            api.recv()
            github.send(("profile", profile.github_latency, profile.jit_rate, profile.jit_burst))
            github.recv()
            block = Block(profile, runners, {})
            for config in _configs_for(profile, runners):
                if only and config.key not in only:
                    continue
                repeats = block.runs.setdefault(config.key, [])
                while len(repeats) < runs:
                    began = time.perf_counter()
                    try:
                        result = await bench.one_run(config, runners)
                    except (KubeError, GitHubError, ExceptionGroup) as error:
                        block.failed[config.key] = block.failed.get(config.key, 0) + 1
                        print(f"{config.label}: run failed ({error!r}), repeating", flush=True)
                        if block.failed[config.key] > MAX_FAILED_RUNS:
                            raise
                        continue
                    repeats.append(result)
                    print(
                        f"{profile.name} N={runners} {config.label}: {result.seconds:.2f} s, "
                        f"CPU {result.cpu_s:.2f} s / server {result.server_cpu_s:.2f} s / "
                        f"GitHub {result.github_cpu_s:.2f} s, "
                        f"requests {result.requests}, JIT ok {len(result.jit_ok)} "
                        f"refused {result.jit_refused}; served {sorted(result.served.items())}; "
                        f"whole run {time.perf_counter() - began:.1f} s",
                        flush=True,
                    )
            blocks.append(block)
        api.send(("latency", 0.0))
        api.recv()
        return blocks


# ---------------------------------------------------------------------------- the table


def _stat(values: list[float], spec: str, unit: str = "") -> str:
    """``median unit`` and, over more than one run, ``(min–max)``."""
    text = f"{statistics.median(values):{spec}}{unit}"
    if len(values) > 1:
        text += f" ({min(values):{spec}}–{max(values):{spec}})"
    return text


def saturation(run: Run, profile: Profile) -> float | None:
    """Share of the JIT ceiling the run used: the shortest time the ceiling allows for its
    successful calls (the burst at once, the rest at the rate) over the time they took."""
    if not profile.jit_rate or len(run.jit_ok) <= 10 * profile.jit_burst:
        return None  # within a few bursts the ceiling is never reached
    ideal = max(0, len(run.jit_ok) - profile.jit_burst) / profile.jit_rate
    return ideal / run.jit_ok[-1] if run.jit_ok[-1] > 0 else None


def _ratio(block: Block, top: str, bottom: str) -> list[float]:
    """Per-run ratios of two configurations' times (runs paired in order)."""
    tops, bottoms = block.runs.get(top, []), block.runs.get(bottom, [])
    return [a.seconds / b.seconds for a, b in zip(tops, bottoms, strict=False)]


def _cpu_ratio(block: Block, top: str, bottom: str) -> list[float]:
    """Per-run ratios of two configurations' CPU seconds (runs paired in order)."""
    tops, bottoms = block.runs.get(top, []), block.runs.get(bottom, [])
    return [a.cpu_s / b.cpu_s for a, b in zip(tops, bottoms, strict=False) if b.cpu_s > 0]


def _paired(block: Block, top: str, bottom: str) -> tuple[float, float]:
    """The median of the per-run wall-time ratios and of the CPU ratios (as the goals table
    computes them), so prose and table give one number."""
    return (
        statistics.median(_ratio(block, top, bottom)),
        statistics.median(_cpu_ratio(block, top, bottom)),
    )


def _requests(run: Run) -> float:
    return float(sum(run.requests.values()))


def _writes(run: Run) -> float:
    return float(sum(v for k, v in run.requests.items() if k in ("POST", "PATCH", "PUT", "DELETE")))


@dataclass
class Goals:
    lines: list[str] = field(default_factory=list)

    def add(self, goal: str, value: str, met: bool) -> None:
        self.lines.append(f"| {goal} | {value} | {'met' if met else '**missed**'} |")


def write(
    blocks: list[Block], runs: int, command: str, scope: str, load: float, out: Path
) -> Goals:
    lines = [
        "# Scale-up to runner pods: scaleset, scaleset with ARC's settings, the minimal script",
        "",
        "Written by `bench/scaleup.py` (issue 19, items 1-3). The embedded API server and the",
        "fake GitHub run in processes of their own pinned to core 0; the controller manager, built",
        "as `scaleset controller` builds it (every registered reconciler; the EphemeralRunnerSet",
        "and EphemeralRunner controllers do the work), or the minimal script, in this process on",
        "core 1, over HTTP on loopback. Clock: from the listener's replicas patch to the N-th",
        "runner pod seen created by a watch (each runner: EphemeralRunner, JIT config, JIT",
        "Secret, Pod). The ratios, taken within one run, are the figures to compare; absolute",
        "times move with the machine's load (in the header).",
        "",
        *header(command, scope, load_at_start=load),
        f"- runs: {runs} per configuration, each cell the median (min–max) over them; ratios are",
        "  per pair of runs (same index), then the median (min–max) of those",
        "",
        "| profile | N | configuration | patch -> N pods | pods/s | ratio | JIT ok/s; ÷ ceiling "
        "| JIT 403s | API requests (writes) | CPU: this process / API server / fake GitHub |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for block in blocks:
        profile, n = block.profile, block.runners
        for key, repeats in block.runs.items():
            config = repeats[0].config
            label = config.label
            if block.failed.get(key):
                label += f" ({block.failed[key]} failed run(s) repeated)"
            ratio = "–"
            if key == "ours" and "minimal" in block.runs:
                ratio = "÷ minimal " + _stat(_ratio(block, "ours", "minimal"), ".2f")
            elif key == "arc" and "ours" in block.runs:
                ratio = "÷ ours " + _stat(_ratio(block, "arc", "ours"), ".2f")
            elif key == "ours-fast" and "minimal-fast" in block.runs:
                ratio = "÷ minimal " + _stat(_ratio(block, "ours-fast", "minimal-fast"), ".2f")
                if "minimal-fast-record" in block.runs:
                    ratio += "; ÷ minimal + record " + _stat(
                        _ratio(block, "ours-fast", "minimal-fast-record"), ".2f"
                    )
            elif key == "minimal-fast-record" and "minimal-fast" in block.runs:
                ratio = "÷ minimal " + _stat(
                    _ratio(block, "minimal-fast-record", "minimal-fast"), ".2f"
                )
            jit = "–"
            sats = [s for s in (saturation(r, profile) for r in repeats) if s is not None]
            if sats:
                rates = [len(r.jit_ok) / r.jit_ok[-1] for r in repeats if r.jit_ok]
                jit = f"{_stat(rates, '.2f')}; {_stat([100 * s for s in sats], '.0f', ' %')}"
            cpu = _stat([r.cpu_s for r in repeats], ".1f", " s")
            server_cpu = _stat([r.server_cpu_s for r in repeats], ".1f", " s")
            github_cpu = _stat([r.github_cpu_s for r in repeats], ".1f", " s")
            lines.append(
                f"| {profile.name} | {n:,} | {label} | "
                f"{_stat([r.seconds for r in repeats], '.2f', ' s')} | "
                f"{_stat([n / r.seconds for r in repeats], ',.1f')} | {ratio} | {jit} | "
                f"{_stat([float(r.jit_refused) for r in repeats], '.0f')} | "
                f"{_stat([_requests(r) for r in repeats], ',.0f')} "
                f"({_stat([_writes(r) for r in repeats], ',.0f')}) | "
                f"{cpu} / {server_cpu} / {github_cpu} |"
            )
    lines += [
        "",
        "What the API server served during the first run of each row, per runner (verb",
        "resource; the benchmark's own pod watch and replicas patch included):",
        "",
    ]
    for block in blocks:
        for repeats in block.runs.values():
            served = sorted(repeats[0].served.items(), key=lambda item: -item[1])
            text = ", ".join(
                f"{verb} {resource} {count / block.runners:.2f}"
                for (verb, resource), count in served
                if count / block.runners >= 0.05
            )
            lines.append(
                f"- {block.profile.name}, N={block.runners:,}, {repeats[0].config.label}: {text}"
            )
    goals = Goals()
    for block in blocks:
        profile, n = block.profile, block.runners
        if profile is ZERO and "ours" in block.runs:
            per_runner = statistics.median(_requests(r) for r in block.runs["ours"]) / n
            goals.add(
                f"zero latency, N={n:,}: API requests per new runner at QPS "
                f"{OURS.qps:g} ≤ {REQUESTS_PER_RUNNER_GOAL:g} ({OURS.label})",
                f"{per_runner:.2f}",
                per_runner <= REQUESTS_PER_RUNNER_GOAL,
            )
        if profile is ZERO and n >= 1000:
            fast = _ratio(block, "ours-fast", "minimal-fast")
            if fast:
                cpu_ratios = _cpu_ratio(block, "ours-fast", "minimal-fast")
                value = statistics.median(fast)
                shown = f"{value:.2f}"
                if cpu_ratios:
                    shown += f" (CPU {statistics.median(cpu_ratios):.2f})"
                goals.add(
                    f"zero latency, N={n:,}, client unthrottled: scaleset ÷ minimal script "
                    f"≤ {UNTHROTTLED_RATIO_GOAL:g} (wall; CPU ratio beside it)",
                    shown,
                    value <= UNTHROTTLED_RATIO_GOAL,
                )
        if profile.jit_rate:
            for key in ("ours", "ours-fast"):
                shares = [
                    share
                    for share in (saturation(r, profile) for r in block.runs.get(key, []))
                    if share is not None
                ]
                if shares:
                    share = statistics.median(shares)
                    goals.add(
                        f"{profile.name}, N={n:,}: JIT ceiling ≥ 95 % used "
                        f"({block.runs[key][0].config.label})",
                        f"{100 * share:.1f} %",
                        share >= 0.95,
                    )
        ratios = _ratio(block, "ours", "minimal")
        if ratios:
            value = statistics.median(ratios)
            goals.add(
                f"{profile.name}, N={n:,}: {OURS.label} ÷ minimal ≤ 2.0 (issue 19)",
                f"{value:.2f}",
                value <= 2.0,
            )
    lines += [
        "",
        "Profiles: "
        + "; ".join(f"**{p.name}** — {p.describe()}" for p in (ZERO, REALISTIC))
        + ". Over the JIT ceiling the fake answers as GitHub's secondary rate limit (403, "
        "Retry-After in whole seconds); our GitHub client waits that long and retries.",
        "",
        "## Goals",
        "",
        "| goal | measured (median) | |",
        "| --- | ---: | --- |",
        *goals.lines,
        "",
        *where_time_goes(blocks),
        *(TRIED if any(b.runs.get("ours-fast") for b in blocks) else []),
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    return goals


TRIED = [
    "## What was tried for the unthrottled ratio",
    "",
    "- The work queue's token bucket limits rate-limited re-adds only, no longer every "
    "hand-out of a key.",
    "- A runner just created is planned on the cached copy (no GET), and its JIT Secret is not "
    "read before its pod has started its runner.",
    "- The EphemeralRunnerSet's reconcile after a child's event waits a moment, so a burst of "
    "child events costs it one pass (its reconciles per runner are above).",
    "- The EphemeralRunnerSet keeps a memo of its view of the runners between passes.",
    "- More EphemeralRunner workers: under the soak's load 4 instead of 2 started runners no "
    "sooner (`start_profile-runner-workers4.md`, that option's run, beside `start_profile.md`).",
    "- The client hands its QPS out in turn per controller and namespace: that moves the "
    "throttled rows, not this unthrottled one.",
    "- Left: the status record before the pod, the one write per runner the minimal script "
    "does not make (the configuration with it is measured above). Folding it into the JIT "
    "Secret's creation would remove it; the controller skips every read of a runner with no "
    "record (no record means no pod and no Secret), and the registration pass and the "
    "scale-down read the runner id from it, so each would have to learn it from the Secret.",
    "",
]
"""What was done and weighed for the unthrottled goal, as text with no figures."""


def where_time_goes(blocks: list[Block]) -> list[str]:
    """The arithmetic behind the times: requests per runner against the client's rate limit,
    CPU against wall time, JIT calls against the ceiling — from this run's numbers."""
    lines = ["## Where the time goes", ""]
    for block in blocks:
        n, profile = block.runners, block.profile
        parts = []
        for key in ("ours", "arc", "minimal"):
            repeats = block.runs.get(key)
            if not repeats or math.isinf(repeats[0].config.qps):
                continue
            config = repeats[0].config
            per_runner = statistics.median(_requests(r) for r in repeats) / n
            floor = max(0.0, n * per_runner - config.burst) / config.qps
            parts.append(
                f"{config.label}: {per_runner:.1f} requests per runner, so about "
                f"{floor:.1f} s at {config.qps:g} QPS (measured "
                f"{statistics.median(r.seconds for r in repeats):.1f} s)"
            )
        for key in ("ours-fast", "minimal-fast", "minimal-fast-record"):
            repeats = block.runs.get(key)
            if not repeats:
                continue
            busy = statistics.median(r.cpu_s / r.seconds for r in repeats)
            set_passes = statistics.median(r.passes.get("ephemeralrunnerset", 0) for r in repeats)
            runner_passes = statistics.median(r.passes.get("ephemeralrunner", 0) for r in repeats)
            server = statistics.median(r.server_cpu_s / r.seconds for r in repeats)
            parts.append(
                f"{repeats[0].config.label}: this process busy {100 * busy:.0f} % of the wall "
                f"time, the API server {100 * server:.0f} %"
                + (
                    f", {set_passes:,.0f} EphemeralRunnerSet and {runner_passes:,.0f} "
                    "EphemeralRunner reconciles"
                    if set_passes
                    else ""
                )
            )
        if profile.jit_rate:
            for key in ("ours", "arc", "ours-fast", "minimal"):
                repeats = block.runs.get(key)
                if not repeats or not repeats[0].jit_ok:
                    continue
                rates = [len(r.jit_ok) / r.jit_ok[-1] for r in repeats if r.jit_ok]
                refused = statistics.median(r.jit_refused for r in repeats)
                parts.append(
                    f"{repeats[0].config.label}: {statistics.median(rates):.2f} JIT configs/s "
                    f"against a ceiling of {profile.jit_rate:g}/s, {refused:.0f} refused (403)"
                )
        if parts:
            lines.append(f"- {profile.name}, N={n:,}: " + "; ".join(parts) + ".")
    lines += ["", *_explanations(blocks), ""]
    return lines


def _median_requests_per_runner(block: Block, key: str) -> float | None:
    repeats = block.runs.get(key)
    if not repeats:
        return None
    return statistics.median(_requests(r) for r in repeats) / block.runners


def _explanations(blocks: list[Block]) -> list[str]:
    """What the numbers above say, sentence by sentence, from this run's numbers only."""
    out: list[str] = []
    for block in blocks:
        n, profile = block.runners, block.profile
        ours = _median_requests_per_runner(block, "ours")
        minimal = _median_requests_per_runner(block, "minimal")
        if ours is not None and minimal is not None:
            out.append(
                f"- {profile.name}, N={n:,}: per runner the minimal script sent {minimal:.1f} "
                f"requests (by design: create the EphemeralRunner, its JIT Secret and its Pod; "
                f"the GitHub config Secret once per burst) and scaleset {ours:.1f} "
                f"({ours / minimal:.2f}×); under the same client rate limit, once its burst "
                f"of {OURS.burst} is spent, time is about requests ÷ QPS, so with many runners "
                "the ratio of times approaches the ratio of requests."
            )
        arc_ratio = _ratio(block, "arc", "ours")
        if arc_ratio:
            out.append(
                f"- {profile.name}, N={n:,}: scaleset with ARC's settings differs from its "
                f"defaults only in the EphemeralRunnerSet's workers ({ARC.set_workers} vs "
                f"{OURS.set_workers}); time ÷ ours: {statistics.median(arc_ratio):.2f}."
            )
        fast = block.runs.get("ours-fast")
        if fast:
            cpu = statistics.median(r.cpu_s for r in fast)
            wall = statistics.median(r.seconds for r in fast)
            sets = statistics.median(r.passes.get("ephemeralrunnerset", 0) for r in fast)
            runners = statistics.median(r.passes.get("ephemeralrunner", 0) for r in fast)
            minimal_fast = block.runs.get("minimal-fast")
            recorded = block.runs.get("minimal-fast-record")
            against = ""
            record: list[str] = []
            busy = statistics.median(r.cpu_s / r.seconds for r in fast)
            if minimal_fast:
                m_cpu = statistics.median(r.cpu_s for r in minimal_fast)
                m_wall = statistics.median(r.seconds for r in minimal_fast)
                wall_x, cpu_x = _paired(block, "ours-fast", "minimal-fast")
                against = (
                    f"; the minimal script: {m_wall:.1f} s wall, {m_cpu:.1f} CPU s "
                    f"(scaleset ÷ minimal, medians of the runs' ratios: wall {wall_x:.2f}, "
                    f"CPU {cpu_x:.2f})"
                )
            if minimal_fast and recorded:
                r_wall = statistics.median(r.seconds for r in recorded)
                r_cpu = statistics.median(r.cpu_s for r in recorded)
                rec_wall, rec_cpu = _paired(block, "minimal-fast-record", "minimal-fast")
                ours_wall, ours_cpu = _paired(block, "ours-fast", "minimal-fast-record")
                record.append(
                    f"- {profile.name}, N={n:,}, client QPS unlimited: the minimal script with "
                    "the one more write scaleset's lifecycle makes per runner (the guarded "
                    f"status record before the pod, L5): {r_wall:.1f} s wall, {r_cpu:.1f} CPU "
                    f"s, {rec_wall:.2f}× the minimal script's wall time and {rec_cpu:.2f}× its "
                    f"CPU. Against it scaleset's wall time is {ours_wall:.2f}× and its CPU "
                    f"{ours_cpu:.2f}× (medians of the runs' ratios): what is left after that "
                    "write is the controller's own work (watches, caches, plans, two queues)."
                )
            out.append(
                f"- {profile.name}, N={n:,}, client QPS unlimited: scaleset {wall:.1f} s wall, "
                f"{cpu:.1f} CPU s of this process ({100 * busy:.0f} % busy), "
                f"{sets / n:.2f} EphemeralRunnerSet and {runners / n:.2f} EphemeralRunner "
                f"reconciles per runner{against}."
            )
            out.extend(record)
        if profile.jit_rate and ours is not None:
            rate = OURS.qps / ours
            binds = "the client's rate limit" if rate < profile.jit_rate else "the JIT ceiling"
            out.append(
                f"- {profile.name}, N={n:,}: at QPS {OURS.qps:g} and {ours:.1f} requests per "
                f"runner the client allows {rate:.1f} runners/s against the JIT ceiling's "
                f"{profile.jit_rate:g}/s: {binds} binds first."
            )
    if out:
        out.append(
            "- The request counts include the lease's renewals during a run (its own client "
            "and limiter). The machine's load is in the header: when other work shares the "
            "cores, wall and CPU times both grow, and only ratios within one run compare."
        )
    return out


def _counts(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if any(v < 1 for v in values):
        raise ValueError(text)
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--zero", type=_counts, default=[100, 1000], help="N, zero latency")
    parser.add_argument("--realistic", type=_counts, default=[100, 300], help="N, realistic")
    parser.add_argument("--runs", type=int, default=3, help="runs per configuration (median)")
    parser.add_argument("--quick", action="store_true", help="10 / 3 runners, 1 run: a smoke test")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    parser.add_argument(
        "--configs",
        default="",
        help="only these configurations, comma-separated keys ("
        + ", ".join(c.key for c in ALL_CONFIGS)
        + "; default: all that apply), e.g. to profile one with py-spy",
    )
    args = parser.parse_args(argv)
    scope = run_scope(parser, argv)
    command = command_line("bench/scaleup.py", argv)
    only = frozenset(part.strip() for part in args.configs.split(",") if part.strip())
    unknown = only - {c.key for c in ALL_CONFIGS}
    if unknown:
        parser.error(f"unknown configurations: {', '.join(sorted(unknown))}")
    if args.quick:
        args.zero, args.realistic, args.runs = [10], [3], 1
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    logs.configure("error", "text")
    load = os.getloadavg()[0]
    plan = [(ZERO, n) for n in args.zero] + [(REALISTIC, n) for n in args.realistic]
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        api, api_child = multiprocessing.Pipe()
        server = multiprocessing.Process(
            target=_serve_apiserver, args=(api_child, kubeconfig), daemon=True
        )
        github, github_child = multiprocessing.Pipe()
        fake = multiprocessing.Process(target=_serve_github, args=(github_child,), daemon=True)
        server.start()
        fake.start()
        api.recv()
        github.recv()
        _pin(1)
        try:
            assert server.pid is not None
            assert fake.pid is not None
            blocks = asyncio.run(
                run_all(
                    kubeconfig,
                    (api, server.pid),
                    (github, fake.pid),
                    plan,
                    args.runs,
                    only,
                )
            )
        finally:
            api.send(("stop",))
            github.send(("stop",))
            server.join(10)
            fake.join(10)
    out = args.output or RESULTS / ("scaleup-quick.md" if args.quick else "scaleup.md")
    write(blocks, args.runs, command, scope, load, out)
    print(out.read_text())
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
