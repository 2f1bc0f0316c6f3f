"""``scaleset demo``: drive a workload through the whole system and judge it on ground truth.

The run: start the system (``system.DemoSystem``), wait for the listener to hold its session,
then feed the jobs of the workload at their times, inject its faults, and sample ground truth
every half second — runners by L0 state, queue depth, jobs done, the invariants of
``truth.Truth`` — printing progress as it goes. When every job has ended and the runner count is
back at the minimum (or the settle bound runs out) it prints the report, writes the HTML page
if asked, and exits 0 when every invariant held, 1 naming the broken ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from scaleset.api.ephemeralrunner import EphemeralRunner
from scaleset.api.runner_state import classify
from scaleset.clock import Clock, SystemClock
from scaleset.demo.report import JobWait, Report, Sample, render_html, render_text
from scaleset.demo.system import (
    CONTROLLER_NAMESPACE,
    RUNNER_NAMESPACE,
    SCALE_SET_NAME,
    DemoSystem,
)
from scaleset.demo.truth import Truth
from scaleset.demo.workload import FaultKind, FaultPlan, Workload, build_workload
from scaleset.embedded.actions.model import JobState
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.logs import get_logger

log = get_logger(__name__)

SAMPLE_INTERVAL = 0.5
PASS_SLACK = 10.0
"""Seconds beyond the grace period a zombie may live: one reconciliation pass, with margin."""
QUEUED_STATES = frozenset({JobState.QUEUED, JobState.AVAILABLE, JobState.ASSIGNED})
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
NODE_WRITES = frozenset({"events", "pods/status", "pods/binding"})
"""Writes the (simulated) node and the event recorders make, not scaleset's own."""


@dataclass(frozen=True)
class DemoOptions:
    jobs: int = 30
    duration: float = 30.0
    min_runners: int = 0
    max_runners: int = 10
    seed: int = 1
    chaos: str = "none"
    kubeconfig: Path | None = None
    report_html: Path | None = None
    grace: float = 5.0
    settle_timeout: float = 90.0
    outage_seconds: float = 8.0
    """How long the ``github-outage`` fault keeps GitHub down."""
    controller_namespace: str = CONTROLLER_NAMESPACE
    runner_namespace: str = RUNNER_NAMESPACE


class Progress:
    """Live progress: one line rewritten in place on a terminal, plain lines otherwise."""

    def __init__(self, stream: TextIO, *, every: float = 2.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.every = every
        self._last = -every

    def say(self, line: str) -> None:
        self._end_line()
        print(line, file=self.stream, flush=True)

    def sample(self, sample: Sample, jobs: int) -> None:
        s = sample.states
        line = (
            f"[{sample.at:6.1f}s] runners {s.get('starting', 0)} starting, "
            f"{s.get('idle', 0)} idle, {s.get('busy', 0)} busy, "
            f"{s.get('terminal', 0)} terminal, {s.get('deleting', 0)} deleting | "
            f"queue {sample.queued} | jobs {sample.done}/{jobs} done"
        )
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
            self._pending = True
        elif sample.at - self._last >= self.every:
            self._last = sample.at
            print(line, file=self.stream, flush=True)

    def _end_line(self) -> None:
        if self.tty and getattr(self, "_pending", False):
            self.stream.write("\n")
            self._pending = False


async def run_demo(options: DemoOptions, *, stream: TextIO = sys.stdout) -> int:
    """Run the demo; returns the exit code (0 all invariants held, 1 otherwise)."""
    workload = build_workload(
        jobs=options.jobs, duration=options.duration, seed=options.seed, chaos=options.chaos
    )
    clock: Clock = SystemClock()
    progress = Progress(stream)
    truth = Truth(zombie_bound=options.grace + PASS_SLACK)
    system = DemoSystem(
        clock=clock,
        truth=truth,
        min_runners=options.min_runners,
        max_runners=options.max_runners,
        grace=options.grace,
        kubeconfig=options.kubeconfig,
        started_at=clock.monotonic(),
        controller_namespace=options.controller_namespace,
        runner_namespace=options.runner_namespace,
    )
    progress.say(
        f"scaleset demo: {len(workload.jobs)} jobs over {workload.duration:.0f}s, runners "
        f"{options.min_runners}:{options.max_runners}, seed {workload.seed}, chaos "
        f"{options.chaos}"
    )
    try:
        await system.start()
    except Exception as error:
        await system.stop()
        progress.say(f"scaleset demo: could not start: {error}")
        return 1
    try:
        progress.say(f"kubeconfig: {system.kubeconfig}")
        progress.say(
            f"  watch it:  kubectl --kubeconfig {system.kubeconfig} get ephemeralrunners "
            f"-n {system.runner_namespace} -w"
        )
        return await _drive(system, workload, options, progress)
    finally:
        await system.stop()


async def _drive(
    system: DemoSystem, workload: Workload, options: DemoOptions, progress: Progress
) -> int:
    assert system.fake is not None
    control = system.fake.control
    await _wait_for_listener(system, progress)
    system.started_at = system.clock.monotonic()  # times count from the first job
    samples: list[Sample] = []

    async def feed() -> None:
        for job in workload.jobs:
            await _sleep_until(system, job.at)
            control.queue_job(
                [SCALE_SET_NAME], owner="acme", repository="app", duration_seconds=job.duration
            )

    async def inject() -> None:
        for fault in workload.faults:
            await _sleep_until(system, fault.at)
            await _inject(system, fault, options, progress)

    feeder = asyncio.create_task(feed(), name="demo-feed")
    injector = asyncio.create_task(inject(), name="demo-faults")
    deadline = workload.duration + options.settle_timeout
    runner_count = -1
    try:
        while True:
            await asyncio.sleep(SAMPLE_INTERVAL)
            failure = system.controller_failed()
            if failure is not None:
                progress.say(f"scaleset demo: the controller manager stopped: {failure!r}")
                return 1
            for task in (feeder, injector):
                if task.done() and not task.cancelled() and task.exception() is not None:
                    progress.say(f"scaleset demo: {task.get_name()} failed: {task.exception()!r}")
                    return 1
            now = system.elapsed()
            sample, runner_count = await _sample(system, now)
            samples.append(sample)
            progress.sample(sample, len(workload.jobs))
            system.truth.check(now)
            if feeder.done() and injector.done() and _settled(system, runner_count, options):
                break
            if now > deadline:
                progress.say(
                    f"scaleset demo: not settled {options.settle_timeout:.0f}s after the last "
                    "job was queued; judging the run as it stands"
                )
                break
    finally:
        for task in (feeder, injector):
            task.cancel()
        await asyncio.gather(feeder, injector, return_exceptions=True)
    live = {r.metadata.name or "" for r in await _runners(system)}
    report = _report(system, workload, options, samples, runner_count, live)
    progress.say(render_text(report))
    if options.report_html is not None:
        options.report_html.write_text(render_html(report), encoding="utf-8")
        progress.say(f"report written to {options.report_html}")
    return 0 if report.ok else 1


async def _wait_for_listener(system: DemoSystem, progress: Progress, within: float = 60.0) -> None:
    """Wait (bounded) until the listener holds a message session for the scale set."""
    assert system.fake is not None
    progress.say("waiting for the listener to open its message session ...")
    await system.fake.control.wait_for(
        lambda truth: any(s.polls > 0 for s in truth.sessions),
        within=within,
        what="the listener's message session",
    )
    progress.say(f"listener is polling ({system.elapsed():.1f}s after start); feeding jobs")


async def _sleep_until(system: DemoSystem, at: float) -> None:
    delay = at - system.elapsed()
    if delay > 0:
        await system.clock.sleep(delay)


async def _runners(system: DemoSystem) -> list[EphemeralRunner]:
    assert system.client is not None
    listed = await system.client.list(EPHEMERAL_RUNNER, namespace=system.runner_namespace)
    return [EphemeralRunner.model_validate(item.raw) for item in listed.items]


async def _sample(system: DemoSystem, now: float) -> tuple[Sample, int]:
    assert system.fake is not None
    assert system.kubelet is not None
    runners = await _runners(system)
    states: dict[str, int] = {}
    for runner in runners:
        state = classify(runner).value
        states[state] = states.get(state, 0) + 1
        system.truth.er_phase(
            runner.metadata.uid or runner.metadata.name or "",
            runner.metadata.name or "",
            str(runner.status.phase or ""),
            now,
        )
    alive = {pod.name for pod in system.kubelet.pods() if pod.processes_alive}
    for process in list(system.truth.processes.values()):
        if process.ended_at is None and process.pod not in alive:
            system.truth.pod_gone(process.pod, now)
    snapshot = system.fake.control.snapshot()
    queued = sum(1 for job in snapshot.jobs if job.state in QUEUED_STATES)
    done = sum(1 for job in snapshot.jobs if job.state == JobState.COMPLETED)
    counted = sum(n for state, n in states.items() if state != "deleting")
    return Sample(at=now, states=states, queued=queued, done=done), counted


def _settled(system: DemoSystem, runner_count: int, options: DemoOptions) -> bool:
    assert system.fake is not None
    snapshot = system.fake.control.snapshot()
    every_job_done = all(job.state == JobState.COMPLETED for job in snapshot.jobs)
    return every_job_done and runner_count == options.min_runners


async def _inject(
    system: DemoSystem, fault: FaultPlan, options: DemoOptions, progress: Progress
) -> None:
    """Inject one fault; a fault with no target at its time (no busy runner) is skipped."""
    assert system.kubelet is not None
    assert system.fake is not None
    kind = fault.kind
    if kind in (FaultKind.EVICT_IDLE, FaultKind.EVICT_BUSY, FaultKind.OOM_BUSY):
        wanted = "idle" if kind == FaultKind.EVICT_IDLE else "busy"
        target = next((r for r in await _runners(system) if classify(r).value == wanted), None)
        if target is None or not target.metadata.name:
            progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: no {wanted} runner")
            return
        pod = target.metadata.name
        system.truth.fault_injected(pod)
        with contextlib.suppress(Exception):
            if kind == FaultKind.OOM_BUSY:
                await system.kubelet.oom_kill(system.runner_namespace, pod)
            else:
                await system.kubelet.evict(system.runner_namespace, pod)
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: {pod}")
    elif kind == FaultKind.HANG_AFTER_JOB:
        system.chaos.hangs_pending += 1
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: the next runner hangs")
    elif kind == FaultKind.KILL_LISTENER:
        listeners = [p for p in system.kubelet.pods() if p.name.endswith("-listener")]
        for listener in listeners:
            with contextlib.suppress(Exception):
                await system.kubelet.exit(listener.namespace, listener.name, "listener", 137)
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: {len(listeners)} killed")
    elif kind == FaultKind.RESTART_CONTROLLER:
        await system.stop_controller()
        await system.start_controller()
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: controller restarted")
    elif kind == FaultKind.KILL_CONTROLLER:
        await system.kill_controller()
        await system.start_controller()
        progress.say(
            f"[{system.elapsed():6.1f}s] fault {kind.value}: controller killed; a new one waits "
            "for the lease"
        )
    elif kind == FaultKind.GITHUB_OUTAGE:
        faults = system.fake.control.faults
        faults.unavailable(None)
        system.truth.outage_started(system.elapsed())
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: GitHub answers 503")
        await system.clock.sleep(options.outage_seconds)
        faults.clear()
        system.truth.outage_ended(system.elapsed())
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: GitHub is back")


def _report(
    system: DemoSystem,
    workload: Workload,
    options: DemoOptions,
    samples: list[Sample],
    runner_count: int,
    live_runners: set[str],
) -> Report:
    assert system.fake is not None
    now = system.elapsed()
    snapshot = system.fake.control.snapshot()
    start_wall = system.clock.time() - now
    waits: list[JobWait] = []
    succeeded = failed = cancelled = 0
    unfinished: list[str] = []
    for job in snapshot.jobs:
        if job.state != JobState.COMPLETED:
            unfinished.append(str(job.request_id))
        result = (job.result or "").lower()
        if job.state == JobState.COMPLETED:
            if result in ("succeeded", "success"):
                succeeded += 1
            elif result in ("canceled", "cancelled") or job.cancel_requested:
                cancelled += 1
            else:
                failed += 1
        waits.append(
            JobWait(
                index=str(job.request_id),
                queued_at=max(0.0, job.queue_time - start_wall),
                wait=(job.start_time - job.queue_time) if job.start_time is not None else None,
                result=result or job.state.value,
            )
        )
    registered = [
        r.name for r in snapshot.runners if r.registered and r.name.startswith(SCALE_SET_NAME)
    ]
    leaked = [name for name in registered if name not in live_runners]
    system.truth.finish(
        now,
        unfinished_jobs=unfinished,
        leaked_registrations=leaked,
        runner_count=runner_count,
        desired=options.min_runners,
    )
    writes = _api_writes(system)
    busy = sum(
        (job.finish_time - job.start_time)
        for job in snapshot.jobs
        if job.start_time is not None and job.finish_time is not None
    )
    return Report(
        seed=workload.seed,
        jobs_planned=len(workload.jobs),
        jobs_succeeded=succeeded,
        jobs_failed=failed,
        jobs_cancelled=cancelled,
        waits=waits,
        runner_seconds=system.truth.runner_seconds(now),
        busy_seconds=busy,
        api_writes=sum(writes.values()) if system.api_faults is not None else -1,
        writes_by_resource=writes,
        zombie_seconds=system.truth.zombie_seconds(now),
        max_zombie_age=system.truth.max_zombie_age(),
        leaked_registrations=len(leaked),
        wall_seconds=now,
        violations=list(system.truth.violations),
        assumptions=[e.behaviour for e in system.fake.control.assumptions_relied_on()],
        samples=samples,
    )


def _api_writes(system: DemoSystem) -> dict[str, int]:
    """``verb resource`` -> count of scaleset's writes (empty on an external API server)."""
    if system.api_faults is None:
        return {}
    return {
        f"{verb} {resource}": n
        for (verb, resource), n in system.api_faults.request_counts().items()
        if verb in WRITE_VERBS and resource not in NODE_WRITES
    }
