"""``scaleset demo``: drive a workload through the whole system and judge it on ground truth.

The run: start the system (``system.DemoSystem``), wait for the listener to hold its session,
then feed the jobs of the workload at their times, inject its faults, and sample ground truth
every half second — runners by L0 state, queue depth, jobs done, the invariants of
``truth.Truth`` — printing progress as it goes. When every job has ended and the runner count is
back at the minimum (or the settle bound runs out) it prints the report, writes the HTML page
if asked, and exits 0 when every invariant held, 1 naming the broken ones.

``--chaos soak`` (issue 20) adds rates: a seeded share of the API server's writes fails, each
job's planned eviction or OOM kill hits its runner mid-job (``_job_faults``), a share of runner
processes hang; and scheduled kills and GitHub incidents, each injected in a task of its own so
an outage does not hold the kills back. ``run_seeds`` runs one seed after another (a fresh
system each) and prints one table of the figures per seed.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from scaleset.api import parse_kube_time, to_json, warm_windows
from scaleset.api.ephemeralrunner import EphemeralRunner
from scaleset.api.runner_state import classify
from scaleset.clock import Clock, SystemClock
from scaleset.demo.hops import ZombieHops
from scaleset.demo.options import (  # re-exported: the CLI, tests and benchmarks use them here
    SOAK_DEFAULTS as SOAK_DEFAULTS,
)
from scaleset.demo.options import (
    DemoOptions as DemoOptions,
)
from scaleset.demo.options import (
    demo_options as demo_options,
)
from scaleset.demo.options import (
    options_to_json,
)
from scaleset.demo.report import (
    JobWait,
    Report,
    Sample,
    render_html,
    render_seed_table,
    render_seeds_detail,
    render_text,
    runner_lanes,
    seed_detail,
    seed_row,
)
from scaleset.demo.system import (
    SCALE_SET_NAME,
    DemoSystem,
)
from scaleset.demo.truth import TERMINAL_ER_PHASES, RunnerProcess, Truth
from scaleset.demo.workload import (
    SOAK,
    FaultKind,
    FaultPlan,
    JobPlan,
    Workload,
    build_workload,
)
from scaleset.embedded.actions.control import GroundTruth, JobEventTruth, JobTruth
from scaleset.embedded.actions.faults import Surface
from scaleset.embedded.actions.model import JobEventKind, JobState
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube.objects import drop_managed_fields
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.logs import get_logger
from scaleset.runtime.informer import Informer
from scaleset.runtime.store import InformerEvent

log = get_logger(__name__)

SAMPLE_INTERVAL = 0.5
JOB_FAULT_INTERVAL = 0.2
"""How often the soak looks for started jobs whose runner it is to evict or OOM-kill."""
PASS_SLACK = 10.0
"""Seconds beyond the grace period a zombie may live: one reconciliation pass, with margin."""
QUEUED_STATES = frozenset({JobState.QUEUED, JobState.AVAILABLE, JobState.ASSIGNED})
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
NODE_WRITES = frozenset({"events", "pods/status", "pods/binding"})
"""Writes the (simulated) node and the event recorders make, not scaleset's own."""


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
    code, _ = await run_demo_report(options, stream=stream)
    return code


async def run_demo_report(
    options: DemoOptions, *, stream: TextIO = sys.stdout
) -> tuple[int, Report | None]:
    """Run the demo; the exit code and the report (``None`` when the run could not judge)."""
    workload = build_workload(
        jobs=options.jobs,
        duration=options.duration,
        seed=options.seed,
        chaos=options.chaos,
        outage_seconds=options.outage_seconds,
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
        session_idle_seconds=options.session_idle_seconds,
        separate_controller=options.chaos == SOAK,
        registration_pass_interval=options.registration_pass_interval,
        warm_windows=tuple(
            to_json(spec) for spec in warm_windows.parse_texts(options.warm_windows, "--window")[0]
        ),
    )
    if workload.rates is not None:
        system.chaos.hang_rate = workload.rates.hang
        system.chaos.rng.seed(options.seed)
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
        return 1, None
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
) -> tuple[int, Report | None]:
    assert system.fake is not None
    control = system.fake.control
    await _wait_for_listener(system, progress)
    system.started_at = system.clock.monotonic()  # times count from the first job
    samples: list[Sample] = []
    planned: dict[int, JobPlan] = {}
    if workload.rates is not None and system.api_faults is not None:
        system.api_faults.fail_rate(
            workload.rates.api_write_failures,
            seed=options.seed,
            exclude=tuple(NODE_WRITES),
        )

    async def feed() -> None:
        for job in workload.jobs:
            await _sleep_until(system, job.at)
            request_id = control.queue_job(
                [SCALE_SET_NAME], owner="acme", repository="app", duration_seconds=job.duration
            )
            planned[request_id] = job
            if job.fault == FaultKind.EVICT_IDLE:
                await _inject(system, FaultPlan(job.at, job.fault), options, progress)

    async def inject() -> None:
        running: list[asyncio.Task[None]] = []
        try:
            for fault in workload.faults:
                await _sleep_until(system, fault.at)
                running.append(
                    asyncio.create_task(
                        _inject(system, fault, options, progress), name=f"fault-{fault.kind}"
                    )
                )
            for task in running:
                await task
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    feeder = asyncio.create_task(feed(), name="demo-feed")
    injector = asyncio.create_task(inject(), name="demo-faults")
    job_faults = asyncio.create_task(_job_faults(system, planned, progress), name="job-faults")
    watcher = asyncio.create_task(_watch_runners(system, options), name="demo-runner-watch")
    deadline = workload.duration + options.settle_timeout
    runner_count = -1
    runner_names: set[str] = set()
    try:
        while True:
            await asyncio.sleep(SAMPLE_INTERVAL)
            failure = system.controller_failed()
            if failure is not None:
                progress.say(f"scaleset demo: the controller manager stopped: {failure!r}")
                return 1, None
            for task in (feeder, injector, job_faults):
                if task.done() and not task.cancelled() and task.exception() is not None:
                    progress.say(f"scaleset demo: {task.get_name()} failed: {task.exception()!r}")
                    return 1, None
            now = system.elapsed()
            sample, runner_count, runner_names = await _sample(system, now)
            samples.append(sample)
            progress.sample(sample, len(workload.jobs))
            system.truth.check(now)
            _say_removed_orphans(system, runner_names, progress)
            if (
                feeder.done()
                and injector.done()
                and _settled(system, runner_count, runner_names, options)
            ):
                break
            if now > deadline:
                progress.say(
                    f"scaleset demo: not settled {options.settle_timeout:.0f}s after the last "
                    "job was queued; judging the run as it stands"
                )
                break
    finally:
        for task in (feeder, injector, job_faults, watcher):
            task.cancel()
        await asyncio.gather(feeder, injector, job_faults, watcher, return_exceptions=True)
    if system.api_faults is not None:
        system.api_faults.clear()  # the final list must not be refused
    live = {r.metadata.name or "" for r in await _runners(system)}
    report = _report(system, workload, options, samples, runner_count, live)
    progress.say(render_text(report))
    if report.crossings:
        progress.say("zombies past the bound, hop by hop:")
        for hops in sorted(report.crossings, key=lambda h: -h.judged_age):
            progress.say(f"  {hops.describe()}")
    if report.lost_events:
        progress.say("lost job events:")
        for lost in sorted(report.lost_events, key=lambda e: e.seen_at):
            progress.say(f"  {lost.describe()}")
    if options.report_html is not None:
        options.report_html.write_text(render_html(report), encoding="utf-8")
        progress.say(f"report written to {options.report_html}")
    return (0 if report.ok else 1), report


async def _job_faults(system: DemoSystem, planned: dict[int, JobPlan], progress: Progress) -> None:
    """``--chaos soak``: evict or OOM-kill the runner of each job planned for it, the planned
    share of its duration after it started (ground truth: the fake's start time and runner)."""
    assert system.fake is not None
    assert system.kubelet is not None
    done: set[int] = set()
    pending: list[asyncio.Task[None]] = []

    async def hit(kind: FaultKind, pod: str, delay: float) -> None:
        await system.clock.sleep(delay)
        assert system.kubelet is not None
        alive = {p.name for p in system.kubelet.pods() if p.processes_alive}
        if pod not in alive:
            return
        await _strike_pod(system, kind, pod, progress)

    try:
        while True:
            await asyncio.sleep(JOB_FAULT_INTERVAL)
            snapshot = system.fake.control.snapshot()
            wall = system.clock.time()
            for job in snapshot.jobs:
                plan = planned.get(job.request_id)
                if (
                    plan is None
                    or plan.fault not in (FaultKind.EVICT_BUSY, FaultKind.OOM_BUSY)
                    or job.request_id in done
                    or job.start_time is None
                    or not job.runner_name
                ):
                    continue
                done.add(job.request_id)
                if job.state != JobState.RUNNING:
                    continue
                delay = max(0.0, plan.fault_after - (wall - job.start_time))
                assert plan.fault is not None
                pending.append(asyncio.create_task(hit(plan.fault, job.runner_name, delay)))
            pending = [task for task in pending if not task.done()]
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def _watch_runners(system: DemoSystem, options: DemoOptions) -> None:
    """Watch the EphemeralRunners and note, as each change arrives, when a job's start and
    completion show on its runner, when the controller observed the completion (its
    ``jobCompletionDeadline`` minus the grace: the controller's own clock, written to the
    microsecond) and when the runner began to be deleted — the zombie hops' middle steps."""
    assert system.client is not None
    informer = Informer(
        system.client,
        EPHEMERAL_RUNNER,
        namespaces=(system.runner_namespace,),
        projection=drop_managed_fields,
        clock=system.clock,
    )

    def seen(event: InformerEvent) -> None:
        raw = event.obj.raw
        status = raw.get("status") or {}
        now = system.elapsed()
        observed: float | None = None
        deadline = status.get("jobCompletionDeadline")
        if deadline:
            wall_offset = system.clock.time() - now
            observed = parse_kube_time(deadline).timestamp() - options.grace - wall_offset
        completion = status.get("jobCompletion") or {}
        system.truth.runner_seen(
            event.obj.name,
            now,
            job_request_id=int(status.get("jobRequestId") or 0),
            completion_job=str(completion.get("jobId") or ""),
            observed_at=observed,
            deleting=bool((raw.get("metadata") or {}).get("deletionTimestamp")),
            runner_id=int(status.get("runnerId") or 0),
            gone=event.type == "DELETED",
        )

    informer.add_handler(seen)
    await informer.run()


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


async def _sample(system: DemoSystem, now: float) -> tuple[Sample, int, set[str]]:
    """One sample of ground truth; also the count of runners not being deleted and the names
    of every runner."""
    assert system.fake is not None
    assert system.kubelet is not None
    assert system.client is not None
    listed = await system.client.list(EPHEMERAL_RUNNER, namespace=system.runner_namespace)
    states: dict[str, int] = {}
    for item in listed.items:
        runner = EphemeralRunner.model_validate(item.raw)
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
    for registration in snapshot.runners:
        if registration.registered:
            system.truth.registration_seen(registration.id, registration.name, now)
    _check_job_events(system, [item.raw for item in listed.items], snapshot, now)
    queued = sum(1 for job in snapshot.jobs if job.state in QUEUED_STATES)
    done = sum(1 for job in snapshot.jobs if job.state == JobState.COMPLETED)
    counted = sum(n for state, n in states.items() if state != "deleting")
    names = {item.name for item in listed.items}
    return Sample(at=now, states=states, queued=queued, done=done), counted, names


def _check_job_events(
    system: DemoSystem, runners: list[dict[str, Any]], snapshot: GroundTruth, now: float
) -> None:
    """A job that started (completed) on a runner that still lives, not terminal and not being
    deleted, must show on it as ``status.jobRequestId`` (``status.jobCompletion``) within the
    bound: otherwise the listener lost that JobStarted (JobCompleted)."""
    by_name = {
        (raw.get("metadata") or {}).get("name", ""): raw
        for raw in runners
        if not (raw.get("metadata") or {}).get("deletionTimestamp")
        and (raw.get("status") or {}).get("phase") not in TERMINAL_ER_PHASES
    }
    wall = system.clock.time()
    assert system.fake is not None
    control = system.fake.control
    for job in snapshot.jobs:
        raw = by_name.get(job.runner_name) if job.runner_name else None
        if raw is None or job.start_time is None:
            continue
        status = raw.get("status") or {}
        if status.get("jobRequestId") != job.request_id:
            late = wall - job.start_time
            if late > system.truth.event_bound(now - late, now):
                fate = _fate(control.job_event(job.request_id, JobEventKind.STARTED))
                system.truth.job_event_lost(
                    "JobStarted", str(job.request_id), job.runner_name, late, now, fate
                )
        if job.finish_time is not None:
            completion = status.get("jobCompletion") or {}
            if str(completion.get("jobId") or "") != job.job_id:
                late = wall - job.finish_time
                if late > system.truth.event_bound(now - late, now):
                    fate = _fate(control.job_event(job.request_id, JobEventKind.COMPLETED))
                    system.truth.job_event_lost(
                        "JobCompleted", str(job.request_id), job.runner_name, late, now, fate
                    )


def _fate(event: JobEventTruth | None) -> str:
    """What GitHub did with a job event, as ``hops.LostEvent.fate`` names it."""
    if event is None:
        return "unknown"
    if event.dropped_by_github:
        return f"github-dropped ({event.dropped_why})"
    if event.delivered_at is not None:
        acked = "acknowledged" if event.acked_at is not None else "not acknowledged"
        return f"delivered ({acked})"
    if event.dropped_why is not None:
        return f"dropped ({event.dropped_why})"
    return "queued (never delivered)"


def _settled(
    system: DemoSystem, runner_count: int, runner_names: set[str], options: DemoOptions
) -> bool:
    """Every job done, the runners back at the minimum, and no registration without its runner
    (L6: the registration pass removes one within a pass interval)."""
    assert system.fake is not None
    snapshot = system.fake.control.snapshot()
    every_job_done = all(job.state == JobState.COMPLETED for job in snapshot.jobs)
    return (
        every_job_done
        and runner_count == _minimum_in_force(system, options)
        and not leaked_registrations(snapshot, runner_names)
    )


def _minimum_in_force(system: DemoSystem, options: DemoOptions) -> int:
    """``--runners``' minimum, or the one of the ``--window`` in force now."""
    windows = warm_windows.parse_texts(options.warm_windows, "--window")[1]
    minimum = warm_windows.minimum_at(windows, options.min_runners, system.clock.now())[0]
    return min(minimum, options.max_runners)


def _say_removed_orphans(system: DemoSystem, runner_names: set[str], progress: Progress) -> None:
    """Note each registration that was left without its runner and is gone now."""
    assert system.fake is not None
    now = system.elapsed()
    orphans = leaked_registrations(system.fake.control.snapshot(), runner_names)
    for name in system.truth.registrations_without_runner(orphans, now):
        since = next(at for n, at, _ in reversed(system.truth.removed_orphans) if n == name)
        progress.say(
            f"[{now:6.1f}s] registration {name} had no runner for {now - since:.1f}s; removed "
            f"({system.truth.leak_history(name)})"
        )


def leaked_registrations(snapshot: GroundTruth, runner_names: set[str]) -> list[str]:
    """Names of the scale set's live registrations that no EphemeralRunner has."""
    return [
        r.name
        for r in snapshot.runners
        if r.registered and r.name.startswith(SCALE_SET_NAME) and r.name not in runner_names
    ]


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
        await _strike_pod(system, kind, target.metadata.name, progress)
    elif kind == FaultKind.HANG_AFTER_JOB:
        system.chaos.hangs_pending += 1
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: the next runner hangs")
    elif kind == FaultKind.KILL_LISTENER:
        killed, back = await _kill_listeners(system, progress)
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: {killed} killed")
        await back
    elif kind == FaultKind.RESTART_CONTROLLER:
        async with system.controller_lock:
            await system.stop_controller()
            await system.start_controller()
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: controller restarted")
    elif kind == FaultKind.KILL_CONTROLLER:
        async with system.controller_lock:
            await system.kill_controller()
            blackout = system.truth.outage_started(system.elapsed())
            await system.start_controller()
        progress.say(
            f"[{system.elapsed():6.1f}s] fault {kind.value}: controller killed; a new one waits "
            "for the lease"
        )
        await _until_a_controller_leads(system)
        system.truth.outage_ended(system.elapsed(), blackout)
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: a new controller leads")
    elif kind in (FaultKind.GITHUB_OUTAGE, FaultKind.GITHUB_5XX_BURST):
        # GitHub answers every call with an error, message polls included (503 in an outage,
        # 500 in a burst): no JobCompleted can reach anyone, so both are blackouts to the judge
        outage = kind == FaultKind.GITHUB_OUTAGE
        faults = system.fake.control.faults
        rule = faults.unavailable(None) if outage else faults.fail_next(None, 500)
        blackout = system.truth.outage_started(system.elapsed())
        status = 503 if outage else 500
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: GitHub answers {status}")
        try:
            await system.clock.sleep(options.outage_seconds if outage else options.burst_seconds)
        finally:
            faults.remove(rule)
            system.truth.outage_ended(system.elapsed(), blackout)
        recovered = (
            "GitHub is back"
            if outage
            else "GitHub answers again "
            f"({system.truth.outage_overlap(0.0, system.elapsed()):.1f}s of blackout so far)"
        )
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: {recovered}")
    elif kind == FaultKind.MQ_TOKEN_EXPIRY:
        control = system.fake.control
        with contextlib.suppress(TimeoutError):  # no session for a minute: nothing to expire
            await control.wait_for(
                lambda truth: bool(truth.sessions), within=60.0, what="a listener session"
            )
        expired = [
            s.id for s in control.snapshot().scale_sets if control.expire_message_queue_token(s.id)
        ]
        progress.say(
            f"[{system.elapsed():6.1f}s] fault {kind.value}: "
            f"{len(expired)} message-queue token(s) expired"
        )
    elif kind == FaultKind.STALE_SESSION_RESTART:
        # GitHub refuses to delete sessions for a while (longer than the client's own retries),
        # so the successor's delete of the old session fails and GitHub keeps holding it.
        faults = system.fake.control.faults
        rule = faults.unavailable(
            None, surface=Surface.ACTIONS, method="DELETE", path_contains="sessions"
        )
        try:
            killed, returned = await _kill_listeners(system, progress)
            progress.say(
                f"[{system.elapsed():6.1f}s] fault {kind.value}: {killed} killed; GitHub keeps "
                "the old session"
            )
            try:
                await system.clock.sleep(options.stale_session_seconds)
            except asyncio.CancelledError:
                returned.cancel()
                raise
        finally:
            faults.remove(rule)
        progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: sessions can be deleted")
        await returned
    elif kind == FaultKind.WATCH_EXPIRY:
        if system.api_faults is None:
            progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: no embedded API server")
            return
        faults_api = system.api_faults
        await asyncio.to_thread(faults_api.compact)
        await asyncio.to_thread(faults_api.drop_watches)
        progress.say(
            f"[{system.elapsed():6.1f}s] fault {kind.value}: history compacted, watches ended"
        )


async def _strike_pod(system: DemoSystem, kind: FaultKind, pod: str, progress: Progress) -> None:
    """OOM-kill (``OOM_BUSY``) or evict (the others) runner pod ``pod``, and say so; the fault
    is recorded first, and a kubelet that fails to carry it out is not an error."""
    assert system.kubelet is not None
    system.truth.fault_injected(pod)
    with contextlib.suppress(Exception):
        if kind == FaultKind.OOM_BUSY:
            await system.kubelet.oom_kill(system.runner_namespace, pod)
        else:
            await system.kubelet.evict(system.runner_namespace, pod)
    progress.say(f"[{system.elapsed():6.1f}s] fault {kind.value}: {pod}")


async def _until_a_controller_leads(system: DemoSystem) -> None:
    """Until the current controller manager leads (another kill may replace the one we
    started meanwhile; the run's own deadline bounds the wait)."""
    while True:  # the lease lives in the API server: look again each sample
        if await system.controller_leads():
            return
        await asyncio.sleep(SAMPLE_INTERVAL)


async def _kill_listeners(system: DemoSystem, progress: Progress) -> tuple[int, asyncio.Task[None]]:
    """Kill every listener process (``kill -9``: no shutdown reaches GitHub, its message
    session stays); returns how many, and a task that ends the blackout the kill starts once a
    listener polls the message queue again (its pod recreated, after the recreation back-off; no
    event can be applied meanwhile)."""
    assert system.kubelet is not None
    assert system.fake is not None
    before = {s.session_id: s.polls for s in system.fake.control.snapshot().sessions}
    listeners = [p for p in system.kubelet.pods() if p.name.endswith("-listener")]
    blackout = system.truth.outage_started(system.elapsed())
    # A simulated process ends by cancellation, which runs the listener's shutdown path (it
    # deletes its message session); a kill -9 runs nothing. While the kill lands, GitHub
    # answers session deletes 404 at once (not retried, so the process ends as fast as a
    # killed one), and the session outlives the process as it would.
    faults = system.fake.control.faults
    no_delete = faults.fail_next(
        None, 404, surface=Surface.ACTIONS, method="DELETE", path_contains="sessions"
    )
    try:
        for listener in listeners:
            with contextlib.suppress(Exception):
                await system.kubelet.exit(listener.namespace, listener.name, "listener", 137)
    finally:
        faults.remove(no_delete)

    def polled_again(truth: GroundTruth) -> bool:
        return any(s.polls > before.get(s.session_id, 0) for s in truth.sessions)

    async def watch() -> None:
        assert system.fake is not None
        began = system.elapsed()
        try:
            while True:  # bounded by the run's own deadline (the task is cancelled then)
                with contextlib.suppress(TimeoutError):
                    await system.fake.control.wait_for(polled_again, within=30.0, what="a poll")
                    break
        finally:
            system.truth.outage_ended(system.elapsed(), blackout)
        progress.say(
            f"[{system.elapsed():6.1f}s] a listener polls again "
            f"({system.elapsed() - began:.1f}s after the kill)"
        )

    return len(listeners), asyncio.create_task(watch(), name="listener-blackout")


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
            where = ""
            if job.runner_id is not None:
                held_by = snapshot.runner(job.runner_id)
                where = (
                    f", runner {held_by.name}: "
                    f"{'registered' if held_by.registered else held_by.removed_reason}, "
                    f"{'connected' if held_by.connected else 'not connected'}"
                )
            unfinished.append(f"{job.request_id} ({job.state.value}{where})")
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
    leaked = leaked_registrations(snapshot, live_runners)
    system.truth.finish(
        now,
        unfinished_jobs=unfinished,
        leaked_registrations=leaked,
        runner_count=runner_count,
        desired=_minimum_in_force(system, options),
    )
    writes = _api_writes(system)
    crossings, hung = _zombie_hops(system, snapshot, options.grace, now)
    lost = system.truth.lost({job.request_id: job.job_id for job in snapshot.jobs})
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
        chaos=options.chaos,
        zombie_bound=system.truth.zombie_bound,
        max_judged_zombie_age=system.truth.max_judged_zombie_age(),
        api_failures_injected=(
            system.api_faults.rate_hits() if system.api_faults is not None else 0
        ),
        crossings=crossings,
        hung=hung,
        lost_events=lost,
        lanes=runner_lanes(system.truth.processes.values(), now=now),
    )


def _zombie_hops(
    system: DemoSystem, snapshot: GroundTruth, grace: float, now: float
) -> tuple[list[ZombieHops], list[ZombieHops]]:
    """The hops of every zombie that crossed the bound, and of every runner that hung after
    its job (the L4 path), from the fake service, the demo's watch and the simulated node."""
    finished: dict[str, list[JobTruth]] = {}
    for done in snapshot.jobs:
        if done.runner_name and done.finish_time is not None:
            finished.setdefault(done.runner_name, []).append(done)
    offset = system.clock.time() - now  # wall time of the run's second 0
    crossings: list[ZombieHops] = []
    hung: list[ZombieHops] = []
    for process in system.truth.processes.values():
        if process.first_zombie_at is None:
            continue
        hops = _hops_of(system, process, finished.get(process.pod, []), offset, grace, now)
        if process.max_judged_age > system.truth.zombie_bound:
            crossings.append(hops)
        if process.zombie_phase == RunnerPhase.HANGING.value:
            hung.append(hops)
    return crossings, hung


def _hops_of(
    system: DemoSystem,
    process: RunnerProcess,
    jobs: list[JobTruth],
    offset: float,
    grace: float,
    now: float,
) -> ZombieHops:
    """One zombie's hops; ``jobs`` are the finished jobs of its pod, ``offset`` the wall time
    of the run's second 0."""
    assert system.fake is not None
    assert process.first_zombie_at is not None
    since = process.first_zombie_at

    def at(wall: float | None) -> float | None:
        return None if wall is None else wall - offset

    before = [j for j in jobs if (j.finish_time or 0.0) - offset <= since + 1]
    job = max(before, key=lambda j: j.finish_time or 0.0, default=None)
    event = (
        system.fake.control.job_event(job.request_id, JobEventKind.COMPLETED)
        if job is not None
        else None
    )
    marks = system.truth.runner_marks.get(process.pod)
    written = (
        marks.completion_at
        if marks is not None and job is not None and marks.completion_job == job.job_id
        else None
    )
    observed = marks.observed_at if marks is not None else None
    end = process.ended_at if process.ended_at is not None else now
    return ZombieHops(
        pod=process.pod,
        phase=process.zombie_phase,
        since=since,
        judged_age=process.max_judged_age,
        blackout=system.truth.outage_overlap(since, end),
        request_id=job.request_id if job is not None else None,
        finished_at=at(job.finish_time) if job is not None else None,
        delivered_at=at(event.delivered_at) if event is not None else None,
        acked_at=at(event.acked_at) if event is not None else None,
        dropped=str(event.dropped_why) if event is not None and event.dropped_by_github else "",
        written_at=written,
        observed_at=observed,
        deadline_at=None if observed is None else observed + grace,
        runner_deleting_at=marks.deleting_at if marks is not None else None,
        sigterm_at=process.stop_signal_at,
        gone_at=process.ended_at,
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


def _open_log(path: Path) -> TextIO:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("w", encoding="utf-8")


async def run_seeds(
    options: DemoOptions,
    seeds: list[int],
    *,
    stream: TextIO = sys.stdout,
    log_dir: Path | None = None,
    parallel: int = 1,
) -> int:
    """Run ``options`` once per seed (a fresh system each) and print one table of the figures;
    0 when every seed kept every invariant, 1 otherwise. ``parallel`` > 1 runs that many seeds
    at a time, each in a process of its own (``seed_worker``). Each seed's own output goes to
    ``log_dir/seed-N.log`` when given (else it is dropped)."""
    rows: dict[int, dict[str, str]] = {}
    details: dict[int, dict[str, Any]] = {}
    broken: list[int] = []
    gate = asyncio.Semaphore(max(1, parallel))

    async def one(seed: int) -> None:
        async with gate:
            started = time.monotonic()
            if parallel > 1:
                code, row, detail = await _seed_in_process(replace(options, seed=seed), log_dir)
            else:
                code, row, detail = await _seed_here(replace(options, seed=seed), log_dir)
            row.setdefault("wall", f"{time.monotonic() - started:.0f}")
            rows[seed] = row
            details[seed] = detail
            if code != 0:
                broken.append(seed)
            print(render_seed_table([row]).splitlines()[-1], file=stream, flush=True)

    await asyncio.gather(*(one(seed) for seed in seeds))
    print(render_seed_table([rows[seed] for seed in seeds]), file=stream)
    print(render_seeds_detail([details[seed] for seed in seeds]), file=stream)
    print(f"seeds: {', '.join(str(seed) for seed in seeds)}", file=stream)
    if broken:
        print(f"seeds that broke an invariant: {', '.join(map(str, sorted(broken)))}", file=stream)
    else:
        print(f"every invariant held on all {len(seeds)} seeds", file=stream)
    return 1 if broken else 0


async def _seed_here(
    options: DemoOptions, log_dir: Path | None
) -> tuple[int, dict[str, str], dict[str, Any]]:
    started = time.monotonic()
    out = _open_log(log_dir / f"seed-{options.seed}.log") if log_dir else io.StringIO()
    try:
        code, report = await run_demo_report(options, stream=out)
    finally:
        out.close()
    wall = time.monotonic() - started
    if report is None:
        return code, {"seed": str(options.seed), "wall": f"{wall:.0f}", "ok": "DID NOT RUN"}, {}
    return code, seed_row(report, wall), seed_detail(report)


async def _seed_in_process(
    options: DemoOptions, log_dir: Path | None
) -> tuple[int, dict[str, str], dict[str, Any]]:

    with tempfile.TemporaryDirectory(prefix="scaleset-seed-") as scratch:
        figures = Path(scratch) / "figures.json"
        log_path = (log_dir or Path(scratch)) / f"seed-{options.seed}.log"
        out = _open_log(log_path)
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "scaleset.demo.seed_worker",
                options_to_json(options),
                str(figures),
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
            )
            code = await process.wait()
        finally:
            out.close()
        if not figures.exists():
            return max(code, 1), {"seed": str(options.seed), "ok": f"WORKER EXITED {code}"}, {}
        result = json.loads(figures.read_text(encoding="utf-8"))
    row = {str(k): str(v) for k, v in result["row"].items()}
    return int(result["code"]), row, dict(result.get("detail") or {})
