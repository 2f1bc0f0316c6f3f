"""The whole system for the process-level benchmarks (issue 19, items 7–10), each part measurable.

``scaleset demo`` runs the controller manager and the listener inside the demo's own process, so
their memory and CPU cannot be told apart there. Here the same demo system (``DemoSystem``: the
fake GitHub Actions service, the simulated kubelet and runner, the CRDs, namespaces, Secret and
AutoscalingRunnerSet) is wired to:

- an embedded API server in **its own process** (``scaleset apiserver``), controlled over HTTP
  (``/_scaleset/faults``: compact, drop_watches; ``/_scaleset/access``: the access log by
  User-Agent);
- the controller manager in **its own process** (``_controller_child.py``: what ``scaleset
  controller`` runs, next to an event-loop ticker that appends one JSON sample per interval);
- optionally the listener in **its own process** (``scaleset listener`` from the pod's config
  file, as a cluster runs it) instead of inside the simulated kubelet;
- optionally an idle runner program (the container runs until stopped, never connects to
  GitHub) when only the cache size matters.

Nothing here changes the product: the controller and listener are the real entry points with
their real flags; the hooks are around them (a ticker on the same loop, /proc readings).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ctypes
import json
import math
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _report
import yaml

from scaleset.clock import SystemClock
from scaleset.demo.system import LISTENER_IMAGE, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.embedded.actions.faults import FaultInjector, Surface
from scaleset.embedded.apiserver._access import AccessEntry, entries_from_document
from scaleset.embedded.kubelet import ContainerRuntime
from scaleset.embedded.kubelet.programs import ContainerRun, Program, until_stopped
from scaleset.embedded.kubelet.runner_program import RUNNER_IMAGES
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD
from scaleset.listener.config import CONFIG_PATH_ENV

CHILD = Path(__file__).with_name("_controller_child.py")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG = 1
PAGE = os.sysconf("SC_PAGE_SIZE")


def die_with_parent() -> None:
    """``preexec_fn`` of every child: SIGKILL when the benchmark process dies (however it dies),
    so no API server, controller or listener outlives an interrupted run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# ---------------------------------------------------------------------------- /proc readings
def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss(pid: int) -> int:
    """Resident set size in bytes."""
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


def proc_rss_parts(pid: int) -> dict[str, int]:
    """The resident set by kind, bytes (``/proc/<pid>/status``): ``anon`` (the heap: objects,
    the allocator's free arenas), ``file`` (mapped files: the interpreter's and extension
    modules' code) and ``shmem``."""
    parts: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile", "RssShmem"):
            parts[name.removeprefix("Rss").lower()] = int(value.split()[0]) * 1024
    return parts


# ---------------------------------------------------------------------------- API server process
class ApiServerProcess:
    """``scaleset apiserver`` in its own process; faults and the access log over HTTP."""

    def __init__(self, workdir: Path) -> None:
        self.kubeconfig = workdir / "apiserver.kubeconfig"
        self._log = (workdir / "apiserver.log").open("wb")
        command = ["-m", "scaleset", "apiserver", "--port", "0", "--kubeconfig"]
        self.process = subprocess.Popen(
            [sys.executable, *command, str(self.kubeconfig)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + 60
        while not self.kubeconfig.is_file() or not self.kubeconfig.read_text().strip():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the API server did not start (see {workdir}/apiserver.log)")
            time.sleep(0.05)
        document = yaml.safe_load(self.kubeconfig.read_text())
        cluster = document["clusters"][0]["cluster"]
        self.url: str = cluster["server"]
        self._token: str = document["users"][0]["user"]["token"]
        self._tls = ssl.create_default_context()
        authority = cluster.get("certificate-authority-data")
        if authority:
            self._tls = ssl.create_default_context(cadata=base64.b64decode(authority).decode())

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - loopback, our own server
            self.url + path,
            data=data,
            method=method,
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self._token}",  # the control routes want it too
            },
        )
        with urllib.request.urlopen(request, timeout=30, context=self._tls) as answer:  # noqa: S310
            return json.loads(answer.read() or b"{}")

    def fault(self, action: str, **fields: Any) -> None:
        self._call("POST", "/_scaleset/faults", {"action": action, **fields})

    def relist_everyone(self) -> None:
        """Forget the watch history and end every watch: each informer's next watch gets 410
        Gone and relists."""
        self.fault("compact")
        self.fault("drop_watches")

    def access(self) -> dict[AccessEntry, int]:
        return entries_from_document(self._call("GET", "/_scaleset/access"))

    def clear_access(self) -> None:
        self._call("DELETE", "/_scaleset/access")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


# ---------------------------------------------------------------------------- controller process
@dataclass(frozen=True)
class Sample:
    """One interval of the controller process."""

    at: float
    """Wall time (``time.time()``) at the end of the interval."""
    lag: float
    """Largest event-loop lag in the interval (seconds of wall time a tick came late)."""
    lag_cpu: float
    """The loop thread's CPU time during that late tick (what our own code held the loop for;
    the rest of the lag is time the OS gave the core to other processes)."""
    cpu: float
    """The process's CPU seconds so far."""
    rss: int
    """Resident set size, bytes."""
    traced: int | None = None
    """Bytes tracemalloc traces (only when the controller is traced)."""
    traced_peak: int | None = None
    """The most bytes tracemalloc has traced at once so far (only when traced)."""


class ControllerProcess:
    """The controller manager in its own process, with its loop-lag and resource samples."""

    def __init__(
        self, workdir: Path, options: dict[str, Any], env: dict[str, str], *, tick: float
    ) -> None:
        self.samples_path = workdir / f"controller-{time.monotonic_ns()}.jsonl"
        self.samples_path.touch()
        self._log = (workdir / "controller.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(self.samples_path), json.dumps(options), str(tick)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            preexec_fn=die_with_parent,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def samples(self) -> list[Sample]:
        lines = self.samples_path.read_text().splitlines()
        out = []
        for line in lines:
            with contextlib.suppress(ValueError):
                out.append(Sample(**json.loads(line)))
        return out

    def alive(self) -> bool:
        return self.process.poll() is None

    async def stop(self, *, kill: bool = False) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            for _ in range(400):
                if self.process.poll() is not None:
                    break
                await asyncio.sleep(0.05)
            else:
                self.process.kill()
                self.process.wait()
        self._log.close()


def controller_options(
    system: DemoSystem, kubeconfig: Path, *, qps: float, burst: int
) -> dict[str, Any]:
    """The demo's controller settings (``DemoSystem.start_controller``), as keyword arguments of
    ``ControllerOptions``."""
    return {
        "controller_namespace": system.controller_namespace,
        "listener_image": LISTENER_IMAGE,
        "kubeconfig": str(kubeconfig),
        "log_level": "warn",
        "health_probe_bind_address": "0",
        "metrics_addr": "0",
        "lease_duration": 15.0,
        "renew_deadline": 10.0,
        "retry_period": 2.0,
        "identity": f"bench-{os.getpid()}",
        "watch_namespaces": list(system.watch_namespaces),
        "k8s_client_qps": qps,
        "k8s_client_burst": burst,
        "listener_metrics_addr": "0",
        "allow_http_github_url": True,  # the fake GitHub serves http
    }


# ---------------------------------------------------------------------------- the system
class BenchSystem(DemoSystem):
    """The demo system with the controller (and optionally the listener) in its own process."""

    def __init__(
        self,
        workdir: Path,
        api: ApiServerProcess,
        *,
        min_runners: int,
        max_runners: int,
        grace: float = 5.0,
        idle_runners: bool = False,
        listener_process: bool = False,
        qps: float = 200.0,
        burst: int = 400,
        tick: float = 0.005,
        controller_env: dict[str, str] | None = None,
        controller_overrides: dict[str, Any] | None = None,
    ) -> None:
        """``tick``: the controller process's loop-lag ticker period (a coarse one for CPU
        measurements, so the ticker's own wake-ups stay negligible); ``controller_overrides``:
        ``ControllerOptions`` fields to set beyond the demo's (a traced run's long lease)."""
        clock = SystemClock()
        super().__init__(
            clock=clock,
            truth=Truth(zombie_bound=grace + 5.0),
            min_runners=min_runners,
            max_runners=max_runners,
            grace=grace,
            kubeconfig=api.kubeconfig,
            started_at=clock.monotonic(),
        )
        self.workdir = workdir
        self.api = api
        self.idle_runners = idle_runners
        self.listener_process = listener_process
        self.qps, self.burst, self.tick = qps, burst, tick
        self.controller_env = controller_env or {}
        self.controller_overrides = controller_overrides or {}
        self.controller: ControllerProcess | None = None
        self.listener_pids: list[int] = []

    async def start_controller(self) -> None:
        options = controller_options(self, self.kubeconfig, qps=self.qps, burst=self.burst)
        options.update(self.controller_overrides)
        env = {"SCALESET_JOB_COMPLETION_GRACE": str(self.grace), **self.controller_env}
        self.controller = ControllerProcess(self.workdir, options, env, tick=self.tick)

    async def stop_controller(self) -> None:
        if self.controller is not None:
            await self.controller.stop()
            self.controller = None

    async def kill_controller(self) -> None:
        if self.controller is not None:
            await self.controller.stop(kill=True)
            self.controller = None

    def _runtime(self) -> ContainerRuntime:
        runner = until_stopped() if self.idle_runners else self._runner_program()
        runtime = ContainerRuntime(default=None)
        for pattern in RUNNER_IMAGES:
            runtime = runtime.with_program(pattern, runner)
        listener = self._listener_subprocess() if self.listener_process else None
        return runtime.with_program(
            "ghcr.io/scaleset/scaleset*", listener or self._listener_program()
        )

    def _listener_subprocess(self) -> Program:
        """The listener container as ``scaleset listener`` in a process of its own."""

        async def program(run: ContainerRun) -> int:
            path = run.env.get(CONFIG_PATH_ENV, "")
            data = run.files.get(path) if path else None
            if data is None:
                return 1
            fd, config = tempfile.mkstemp(dir=self.workdir, prefix="listener-", suffix=".json")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            log = (self.workdir / "listener.log").open("ab")
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "scaleset",
                "listener",
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
                env={**os.environ, CONFIG_PATH_ENV: config, "KUBECONFIG": str(self.kubeconfig)},
            )
            self.listener_pids.append(process.pid)
            stop = asyncio.ensure_future(run.stop.wait())
            done = asyncio.ensure_future(process.wait())
            try:
                await asyncio.wait({stop, done}, return_when=asyncio.FIRST_COMPLETED)
                if not done.done():
                    process.terminate()
                return await done
            finally:
                stop.cancel()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
                log.close()

        return program


@contextlib.contextmanager
def workdir(name: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"scaleset-bench-{name}-") as tmp:
        yield Path(tmp)


# ---------------------------------------------------------------------------- shared helpers
def header(command: str, scope: str, *, load_at_start: float | None = None) -> list[str]:
    """The lines that make a result comparable (``_report.header``): machine, date, the exact
    command (``_report.command_line``), the run's scope (``_report.run_scope``), the load."""
    return _report.header(command, scope, load_at_start=load_at_start)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def runner_pods(system: DemoSystem) -> list[KubeObject]:
    """The pods in the runner namespace (runner pods only: listeners live elsewhere)."""
    assert system.client is not None
    return (await system.client.list(POD, namespace=system.runner_namespace)).items


async def runners(system: DemoSystem) -> list[KubeObject]:
    assert system.client is not None
    return (await system.client.list(EPHEMERAL_RUNNER, namespace=system.runner_namespace)).items


def running(pod: KubeObject) -> bool:
    status = pod.raw.get("status") or {}
    return status.get("phase") == "Running" and not pod.raw["metadata"].get("deletionTimestamp")


async def wait_for_idle_runners(system: DemoSystem, count: int, within: float) -> float:
    """Wait until ``count`` runner pods are Running (and no more); returns seconds waited."""
    started = time.monotonic()
    last = -1
    while True:
        pods = await runner_pods(system)
        up = sum(1 for pod in pods if running(pod))
        if up == count and len(pods) == count:
            return time.monotonic() - started
        if time.monotonic() - started > within:
            raise TimeoutError(f"{up}/{count} runner pods Running after {within:.0f}s")
        if up // 500 != last // 500 or (count < 500 and up != last):
            say(f"  {up}/{count} runner pods Running ({time.monotonic() - started:.0f}s)")
            last = up
        await asyncio.sleep(0.5 if count < 500 else 3.0)


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


PROFILES = ("zero", "realistic")
"""Issue 19: every benchmark runs with zero added latency and with a realistic profile."""
REALISTIC = (
    "API server +10 ms per request; GitHub +300 ms per call (REST, Actions admin and message "
    "queue; the runners' own broker calls unchanged); JIT configs throttled to 3/s (burst 10), "
    "over it GitHub's secondary-rate-limit 403"
)


def apply_profile(system: DemoSystem, api: ApiServerProcess, profile: str) -> None:
    """Add the profile's latencies and limits to a started system (``zero``: nothing)."""
    if profile == "zero":
        return
    if profile != "realistic":
        raise ValueError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    assert system.fake is not None
    api.fault("latency", seconds=API_LATENCY)
    apply_github_profile(system.fake.control.faults)


API_LATENCY = 0.010
"""The realistic profile's added latency per API server request (seconds)."""


def apply_github_profile(faults: FaultInjector) -> None:
    """The realistic profile's GitHub side on a fake GitHub's faults: +300 ms per call, JIT
    configs throttled to 3/s (burst 10)."""
    for surface in (Surface.GITHUB, Surface.ACTIONS, Surface.MESSAGE_QUEUE):
        faults.add_latency(0.300, surface=surface)
    faults.throttle(3.0, 10, surface=Surface.ACTIONS, path_contains="generatejitconfig")
