"""Where a runner's start goes under the soak's load: hop by hop, CPU by process and component.

The question (issue 28): in a 1,000-job soak (``scaleset demo --chaos soak``, 40 runners), many
runners were "starting" at any moment and the jobs finished more slowly than 40 runners could run
them. This script runs the same system the soak runs — ``run_demo_report``: the embedded API server
(a thread of the demo process), the fake GitHub service, the simulated kubelet and runners, the
real listener (all in the demo process, on its event loop) and the real controller manager in a
process of its own (as the soak starts it) — under the soak's workload: 1,000 jobs over 120 s, half
at a steady rate and half in three bursts, each 0.5–2.5 s long, on ``0:40`` runners. The soak's
faults are off by default (a fault is not start cost): ``--chaos soak`` puts them back (the soak
exactly).

What it measures, all from ground truth the system keeps or records as it happens:

- **Hops of each runner's start**, wall times of: the listener's EphemeralRunnerSet patch whose
  ``patchID`` the new EphemeralRunner carries; the EphemeralRunner, its JIT Secret, its status
  record and its pod as each is stored; the pod bound and shown running; the controller's
  ``runnerStartedAt``; the listener's ``Running``. These are taken in the embedded API server
  at the moment each write is stored (a listener on its store), with the writer's User-Agent
  (the access log's record, carried to the store in a context variable); the request's time
  inside the server (arrival → stored) is kept per writer. Kubernetes timestamps (one-second
  precision) are not used. From the fake GitHub service: the generatejitconfig request's arrival
  and answer (timed around its dispatcher), the runner's registration, the job's assignment,
  start and finish, and when its JobStarted was delivered to the listener. From the simulated
  node (the demo's ``Truth``): when the runner process started, connected and exited.
- **CPU seconds per process** over the job window (first job queued → last job finished): the
  controller process (``/proc``) and the demo process; the demo process split by thread (each
  thread's own CPU clock: the API server's thread, the event-loop thread, the profiler's), and
  the event-loop thread split by component by a sampling profiler (``LoopProfiler``): a POSIX
  timer on that thread's own CPU clock sends it ``SIGPROF`` every ``--sample-interval`` CPU
  seconds, and the handler charges them to the innermost component module on the interrupted
  stack (scaleset.listener, scaleset.embedded.actions, the simulated kubelet and runner, the
  demo's judge; else the library it was in). Not ``setitimer(ITIMER_PROF)``: that counts the
  whole process's CPU while Python runs the handler on the main thread only, so the API server
  thread's CPU would be charged to whatever the loop thread was doing.
- **Throughput**: jobs per second over the job window, the runners by state (the demo's own
  samples, L0's classifier) and, by Little's law, how many runners each hop holds on average.
- **Event-loop lag** of the demo's loop and the API server's loop (a 50 ms ticker on each).

Hooks, not changes: the store listener, the access-log wrapper and the dispatcher timer run in
the demo process and are charged to it (the store listener's own CPU is measured and shown).

Writes a Markdown report to bench/results/start_profile.md (``--quick``: 40 jobs over 20 s on
``0:8`` runners, to bench/results/start_profile-quick.md, a smoke test).

    .venv/bin/python bench/start_profile.py [--jobs 1000] [--duration 120] [--runners 0:40]
        [--seed 1] [--chaos none|soak] [--sample-interval 0.01] [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import ctypes
import dataclasses
import itertools
import os
import resource
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any
from unittest import mock

from _report import command_line, run_scope
from _system import header, percentile, proc_cpu, say

import scaleset.demo.system as demo_system
from scaleset.api import keys
from scaleset.controllers.ephemeralrunner.setup import DEFAULT_WORKERS as RUNNER_DEFAULT_WORKERS
from scaleset.controllers.options import ControllerOptions
from scaleset.demo import run as demo_run
from scaleset.demo.options import SOAK_DEFAULTS, demo_options
from scaleset.demo.report import Report
from scaleset.demo.system import DemoSystem
from scaleset.demo.workload import SOAK, Workload, build_workload
from scaleset.embedded.actions import FakeGitHub
from scaleset.embedded.actions.control import GroundTruth, JobTruth
from scaleset.embedded.actions.model import JobEventKind
from scaleset.embedded.apiserver import serve_in_thread
from scaleset.embedded.apiserver._store import StoredEvent
from scaleset.embedded.apiserver._thread import RunningApiServer
from scaleset.embedded.runner import RunnerPhase

RESULTS = Path(__file__).parent / "results"
CHAOS_CHOICES = ("none", SOAK)
LAG_TICK = 0.05
"""Period of the event-loop lag tickers (seconds)."""
TIMELINE_EVERY = 0.5
"""How often the sampler keeps a reading of every CPU counter (the window's ends are read from
these)."""
WATCHED = frozenset({"ephemeralrunners", "ephemeralrunnersets", "pods", "secrets"})

# ---------------------------------------------------------------------------- who wrote it
_REQUEST: contextvars.ContextVar[tuple[str, float] | None] = contextvars.ContextVar(
    "start_profile_request", default=None
)
"""(User-Agent, arrival wall time) of the API server request being handled (set by the
access-log wrapper, read by the store listener in the same task)."""

WRITERS = {
    "scaleset-controller": "controller",
    "scaleset-listener": "listener",
    "scaleset": "simulated node / demo",
}
"""User-Agent product -> writer (the simulated kubelet and the demo share the demo's client)."""


def writer_of(agent: str) -> str:
    name = agent.split("/", 1)[0].strip()
    return WRITERS.get(name, name or "API server itself")


# ---------------------------------------------------------------------------- marks
@dataclass
class Marks:
    """Wall times of what the system did, filled while it runs (``first`` keeps the first
    time each (kind, name, mark) happened, with its writer)."""

    namespace: str
    first: dict[tuple[str, str, str], tuple[float, str]] = field(default_factory=dict)
    patch_first: dict[int, tuple[float, str]] = field(default_factory=dict)
    """EphemeralRunnerSet ``spec.patchID`` -> when it was first stored, and by whom."""
    server_times: list[tuple[str, str, str, float]] = field(default_factory=list)
    """(writer, resource, event type, seconds from the request's arrival to the store)."""
    jit_calls: list[tuple[float, float]] = field(default_factory=list)
    """(arrival, answer) wall times of each generatejitconfig request at the fake GitHub."""
    hook_cpu: float = 0.0
    """CPU seconds the store listener itself used (in the API server's thread)."""
    hook_errors: int = 0

    def mark(self, kind: str, name: str, what: str, at: float, writer: str) -> None:
        self.first.setdefault((kind, name, what), (at, writer))

    def at(self, kind: str, name: str, what: str) -> float | None:
        found = self.first.get((kind, name, what))
        return None if found is None else found[0]

    def on_stored(self, bucket_id: tuple[str, str], event: StoredEvent) -> None:
        """The API server's store listener (its thread, inside the writing request's task):
        note the marks of the objects a runner's start goes through. Never raises."""
        began = time.thread_time()
        try:
            now = time.time()
            request = _REQUEST.get()
            writer = writer_of(request[0]) if request is not None else "API server itself"
            plural = bucket_id[1]
            if request is not None:
                self.server_times.append((writer, plural, event.type, now - request[1]))
            if plural in WATCHED:
                self._note(plural, event, now, writer)
        except Exception:
            self.hook_errors += 1
        finally:
            self.hook_cpu += time.thread_time() - began

    def _note(self, plural: str, event: StoredEvent, now: float, writer: str) -> None:
        obj = event.obj
        meta = obj.get("metadata") or {}
        if meta.get("namespace") != self.namespace:
            return
        name = str(meta.get("name") or "")
        status = obj.get("status") or {}
        mark = self.mark
        gone = event.type == "DELETED"
        if plural == "ephemeralrunnersets":
            patch = (obj.get("spec") or {}).get("patchID")
            if isinstance(patch, int) and not gone:
                self.patch_first.setdefault(patch, (now, writer))
            return
        if plural == "secrets":
            mark("secret", name, "gone" if gone else "created", now, writer)
            return
        if plural == "pods":
            if gone:
                mark("pod", name, "gone", now, writer)
                return
            if event.type == "ADDED":
                mark("pod", name, "created", now, writer)
            if (obj.get("spec") or {}).get("nodeName"):
                mark("pod", name, "bound", now, writer)
            if status.get("phase") == "Running":
                mark("pod", name, "running", now, writer)
            for container in status.get("containerStatuses") or ():
                if container.get("name") != "runner":
                    continue
                state = container.get("state") or {}
                if "running" in state:
                    mark("pod", name, "runner_running", now, writer)
                if "terminated" in state:
                    mark("pod", name, "runner_terminated", now, writer)
            if meta.get("deletionTimestamp"):
                mark("pod", name, "deleting", now, writer)
            return
        # ephemeralrunners
        if gone:
            mark("er", name, "gone", now, writer)
            return
        if event.type == "ADDED":
            mark("er", name, "created", now, writer)
            patch = (meta.get("annotations") or {}).get(keys.PATCH_ID_ANNOTATION)
            if patch is not None:
                self.first.setdefault(("er", name, "patch"), (float(patch), writer))
        if status.get("runnerId"):
            mark("er", name, "recorded", now, writer)
        if status.get("phase") == "Pending":
            mark("er", name, "pending", now, writer)
        if status.get("ready"):
            mark("er", name, "ready", now, writer)
        if status.get("runnerStartedAt"):
            mark("er", name, "seen_started", now, writer)
        if status.get("phase") == "Running":
            mark("er", name, "running", now, writer)
        if status.get("jobRequestId"):
            mark("er", name, "job_fields", now, writer)
        if status.get("jobCompletion"):
            mark("er", name, "completion", now, writer)
        if meta.get("deletionTimestamp"):
            mark("er", name, "deleting", now, writer)


# ---------------------------------------------------------------------------- CPU by component
PRODUCT = "product"
HARNESS = "harness"
BENCH = "this profiler"

COMPONENT_MODULES: tuple[tuple[str, str, str], ...] = (
    ("scaleset.listener", "listener", PRODUCT),
    ("scaleset.github", "listener", PRODUCT),
    ("scaleset.embedded.actions", "fake GitHub", HARNESS),
    ("aiohttp", "fake GitHub", HARNESS),
    ("scaleset.embedded.kubelet", "simulated node (kubelet)", HARNESS),
    ("scaleset.embedded.runner", "simulated runners", HARNESS),
    ("scaleset.demo", "demo driver and judge", HARNESS),
)
"""Module prefix -> component of the demo's event-loop thread. The only aiohttp server on that
thread is the fake GitHub's (the API server's runs on its own thread); the listener is the only
user of the GitHub client there."""

LIBRARY_GROUPS: tuple[tuple[str, str], ...] = (
    ("scaleset.runtime", "informers and work queues"),
    ("scaleset.kube", "Kubernetes client"),
    ("httpx2", "HTTP client"),
    ("httpcore", "HTTP client"),
    ("h11", "HTTP client"),
    ("asyncio.sslproto", "TLS"),
    ("ssl", "TLS"),
    ("asyncio.selector_events", "socket I/O"),
    ("socket", "socket I/O"),
    ("asyncio", "the event loop itself"),
    ("selectors", "the event loop itself"),
    ("json", "JSON"),
    ("pydantic", "pydantic"),
    ("scaleset.logs", "logging"),
    ("logging", "logging"),
    ("structlog", "logging"),
)
"""Where a sample with no component frame was (its innermost frame's module)."""
UNATTRIBUTED = "no component frame on the stack"
PROFILER_ON_LOOP = "this profiler's lag ticker and JIT timer"
COMPONENT_WHO = {name: who for _, name, who in COMPONENT_MODULES} | {PROFILER_ON_LOOP: BENCH}

CLOCK_THREAD_CPUTIME_ID = 3
SIGEV_THREAD_ID = 4
"""Linux: ``sigev_notify`` value that sends the signal to one thread (``_sigev_un._tid``)."""


def _component_of_module(module: str) -> str | None:
    for prefix, name, _ in COMPONENT_MODULES:
        if module == prefix or module.startswith(prefix + "."):
            return name
    return None


def _library_of_module(module: str) -> str:
    for prefix, name in LIBRARY_GROUPS:
        if module == prefix or module.startswith(prefix + "."):
            return name
    return module.split(".", 1)[0] or "?"


class _Sigevent(ctypes.Structure):
    """``struct sigevent`` (Linux, 64 bytes) with the ``SIGEV_THREAD_ID`` member."""

    _fields_ = (
        ("value", ctypes.c_void_p),
        ("signo", ctypes.c_int),
        ("notify", ctypes.c_int),
        ("tid", ctypes.c_int),
        ("pad", ctypes.c_int * 11),
    )


class _Timespec(ctypes.Structure):
    _fields_ = (("sec", ctypes.c_long), ("nsec", ctypes.c_long))


class _Itimerspec(ctypes.Structure):
    _fields_ = (("interval", _Timespec), ("value", _Timespec))


class LoopProfiler:
    """Which component the event-loop thread spends its CPU in: a POSIX timer on that
    thread's own CPU clock (``timer_create(CLOCK_THREAD_CPUTIME_ID)``) sends it ``SIGPROF``
    every ``interval`` CPU seconds it uses, and the handler (which Python runs on that same
    thread, at the next bytecode) charges the interval to the innermost component frame on the
    interrupted stack. ``setitimer(ITIMER_PROF)`` would count the whole process's CPU and
    interrupt whichever thread ran, while the handler always sees the loop thread's frame:
    the API server thread's CPU would be charged to what the loop thread happened to do."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.counts: Counter[str] = Counter()
        self.unattributed_functions: Counter[str] = Counter()
        self.profiler_codes: set[CodeType] = set()
        """Code of this script that runs on the loop thread (charged to the profiler; the rest
        of this script's frames, at the bottom of that thread's stack, are transparent)."""
        self.handler_cpu = 0.0
        self.error = ""
        self._code_cache: dict[CodeType, str | None] = {}
        self._module_cache: dict[CodeType, str] = {}
        self._libc: Any = None
        self._timer = ctypes.c_void_p()

    def start(self) -> None:
        """Arm the timer for the calling thread (the event loop's); on failure ``error``
        says why and nothing is split."""
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.timer_create.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
            libc.timer_settime.argtypes = (
                ctypes.c_void_p,
                ctypes.c_int,
                ctypes.c_void_p,
                ctypes.c_void_p,
            )
            libc.timer_delete.argtypes = (ctypes.c_void_p,)
            event = _Sigevent()
            event.signo = signal.SIGPROF
            event.notify = SIGEV_THREAD_ID
            event.tid = threading.get_native_id()
            if libc.timer_create(
                CLOCK_THREAD_CPUTIME_ID, ctypes.byref(event), ctypes.byref(self._timer)
            ):
                raise OSError(ctypes.get_errno(), "timer_create")
            signal.signal(signal.SIGPROF, self._on_signal)
            seconds, fraction = divmod(self.interval, 1.0)
            step = _Timespec(int(seconds), int(fraction * 1e9))
            spec = _Itimerspec(step, step)
            if libc.timer_settime(self._timer, 0, ctypes.byref(spec), None):
                raise OSError(ctypes.get_errno(), "timer_settime")
            self._libc = libc
        except (OSError, AttributeError, ValueError) as error:
            self.error = f"{type(error).__name__}: {error}"
            signal.signal(signal.SIGPROF, signal.SIG_IGN)

    def stop(self) -> None:
        if self._libc is not None:
            self._libc.timer_delete(self._timer)
            self._libc = None
        signal.signal(signal.SIGPROF, signal.SIG_IGN)  # a signal still pending must not kill

    def seconds(self) -> dict[str, float]:
        return {name: n * self.interval for name, n in self.counts.items()}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        began = time.thread_time()
        self.counts[self.classify(frame)] += 1
        self.handler_cpu += time.thread_time() - began

    def _module(self, code: CodeType, frame: FrameType) -> str:
        module = self._module_cache.get(code)
        if module is None:
            module = str(frame.f_globals.get("__name__", "?"))
            self._module_cache[code] = module
        return module

    def classify(self, frame: FrameType | None) -> str:
        """The innermost component on the stack, or ``UNATTRIBUTED: <library>``."""
        innermost = frame
        while frame is not None:
            code = frame.f_code
            if code in self._code_cache:
                component = self._code_cache[code]
            else:
                if code in self.profiler_codes:
                    component = PROFILER_ON_LOOP
                else:
                    component = _component_of_module(self._module(code, frame))
                self._code_cache[code] = component
            if component is not None:
                return component
            frame = frame.f_back
        if innermost is None:
            return f"{UNATTRIBUTED}: ?"
        module = self._module(innermost.f_code, innermost)
        self.unattributed_functions[f"{module}.{innermost.f_code.co_qualname}"] += 1
        return f"{UNATTRIBUTED}: {_library_of_module(module)}"


@dataclass(frozen=True)
class Reading:
    """Every CPU counter at one moment (seconds; ``at`` is wall time)."""

    at: float
    process: float
    loop_thread: float
    api_thread: float
    sampler: float
    components: dict[str, float]
    controllers: dict[int, float]


class Sampler(threading.Thread):
    """Reads every CPU counter each ``TIMELINE_EVERY`` seconds (the job window's ends are
    read from these): the process, the loop thread, the API server thread, this thread, the
    loop profiler's shares and the controller processes."""

    def __init__(self, profiler: LoopProfiler) -> None:
        super().__init__(name="start-profile-sampler", daemon=True)
        self.profiler = profiler
        self.loop_ident = threading.main_thread().ident or 0
        self._loop_clock = time.pthread_getcpuclockid(self.loop_ident)
        self._api_clock: int | None = None
        self._own_clock: int | None = None
        self.controller_pids: list[int] = []
        self.timeline: list[Reading] = []
        self._halt = threading.Event()
        self._controller_cpu: dict[int, float] = {}

    def watch_api_thread(self, ident: int) -> None:
        self._api_clock = time.pthread_getcpuclockid(ident)

    @staticmethod
    def _clock(clock: int | None) -> float:
        if clock is None:
            return 0.0
        try:
            return time.clock_gettime(clock)
        except OSError:  # the thread ended
            return 0.0

    def read(self) -> Reading:
        for pid in list(self.controller_pids):
            with contextlib.suppress(OSError, IndexError, ValueError):
                self._controller_cpu[pid] = proc_cpu(pid)
        return Reading(
            at=time.time(),
            process=time.process_time(),
            loop_thread=self._clock(self._loop_clock),
            api_thread=self._clock(self._api_clock),
            sampler=self._clock(self._own_clock),
            components=self.profiler.seconds(),
            controllers=dict(self._controller_cpu),
        )

    def run(self) -> None:
        self._own_clock = time.pthread_getcpuclockid(threading.get_ident())
        self.timeline.append(self.read())
        while not self._halt.wait(TIMELINE_EVERY):
            self.timeline.append(self.read())
        self.timeline.append(self.read())

    def stop(self) -> None:
        """Stop reading (the thread takes a last reading first)."""
        self._halt.set()
        self.join(5)


# ---------------------------------------------------------------------------- the system
@dataclass
class Captured:
    """What the run leaves for the report (filled by ``ProfiledDemoSystem``)."""

    marks: Marks
    profiler: LoopProfiler
    sampler: Sampler
    lags: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: {"demo event loop": [], "API server event loop": []}
    )
    snapshot: GroundTruth | None = None
    registered: dict[str, float] = field(default_factory=dict)
    """Runner name -> when the fake GitHub registered it (generatejitconfig)."""
    started_delivered: dict[int, float] = field(default_factory=dict)
    """Job request id -> when its JobStarted was delivered to the listener."""
    processes: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    """Runner pod -> its first runner process's phases, wall time."""
    controller_pids: list[int] = field(default_factory=list)
    children_cpu: float = 0.0
    """CPU seconds of every reaped child (the controller processes), start to end."""
    demo_cpu_total: float = 0.0
    wall_offset: float = 0.0
    """Wall time of the demo's second 0 (its samples count from there)."""
    blackout: float = 0.0
    """Seconds of the soak's blackouts (GitHub down, no controller leading), overlaps once."""


CAPTURE: list[Captured] = []
"""The run's capture (one run per process; a list so the patched classes can reach it)."""


async def _ticker(lags: list[tuple[float, float]]) -> None:
    """Sleep ``LAG_TICK`` again and again; note how late each wake-up was."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + LAG_TICK
        await asyncio.sleep(LAG_TICK)
        lags.append((time.time(), max(0.0, loop.time() - due)))


class ProfiledDemoSystem(DemoSystem):
    """The demo's system with the controller manager in its own process (as the soak has it)
    and the profiler's readings taken before it stops."""

    runner_workers: int | None = None
    """The EphemeralRunner controller's workers (``--runner-workers``; None: its default)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["separate_controller"] = True
        super().__init__(**kwargs)
        self._lag_task: asyncio.Task[None] | None = None

    def _controller_options(self) -> ControllerOptions:
        options = super()._controller_options()
        if self.runner_workers is None:
            return options
        return dataclasses.replace(options, runner_max_concurrent_reconciles=self.runner_workers)

    async def start(self) -> None:
        await super().start()
        captured = CAPTURE[-1]
        self._lag_task = asyncio.create_task(
            _ticker(captured.lags["demo event loop"]), name="start-profile-lag"
        )

    async def start_controller(self) -> None:
        await super().start_controller()
        if self.controller_process is not None and self.controller_process.pid is not None:
            captured = CAPTURE[-1]
            captured.controller_pids.append(self.controller_process.pid)
            captured.sampler.controller_pids.append(self.controller_process.pid)

    async def stop(self) -> None:
        captured = CAPTURE[-1]
        if self._lag_task is not None:
            self._lag_task.cancel()
        with contextlib.suppress(Exception):
            self._capture(captured)
        await super().stop()

    def _capture(self, captured: Captured) -> None:
        if captured.sampler.is_alive():
            captured.sampler.stop()
        captured.wall_offset = self.clock.time() - self.elapsed()
        captured.blackout = self.truth.outage_overlap(0.0, self.elapsed())
        if self.fake is None:
            return
        control = self.fake.control
        captured.snapshot = control.snapshot()
        for runner in self.fake.service.runners.values():
            captured.registered.setdefault(runner.name, runner.created_at)
        for job in captured.snapshot.jobs:
            event = control.job_event(job.request_id, JobEventKind.STARTED)
            if event is not None and event.delivered_at is not None:
                captured.started_delivered[job.request_id] = event.delivered_at
        for (pod, start), process in self.truth.processes.items():
            if start == 0:
                captured.processes[pod] = [
                    (at + captured.wall_offset, phase.value) for at, phase in process.history
                ]


@contextlib.contextmanager
def _profiled_api_server(
    real: Callable[..., contextlib.AbstractContextManager[RunningApiServer]],
) -> Iterator[Callable[..., contextlib.AbstractContextManager[RunningApiServer]]]:
    """``serve_in_thread`` as the demo calls it, with the store listener, the access-log
    wrapper, the sampler's thread clock and the lag ticker added once the server is up."""

    @contextlib.contextmanager
    def serve(**kwargs: Any) -> Iterator[RunningApiServer]:
        with real(**kwargs) as running:
            captured = CAPTURE[-1]
            server = running.server
            access = server.access
            record = access.record

            def recorded(**fields: Any) -> Any:
                entry = record(**fields)
                _REQUEST.set((str(fields.get("agent", "")), time.time()))
                return entry

            access.record = recorded  # type: ignore[method-assign]
            server.store.listeners.append(captured.marks.on_stored)
            thread = next(t for t in threading.enumerate() if t.name == "embedded-apiserver")
            captured.sampler.watch_api_thread(thread.ident or 0)
            captured.sampler.start()
            ticking = asyncio.run_coroutine_threadsafe(
                _ticker(captured.lags["API server event loop"]), running.loop
            )
            try:
                yield running
            finally:
                ticking.cancel()

    yield serve


def _timed_dispatch(
    real: Callable[[FakeGitHub, Any], Any],
) -> Callable[[FakeGitHub, Any], Any]:
    """The fake GitHub's dispatcher, timing each generatejitconfig request."""

    async def dispatch(self: FakeGitHub, request: Any) -> Any:
        began = time.time()
        try:
            return await real(self, request)
        finally:
            if request.path.endswith("/generatejitconfig"):
                CAPTURE[-1].marks.jit_calls.append((began, time.time()))

    return dispatch


def _soak_jobs_without_faults(**kwargs: Any) -> Workload:
    """The soak's workload (arrivals and job lengths) with its faults and rates taken out
    (``--chaos none``), or the soak itself (``--chaos soak``)."""
    soak = build_workload(**{**kwargs, "chaos": SOAK})
    if kwargs.get("chaos") == SOAK:
        return soak
    jobs = tuple(dataclasses.replace(job, fault=None, fault_after=0.0) for job in soak.jobs)
    return dataclasses.replace(soak, jobs=jobs, faults=(), rates=None)


async def _run(args: argparse.Namespace) -> tuple[int, Report | None, Captured, float, float]:
    options = demo_options(
        chaos=args.chaos,
        jobs=args.jobs,
        duration=args.duration,
        runners=args.runners,
        seed=args.seed,
        grace=args.grace,
    )
    options = dataclasses.replace(
        options,
        settle_timeout=SOAK_DEFAULTS.settle_timeout,
        session_idle_seconds=SOAK_DEFAULTS.session_idle_seconds,
    )
    profiler = LoopProfiler(args.sample_interval)
    captured = Captured(
        marks=Marks(namespace=options.runner_namespace),
        profiler=profiler,
        sampler=Sampler(profiler),
    )
    timed = _timed_dispatch(FakeGitHub._dispatch)
    profiler.profiler_codes |= {_ticker.__code__, timed.__code__}
    CAPTURE.append(captured)
    profiler.start()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    with (
        _profiled_api_server(serve_in_thread) as serve,
        mock.patch.object(demo_system, "serve_in_thread", serve),
        mock.patch.object(demo_run, "DemoSystem", ProfiledDemoSystem),
        mock.patch.object(demo_run, "build_workload", _soak_jobs_without_faults),
        mock.patch.object(FakeGitHub, "_dispatch", timed),
    ):
        code, report = await demo_run.run_demo_report(options, stream=sys.stderr)
    ended = time.time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    captured.children_cpu = (children.ru_utime + children.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    captured.demo_cpu_total = time.process_time()
    if captured.sampler.is_alive():
        captured.sampler.stop()
    profiler.stop()
    return code, report, captured, started, ended


# ---------------------------------------------------------------------------- per runner
@dataclass(frozen=True)
class Hop:
    start: str
    end: str
    what: str
    who: str
    """``product: …`` or ``harness: …`` (or mixed, said so)."""


START_HOPS: tuple[Hop, ...] = (
    Hop(
        "ask",
        "created",
        "listener's runner-set patch → EphemeralRunner created",
        "product: controller (runner set)",
    ),
    Hop(
        "created",
        "jit_in",
        "→ generatejitconfig reaches the fake GitHub",
        "product: controller (runner)",
    ),
    Hop(
        "jit_in", "jit_out", "→ fake GitHub answers it (runner registered)", "harness: fake GitHub"
    ),
    Hop("jit_out", "secret", "→ JIT Secret stored", "product: controller (runner)"),
    Hop("secret", "recorded", "→ status record stored (runnerId)", "product: controller (runner)"),
    Hop("recorded", "pod", "→ pod stored", "product: controller (runner)"),
    Hop("pod", "bound", "→ pod bound to a node", "harness: simulated scheduler"),
    Hop("bound", "process", "→ runner container started", "harness: simulated node"),
    Hop(
        "process",
        "connected",
        "→ runner connected (session on the broker)",
        "harness: simulated runner + fake GitHub",
    ),
    Hop(
        "connected",
        "assigned",
        "→ job assigned to the runner",
        "harness: fake GitHub (or no job waiting)",
    ),
    Hop("assigned", "job_started", "→ job started", "harness: simulated runner + fake GitHub"),
    Hop(
        "job_started",
        "delivered",
        "→ JobStarted delivered to the listener",
        "harness: fake GitHub message queue (+ listener's poll)",
    ),
    Hop("delivered", "running", "→ Running stored", "product: listener"),
)
"""The start, in order; each hop runs from the previous mark to its own."""

SIDE_HOPS: tuple[Hop, ...] = (
    Hop(
        "process",
        "pod_running",
        "runner container started → pod status shows it running",
        "harness: simulated node",
    ),
    Hop(
        "pod_running",
        "seen_started",
        "→ controller stores runnerStartedAt",
        "product: controller (runner)",
    ),
    Hop(
        "created",
        "not_starting",
        "EphemeralRunner created → no longer `starting` (L0)",
        "both (the hops above)",
    ),
)
"""Beside the path: how the controller learns that the runner runs (until then L0 counts it
as starting)."""

END_HOPS: tuple[Hop, ...] = (
    Hop(
        "job_finished",
        "completion",
        "job finished → jobCompletion stored",
        "harness: message queue; product: listener",
    ),
    Hop(
        "job_finished",
        "exited",
        "job finished → runner process exited",
        "harness: simulated runner",
    ),
    Hop("exited", "terminated", "→ pod status shows the exit", "harness: simulated node"),
    Hop(
        "terminated",
        "deleting",
        "→ EphemeralRunner deletion stored",
        "product: controller (runner)",
    ),
    Hop(
        "deleting",
        "gone",
        "→ EphemeralRunner gone (registration, pod, Secret, finalizers)",
        "product: controller; harness: fake GitHub, node",
    ),
)
"""After the job (not start cost): how long the runner's slot stays taken."""

TOTAL_HOPS: tuple[Hop, ...] = (
    Hop("created", "job_started", "EphemeralRunner created → job started", "both"),
    Hop("ask", "running", "listener's patch → Running stored", "both"),
)


def runner_marks(captured: Captured) -> dict[str, dict[str, float]]:
    """Runner name -> mark -> wall time, for every EphemeralRunner seen created."""
    marks = captured.marks
    names = sorted({name for kind, name, what in marks.first if kind == "er" and what == "created"})
    jobs_by_runner: dict[str, JobTruth] = {}
    if captured.snapshot is not None:
        for started in captured.snapshot.jobs:
            if started.runner_name and started.start_time is not None:
                jobs_by_runner.setdefault(started.runner_name, started)
    calls = sorted(marks.jit_calls)
    out: dict[str, dict[str, float]] = {}
    for name in names:
        m: dict[str, float] = {}

        def put(key: str, value: float | None, into: dict[str, float] = m) -> None:
            if value is not None:
                into[key] = value

        put("created", marks.at("er", name, "created"))
        patch = marks.first.get(("er", name, "patch"))
        if patch is not None and int(patch[0]) in marks.patch_first:
            put("ask", marks.patch_first[int(patch[0])][0])
        registered = captured.registered.get(name)
        if registered is not None:
            call = next((c for c in calls if c[0] <= registered <= c[1]), None)
            if call is not None:
                put("jit_in", call[0])
                put("jit_out", call[1])
        put("secret", marks.at("secret", name, "created"))
        put("recorded", marks.at("er", name, "recorded"))
        put("pod", marks.at("pod", name, "created"))
        put("bound", marks.at("pod", name, "bound"))
        put("pod_running", marks.at("pod", name, "runner_running"))
        put("terminated", marks.at("pod", name, "runner_terminated"))
        put("seen_started", marks.at("er", name, "seen_started"))
        put("running", marks.at("er", name, "running"))
        put("deleting", marks.at("er", name, "deleting"))
        put("gone", marks.at("er", name, "gone"))
        put("completion", marks.at("er", name, "completion"))
        leaves = [
            t
            for what in ("ready", "seen_started", "running", "job_fields", "completion", "deleting")
            if (t := marks.at("er", name, what)) is not None
        ]
        if leaves:
            m["not_starting"] = min(leaves)
        phases = captured.processes.get(name, [])
        for at, phase in phases:
            if phase == RunnerPhase.CONNECTING.value:
                m.setdefault("process", at)
            elif phase == RunnerPhase.LISTENING.value:
                m.setdefault("connected", at)
            elif phase in (RunnerPhase.EXITED.value, RunnerPhase.CRASHED.value):
                m.setdefault("exited", at)
        job = jobs_by_runner.get(name)
        if job is not None:
            put("assigned", job.runner_assign_time)
            put("job_started", job.start_time)
            put("job_finished", job.finish_time)
            put("delivered", captured.started_delivered.get(job.request_id))
        out[name] = m
    return out


@dataclass(frozen=True)
class HopFigures:
    hop: Hop
    values: list[float]

    @property
    def n(self) -> int:
        return len(self.values)

    def median(self) -> float:
        return statistics.median(self.values) if self.values else 0.0

    def p90(self) -> float:
        return percentile(self.values, 0.9) if self.values else 0.0

    def max(self) -> float:
        return max(self.values) if self.values else 0.0

    def held(self, window: float) -> float:
        """Runners in this hop on average over ``window`` seconds (Little's law)."""
        return sum(self.values) / window if window > 0 else 0.0


def hop_figures(hops: tuple[Hop, ...], runners: dict[str, dict[str, float]]) -> list[HopFigures]:
    return [
        HopFigures(
            hop,
            [
                m[hop.end] - m[hop.start]
                for m in runners.values()
                if hop.start in m and hop.end in m
            ],
        )
        for hop in hops
    ]


# ---------------------------------------------------------------------------- CPU
@dataclass(frozen=True)
class CpuWindow:
    seconds: float
    """Wall seconds between the two readings."""
    process: float
    loop_thread: float
    api_thread: float
    sampler: float
    components: dict[str, float]
    controller: float
    controllers_seen: int


@dataclass(frozen=True)
class Busy:
    """A process's CPU per reading interval (about half a second), as shares of one core."""

    median: float
    p90: float
    peak: float
    saturated: float
    """Share of the intervals at 90 % of one core or more."""


def busy(
    timeline: list[Reading], start: float, end: float, used: Callable[[Reading, Reading], float]
) -> Busy | None:
    """CPU ``used`` between consecutive readings inside [start, end], per second."""
    inside = [r for r in timeline if start <= r.at <= end]
    shares = [used(a, b) / (b.at - a.at) for a, b in itertools.pairwise(inside) if b.at > a.at]
    if not shares:
        return None
    return Busy(
        median=statistics.median(shares),
        p90=percentile(shares, 0.9),
        peak=max(shares),
        saturated=sum(1 for share in shares if share >= 0.9) / len(shares),
    )


def _demo_used(a: Reading, b: Reading) -> float:
    return b.process - a.process


def _controller_used(a: Reading, b: Reading) -> float:
    """The controller processes' CPU between two readings (a process first read in ``b`` is
    left out: its CPU so far is not all of this interval's)."""
    return sum(
        cpu - a.controllers[pid] for pid, cpu in b.controllers.items() if pid in a.controllers
    )


def cpu_window(timeline: list[Reading], start: float, end: float) -> CpuWindow | None:
    """The counters' differences between the reading at (or just before) ``start`` and the
    one at (or just after) ``end``."""
    if len(timeline) < 2:
        return None
    before = [r for r in timeline if r.at <= start]
    after = [r for r in timeline if r.at >= end]
    first = before[-1] if before else timeline[0]
    last = after[0] if after else timeline[-1]
    components = {
        name: last.components.get(name, 0.0) - first.components.get(name, 0.0)
        for name in last.components
    }
    controller = sum(cpu - first.controllers.get(pid, 0.0) for pid, cpu in last.controllers.items())
    return CpuWindow(
        seconds=last.at - first.at,
        process=last.process - first.process,
        loop_thread=last.loop_thread - first.loop_thread,
        api_thread=last.api_thread - first.api_thread,
        sampler=last.sampler - first.sampler,
        components=components,
        controller=controller,
        controllers_seen=len(last.controllers),
    )


# ---------------------------------------------------------------------------- the report
def _s(value: float) -> str:
    return f"{value:.2f}"


def _hop_rows(figures: list[HopFigures], window: float) -> list[str]:
    rows = []
    for f in figures:
        if not f.n:
            rows.append(f"| {f.hop.what} | {f.hop.who} | 0 | - | - | - | - |")
            continue
        negative = sum(1 for v in f.values if v < 0)
        count = f"{f.n} ({negative} ended before they began)" if negative else str(f.n)
        rows.append(
            f"| {f.hop.what} | {f.hop.who} | {count} | {_s(f.median())} | {_s(f.p90())} | "
            f"{_s(f.max())} | {f.held(window):.1f} |"
        )
    return rows


def _lag_rows(captured: Captured, start: float, end: float) -> list[str]:
    rows = []
    for loop, lags in captured.lags.items():
        values = [lag for at, lag in lags if start <= at <= end]
        if not values:
            rows.append(f"| {loop} | 0 | - | - | - | - |")
            continue
        rows.append(
            f"| {loop} | {len(values)} | {statistics.median(values) * 1000:.0f} | "
            f"{percentile(values, 0.9) * 1000:.0f} | {percentile(values, 0.99) * 1000:.0f} | "
            f"{max(values) * 1000:.0f} |"
        )
    return rows


def _server_time_rows(captured: Captured) -> list[str]:
    groups: dict[tuple[str, str, str], list[float]] = {}
    for writer, plural, kind, seconds in captured.marks.server_times:
        groups.setdefault((writer, plural, kind), []).append(seconds)
    rows = []
    for (writer, plural, kind), values in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if len(values) < 5 or plural in ("events", "leases"):
            continue
        rows.append(
            f"| {writer} | {plural} {kind.lower()} | {len(values)} | "
            f"{statistics.median(values) * 1000:.1f} | {percentile(values, 0.9) * 1000:.1f} | "
            f"{max(values) * 1000:.0f} |"
        )
    return rows


def _states(
    report: Report | None, captured: Captured, start: float, end: float
) -> dict[str, float]:
    if report is None:
        return {}
    inside = [s for s in report.samples if start <= s.at + captured.wall_offset <= end]
    if not inside:
        return {}
    names = ("starting", "idle", "busy", "terminal", "deleting")
    return {name: sum(s.states.get(name, 0) for s in inside) / len(inside) for name in names}


def render(
    args: argparse.Namespace,
    code: int,
    report: Report | None,
    captured: Captured,
    started: float,
    ended: float,
) -> str:
    snapshot = captured.snapshot
    jobs = list(snapshot.jobs) if snapshot is not None else []
    queued = [j.queue_time for j in jobs]
    finished = [j.finish_time for j in jobs if j.finish_time is not None]
    start = min(queued) if queued else started
    end = max(finished) if finished else ended
    window = max(end - start, 1e-9)
    done = len(finished)
    runners = runner_marks(captured)
    start_figures = hop_figures(START_HOPS, runners)
    side_figures = hop_figures(SIDE_HOPS, runners)
    end_figures = hop_figures(END_HOPS, runners)
    total_figures = hop_figures(TOTAL_HOPS, runners)
    cpu = cpu_window(captured.sampler.timeline, start, end)
    loads = {
        "demo process": busy(captured.sampler.timeline, start, end, _demo_used),
        "controller": busy(captured.sampler.timeline, start, end, _controller_used),
    }
    states = _states(report, captured, start, end)
    invariants = (
        ("held" if code == 0 else "**broken** (see the run's output)")
        if report is not None
        else "**the run could not be judged**"
    )
    lines = [
        "# Where a runner's start goes under the soak's load",
        "",
        "Written by `bench/start_profile.py` (issue 28: in the 1,000-job soak many runners were",
        "`starting` at any moment). The system `scaleset demo` runs:",
        "the embedded API server (a thread of the demo process), the fake GitHub service, the",
        "simulated kubelet and runners and the real listener on the demo process's event loop,",
        "the real controller manager in its own process. Workload: the soak's (half the jobs at a",
        "steady rate, half in three bursts, 0.5–2.5 s each); "
        + (
            "the soak's faults **on** (`--chaos soak`)."
            if args.chaos == SOAK
            else "the soak's faults off (not start cost)."
        ),
        "Times are wall times taken where each thing happened (the API server's store, with the",
        "writer's User-Agent; the fake GitHub; the simulated node), not Kubernetes timestamps.",
        "",
        *header(args.command, args.scope, load_at_start=args.load_at_start),
        f"- run: {args.jobs} jobs over {args.duration:g} s on runners {args.runners}, seed "
        f"{args.seed}, chaos {args.chaos}; wall {ended - started:.0f} s (demo start to stop); "
        f"invariants {invariants}",
        f"- EphemeralRunner controller workers: {_runner_workers(args)}",
        f"- job window (first job queued → last job finished): {window:.1f} s; the loop "
        f"profiler sampled every {args.sample_interval * 1000:g} ms of the loop thread's CPU: "
        + (
            f"{sum(captured.profiler.counts.values())} samples"
            if not captured.profiler.error
            else f"**not armed** ({captured.profiler.error}): the loop thread is not split"
        ),
        "",
        "## Throughput",
        "",
        "| figure | value |",
        "| --- | ---: |",
        f"| jobs finished / planned | {done} / {args.jobs} |",
        f"| jobs/s over the job window | {done / window:.2f} |",
        f"| jobs/s over the whole demo (start, settle included) | "
        f"{done / max(ended - started, 1e-9):.2f} |",
        f"| EphemeralRunners created | {len(runners)} |",
    ]
    for name, value in states.items():
        lines.append(
            f"| runners {name} (average of the demo's samples in the window) | {value:.1f} |"
        )
    lines += [
        "",
        "## A runner's start, hop by hop (seconds)",
        "",
        "Each hop runs from the previous row's mark to its own; *held* is how many runners were",
        "in that hop on average over the job window (the hop's seconds summed over runners ÷ the",
        "window: Little's law).",
        "",
        "| hop | who | n | median | p90 | max | held |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *_hop_rows(start_figures, window),
        *_hop_rows(total_figures, window),
        "",
        "Beside the path (how the controller learns the runner runs; until then, or until a job",
        "shows, L0 counts the runner `starting`):",
        "",
        "| hop | who | n | median | p90 | max | held |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *_hop_rows(side_figures, window),
        "",
        "After the job (not start cost: how long the slot stays taken before it is refilled):",
        "",
        "| hop | who | n | median | p90 | max | held |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *_hop_rows(end_figures, window),
        "",
    ]
    lines += _cpu_section(cpu, captured, loads)
    lines += [
        "## Time inside the API server per write (request arrival → stored, ms)",
        "",
        "A harness cost inside every product hop that ends in a write (Events and Leases left",
        "out; at least 5 writes of a kind).",
        "",
        "| writer | write | n | median | p90 | max |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
        *_server_time_rows(captured),
        "",
        f"## Event-loop lag (ms, ticks of {LAG_TICK * 1000:g} ms, job window)",
        "",
        "| loop | ticks | median | p90 | p99 | max |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *_lag_rows(captured, start, end),
        "",
        "## What the numbers say",
        "",
        *_prose(
            start_figures,
            side_figures,
            end_figures,
            cpu,
            states,
            window,
            done,
            captured,
            start,
            loads,
        ),
        "",
    ]
    return "\n".join(lines) + "\n"


def _cpu_section(
    cpu: CpuWindow | None, captured: Captured, loads: dict[str, Busy | None]
) -> list[str]:
    if cpu is None:
        return ["## CPU", "", "No CPU readings (the run ended before the sampler read twice).", ""]
    window = max(cpu.seconds, 1e-9)
    lines = [
        f"## CPU seconds over the job window ({cpu.seconds:.1f} s between the readings)",
        "",
        "| process / part | who | CPU s | % of one core |",
        "| --- | --- | ---: | ---: |",
        f"| controller process{'es' if cpu.controllers_seen > 1 else ''} | product | "
        f"{cpu.controller:.1f} | {cpu.controller / window * 100:.0f} |",
        f"| **demo process** | both | **{cpu.process:.1f}** | "
        f"**{cpu.process / window * 100:.0f}** |",
        f"| · API server thread | harness: embedded API server | {cpu.api_thread:.1f} | "
        f"{cpu.api_thread / window * 100:.0f} |",
        f"| · · of which this profiler's store listener (whole run) | this profiler | "
        f"{captured.marks.hook_cpu:.1f} | {captured.marks.hook_cpu / window * 100:.0f} |",
        f"| · event-loop thread | both | {cpu.loop_thread:.1f} | "
        f"{cpu.loop_thread / window * 100:.0f} |",
        f"| · · of which this profiler's signal handler (whole run) | this profiler | "
        f"{captured.profiler.handler_cpu:.1f} | "
        f"{captured.profiler.handler_cpu / window * 100:.0f} |",
    ]
    sampled = sum(cpu.components.values())
    scale = cpu.loop_thread / sampled if sampled > 0 else 0.0
    for name, seconds in sorted(cpu.components.items(), key=lambda kv: -kv[1]):
        if seconds * scale < 0.05:
            continue
        who = COMPONENT_WHO.get(name, "unattributed" if name.startswith(UNATTRIBUTED) else "?")
        lines.append(
            f"| · · {name} | {who} | {seconds * scale:.1f} | {seconds * scale / window * 100:.0f} |"
        )
    other = cpu.process - cpu.loop_thread - cpu.api_thread - cpu.sampler
    lines += [
        f"| · reading thread | this profiler | {cpu.sampler:.1f} | "
        f"{cpu.sampler / window * 100:.0f} |",
        f"| · other threads (executors, metrics servers) | ? | {max(other, 0.0):.1f} | "
        f"{max(other, 0.0) / window * 100:.0f} |",
        "",
        "Per reading interval (about half a second) in the window, % of one core:",
        "",
        "| process | median | p90 | peak | intervals at ≥ 90 % |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {name} | {load.median * 100:.0f} | {load.p90 * 100:.0f} | "
            f"{load.peak * 100:.0f} | {load.saturated * 100:.0f} % |"
            for name, load in loads.items()
            if load is not None
        ),
        "",
        f"Whole run (start to stop, imports and settle included): demo process "
        f"{captured.demo_cpu_total:.1f} s, controller process"
        f"{'es' if len(captured.controller_pids) > 1 else ''} {captured.children_cpu:.1f} s. "
        "The event-loop thread's components are the loop profiler's samples scaled to that "
        "thread's CPU clock (the handler's own CPU is inside the components it interrupted); "
        "the API server thread and the controller process are not split further."
        + _unattributed_note(captured),
        "",
    ]
    return lines


def _unattributed_note(captured: Captured) -> str:
    """The functions most often interrupted with no component frame on the stack."""
    top = captured.profiler.unattributed_functions.most_common(5)
    total = sum(captured.profiler.counts.values())
    if not top or not total:
        return ""
    return (
        " Most frequent functions with no component frame: "
        + ", ".join(f"`{name}` {n / total * 100:.0f} %" for name, n in top)
        + " of the loop thread's samples."
    )


def _prose(
    start: list[HopFigures],
    side: list[HopFigures],
    end: list[HopFigures],
    cpu: CpuWindow | None,
    states: dict[str, float],
    window: float,
    done: int,
    captured: Captured,
    begin: float,
    loads: dict[str, Busy | None],
) -> list[str]:
    out: list[str] = []
    path = [f for f in start if f.n]
    if not path:
        return ["No runner completed the start path: nothing to say."]
    product = sum(f.held(window) for f in path if f.hop.who.startswith("product"))
    harness = sum(f.held(window) for f in path if f.hop.who.startswith("harness"))
    before_job = [
        f for f in path if f.hop.end not in ("assigned", "job_started", "delivered", "running")
    ]
    biggest = max(before_job or path, key=lambda f: f.held(window))
    starting = states.get("starting")
    not_starting = next((f for f in side if f.hop.end == "not_starting"), None)
    out.append(
        f"- Throughput: {done} jobs in {window:.1f} s, {done / window:.2f} jobs/s"
        + (
            f", with on average {starting:.1f} runners starting, {states.get('idle', 0):.1f} idle "
            f"and {states.get('busy', 0):.1f} busy (the demo's samples)."
            if starting is not None
            else "."
        )
    )
    if not_starting is not None and not_starting.n:
        out.append(
            f"- A runner is `starting` (L0) for a median {not_starting.median():.2f} s "
            f"(p90 {not_starting.p90():.2f} s); by Little's law that holds "
            f"{not_starting.held(window):.1f} runners on average"
            + (f" (sampled: {starting:.1f})." if starting is not None else ".")
        )
    out.append(
        f"- Along the start path (listener's patch → Running stored), the hops the product "
        f"does hold {product:.1f} runners on average and the harness's {harness:.1f}. The "
        f"largest hop before the job is “{biggest.hop.what.lstrip('→ ')}” ({biggest.hop.who}): "
        f"median {biggest.median():.2f} s, {biggest.held(window):.1f} runners held."
    )
    ranked = sorted(path, key=lambda f: -f.held(window))[:3]
    out.append(
        "- The three hops holding the most runners: "
        + "; ".join(
            f"“{f.hop.what.lstrip('→ ')}” ({f.hop.who}) {f.held(window):.1f}" for f in ranked
        )
        + "."
    )
    after = sum(
        f.held(window) for f in end if f.hop.start != "job_finished" or f.hop.end == "exited"
    )
    if after:
        out.append(
            f"- After its job a runner's slot stays taken too: the hops from the job's finish "
            f"to the EphemeralRunner gone hold {after:.1f} runners on average."
        )
    if cpu is not None:
        core = cpu.process / max(cpu.seconds, 1e-9)
        ctl = cpu.controller / max(cpu.seconds, 1e-9)
        harness_cpu = cpu.api_thread + sum(
            seconds
            for name, seconds in cpu.components.items()
            if COMPONENT_WHO.get(name) == HARNESS
        ) * (cpu.loop_thread / max(sum(cpu.components.values()), 1e-9))
        listener_cpu = cpu.components.get("listener", 0.0) * (
            cpu.loop_thread / max(sum(cpu.components.values()), 1e-9)
        )
        out.append(
            f"- CPU: the demo process used {cpu.process:.1f} s ({core * 100:.0f} % of one core), "
            f"the controller {cpu.controller:.1f} s ({ctl * 100:.0f} %). Of the demo process, "
            f"at least {harness_cpu:.1f} s is the harness's (API server thread "
            f"{cpu.api_thread:.1f} s plus the fake GitHub, simulated node and runners, and the "
            f"demo's judge on the loop) and {listener_cpu:.1f} s the listener's (product)."
        )
        demo = loads.get("demo process")
        saturated = demo.saturated if demo is not None else 0.0
        shared = (
            "its threads share one interpreter lock, so it can use about one core, and every "
            "hop it serves (the API server's answers to the controller, the simulated node, the "
            "fake GitHub, and the listener, which runs on the same loop) waits for it: those "
            "waits sit inside the product's hops too and are the harness's cost"
        )
        if core >= 0.85 or saturated >= 0.25:
            out.append(
                f"- The demo process is the bottleneck: {core * 100:.0f} % of one core over the "
                f"window, at 90 % or more in {saturated * 100:.0f} % of its half-seconds; "
                + shared
                + "."
            )
        else:
            out.append(
                f"- The demo process ran at {core * 100:.0f} % of one core over the window"
                + (
                    f" (busiest half-second {demo.peak * 100:.0f} %, at 90 % or more in "
                    f"{saturated * 100:.0f} % of them)"
                    if demo is not None
                    else ""
                )
                + "; "
                + shared
                + " when it is busy."
            )
    lags = captured.lags.get("demo event loop") or []
    values = [lag for at, lag in lags if begin <= at <= begin + window]
    if values:
        out.append(
            f"- The demo's event loop (fake GitHub, node, listener) was late by a median "
            f"{statistics.median(values) * 1000:.0f} ms, p99 {percentile(values, 0.99) * 1000:.0f} "
            "ms per tick: each request or event served there waits about that long first."
        )
    out.append(
        "- Not attributable from these tables: how much of a product hop is the product's own "
        "work and how much waits for the harness (the API server's time per write is shown "
        "apart, but a watch event's delivery to the controller and the demo loop's lag inside "
        "the listener's hops are not); the controller process's CPU by component (it is the "
        "real `scaleset controller`, unhooked); the API server thread's CPU by request kind; "
        "and the event-loop CPU that runs with no component frame on the stack (informers' "
        "watch decoding, TLS and HTTP I/O, the loop itself), listed by library above."
    )
    if captured.blackout > 0:
        out.append(
            f"- The soak's faults were on: {captured.blackout:.0f} s of blackout (GitHub down, "
            "or no controller leading) fall inside the job window, and a hop that waited "
            "through one is charged to whoever does that hop (a product hop that waited for "
            "GitHub, or for a new controller, is the fault's cost): compare with a run without "
            "`--chaos soak`."
        )
    if captured.marks.hook_errors:
        out.append(f"- The store listener failed {captured.marks.hook_errors} times (marks lost).")
    return out


# ---------------------------------------------------------------------------- main
async def _main(args: argparse.Namespace) -> int:
    say(
        f"start_profile: {args.jobs} jobs over {args.duration:g} s on runners {args.runners}, "
        f"chaos {args.chaos} (the demo's progress follows)"
    )
    code, report, captured, started, ended = await _run(args)
    text = render(args, code, report, captured, started, ended)
    out = args.output or RESULTS / ("start_profile-quick.md" if args.quick else "start_profile.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    say(f"written to {out}")
    return 0 if report is not None else 1


def _runner_workers(args: argparse.Namespace) -> str:
    if args.runner_workers is None:
        return f"{RUNNER_DEFAULT_WORKERS} (the controller's default, ARC's)"
    return f"{args.runner_workers} (`--runner-workers`; the default is {RUNNER_DEFAULT_WORKERS})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=SOAK_DEFAULTS.jobs,
        help="jobs queued (default %(default)s, the soak's count)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=SOAK_DEFAULTS.duration,
        help="seconds the jobs arrive over (default %(default)s, the soak's)",
    )
    parser.add_argument(
        "--runners",
        default=SOAK_DEFAULTS.runners,
        help="MIN:MAX runners of the scale set (default %(default)s, the soak's)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed of the workload (default %(default)s)"
    )
    parser.add_argument(
        "--chaos",
        choices=CHAOS_CHOICES,
        default="none",
        help="none (default): the soak's jobs, its faults off; soak: the soak exactly",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=5.0,
        help="seconds of job-completion grace (default %(default)s, the demo's)",
    )
    parser.add_argument(
        "--sample-interval",
        type=float,
        default=0.01,
        help="CPU seconds the event-loop thread uses between two samples of its stack (default "
        "%(default)s)",
    )
    parser.add_argument(
        "--runner-workers",
        type=int,
        default=None,
        help="workers of the EphemeralRunner controller (ARC's --runner-max-concurrent-"
        f"reconciles; default: the controller's own, {RUNNER_DEFAULT_WORKERS})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test: 40 jobs over 20 s on 0:8 runners (results to "
        "start_profile-quick.md unless --output)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where the report goes (default bench/results/start_profile.md)",
    )
    args = parser.parse_args(argv)
    args.scope = run_scope(parser, argv)
    args.command = command_line("bench/start_profile.py", argv)
    args.load_at_start = os.getloadavg()[0]
    if args.quick:
        args.jobs, args.duration, args.runners = 40, 20.0, "0:8"
    if args.jobs < 1 or args.duration <= 0 or args.sample_interval <= 0:
        parser.error("--jobs must be >= 1, --duration and --sample-interval > 0")
    if args.runner_workers is not None and args.runner_workers < 1:
        parser.error("--runner-workers must be >= 1")
    ProfiledDemoSystem.runner_workers = args.runner_workers
    try:
        demo_options(runners=args.runners)
    except ValueError as error:
        parser.error(str(error))
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
