"""Ground truth of a demo run and the invariants checked against it while the run goes on.

Nothing here reads scaleset's own opinion of itself (ER phases are only used for the "no
resurrection" rule, which is about those phases). What a runner process does comes from the
simulated runner (``on_phase``, per pod), what GitHub knows from the fake service's snapshot,
what the nodes know from the simulated kubelet. The invariants (issue 16):

- ``no-zombie-over-bound`` — no runner process stays alive without being able to work (hanging
  after its job, or refused by GitHub because its registration is gone or its config was
  reused) for longer than the grace period plus one reconciliation pass (L4, L5), plus the time
  GitHub was down meanwhile (a JobCompleted cannot reach anyone during an outage);
- ``no-busy-runner-deleted`` — no runner's pod is deleted while it runs a job, except by a
  fault the demo injected itself (L3);
- ``no-resurrection`` — no EphemeralRunner goes from a terminal phase to a non-terminal one (L2);
- ``jobs-finished`` — at the end every job completed or was legitimately cancelled;
- ``no-leaked-registration`` — at the end no registration of the scale set lacks its runner (L6);
- ``runners-converge`` — at the end the runner count is back at the minimum (L3/L6);
- ``no-jit-reuse`` — no JIT config is started by two runner processes (the simulated node sees
  every container start and the config it was given; only a digest is kept);
- ``no-lost-job-event`` — a job that started (ground truth: the fake service) is written on its
  EphemeralRunner, and a job that completed gets its completion there, within the bound while
  that runner lives on (not terminal, not being deleted): a JobStarted or JobCompleted the
  listener never applied is lost. This one reads scaleset's own objects, because applying the
  event is what it judges. An event GitHub itself dropped before any listener got it (its
  session expired with the event queued, or there was no session: the fake service knows) is
  not ours to lose: it is recorded (``lost_events``, fate ``github-dropped``) and reported in a
  column of its own, not as a broken invariant.

The zombie and lost-event bounds are extended by the blackouts overlapping them: GitHub outages
and 5xx bursts (nobody can learn that a job completed while GitHub answers every call with an
error) and the time a killed controller manager's successor waits for the lease (no
reconciliation pass happens meanwhile).

Each broken invariant is recorded once per subject with the time it was seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from scaleset.demo.hops import LostEvent, RunnerMarks
from scaleset.embedded.runner import RunnerPhase

ZOMBIE_PHASES = frozenset(
    {RunnerPhase.HANGING, RunnerPhase.SESSION_CONFLICT, RunnerPhase.REGISTRATION_DELETED}
)
"""A process in one of these phases holds a slot without being able to run a job."""

WORKING_PHASES = frozenset({RunnerPhase.JOB_RECEIVED, RunnerPhase.JOB_STARTED})
TERMINAL_ER_PHASES = frozenset({"Failed", "Succeeded", "Outdated"})


@dataclass(frozen=True)
class Violation:
    invariant: str
    subject: str
    detail: str
    at: float


@dataclass
class RunnerProcess:
    """One start of one simulated runner process (one pod container start)."""

    pod: str
    started_at: float
    phase: RunnerPhase = RunnerPhase.CONNECTING
    ended_at: float | None = None
    zombie_since: float | None = None
    zombie_seconds: float = 0.0
    max_zombie_age: float = 0.0
    max_judged_age: float = 0.0
    """The oldest it got as a zombie, minus the blackouts meanwhile (what the bound judges)."""
    jobs: int = 0
    zombie_phase: str = ""
    """The zombie phase it entered first ("" if it never was one)."""
    first_zombie_at: float | None = None
    stop_signal_at: float | None = None
    """When the node sent it SIGTERM (its pod was deleted or evicted)."""
    history: list[tuple[float, RunnerPhase]] = field(default_factory=list)
    """Every phase it reported, with when (the report's lane of this runner)."""

    def alive_seconds(self, now: float) -> float:
        return (self.ended_at if self.ended_at is not None else now) - self.started_at


@dataclass
class Truth:
    """What the run saw, appended to while it runs; ``check`` and ``finish`` add violations."""

    zombie_bound: float
    processes: dict[tuple[str, int], RunnerProcess] = field(default_factory=dict)
    faulted_pods: set[str] = field(default_factory=set)
    outages: list[tuple[float, float | None]] = field(default_factory=list)
    """Blackouts (start, end or ``None`` while it lasts): GitHub outages and controller-less
    spells; a zombie's bound is extended by its overlap with them."""
    jit_configs: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Digest of a JIT config -> the (pod, start) that first ran it."""
    er_phases: dict[str, list[str]] = field(default_factory=dict)
    runner_marks: dict[str, RunnerMarks] = field(default_factory=dict)
    """EphemeralRunner name -> what the demo's watch saw of it (for the zombie hops)."""
    started_landed: dict[int, float] = field(default_factory=dict)
    """Job request id -> when its JobStarted was first seen on a runner."""
    completion_landed: dict[str, float] = field(default_factory=dict)
    """Job id -> when its JobCompleted was first seen on a runner."""
    registered_at: dict[int, tuple[str, float]] = field(default_factory=dict)
    """Registration id -> its runner name and when the fake service was first seen holding it
    (sampled)."""
    without_runner: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Registration name -> when it was first seen live without its EphemeralRunner, and on
    how many samples since."""
    removed_orphans: list[tuple[str, float, float]] = field(default_factory=list)
    """(name, first seen without its runner, removed at) of each such registration that went."""
    lost_events: dict[tuple[str, str], LostEvent] = field(default_factory=dict)
    """(kind, job request id) -> the event missing past the bound, with its fate."""
    violations: list[Violation] = field(default_factory=list)
    _reported: set[tuple[str, str]] = field(default_factory=set)

    # ------------------------------------------------------------------ events in
    def runner_phase(self, pod: str, start: int, phase: RunnerPhase, now: float) -> None:
        """The simulated runner in ``pod`` (its ``start``-th container start) reports ``phase``."""
        key = (pod, start)
        process = self.processes.get(key)
        if process is None:
            process = self.processes[key] = RunnerProcess(pod=pod, started_at=now)
        previous = process.phase
        stopped_mid_job = phase == RunnerPhase.STOPPING and previous in WORKING_PHASES
        if stopped_mid_job and pod not in self.faulted_pods:
            self._violate(
                "no-busy-runner-deleted",
                pod,
                f"pod {pod} was stopped while its runner ran a job ({previous.value})",
                now,
            )
        if phase == RunnerPhase.JOB_STARTED:
            process.jobs += 1
        if phase in ZOMBIE_PHASES and process.zombie_since is None:
            process.zombie_since = now
            if not process.zombie_phase:
                process.zombie_phase, process.first_zombie_at = phase.value, now
        elif phase not in ZOMBIE_PHASES and phase != RunnerPhase.STOPPING:
            self._end_zombie(process, now)
        if phase in (RunnerPhase.EXITED, RunnerPhase.CRASHED, RunnerPhase.INVALID_CONFIG):
            self._end_zombie(process, now)
            process.ended_at = now
        process.phase = phase
        process.history.append((now, phase))

    def pod_gone(self, pod: str, now: float) -> None:
        """The node no longer runs ``pod`` (its processes ended without reporting)."""
        for (name, _), process in self.processes.items():
            if name == pod and process.ended_at is None:
                self._end_zombie(process, now)
                process.ended_at = now

    def process_signalled(self, pod: str, start: int, now: float) -> None:
        """The node sent SIGTERM to the runner process of ``pod``'s ``start``-th start."""
        process = self.processes.get((pod, start))
        if process is not None and process.stop_signal_at is None:
            process.stop_signal_at = now

    def process_ended(self, pod: str, start: int, now: float) -> None:
        """The runner process of ``pod``'s ``start``-th start is gone (exited or killed)."""
        process = self.processes.get((pod, start))
        if process is not None and process.ended_at is None:
            self._end_zombie(process, now)
            process.ended_at = now

    def runner_seen(
        self,
        name: str,
        now: float,
        *,
        job_request_id: int,
        completion_job: str,
        observed_at: float | None,
        deleting: bool,
        runner_id: int = 0,
        gone: bool = False,
    ) -> None:
        """The demo's watch saw EphemeralRunner ``name`` with these fields (``observed_at``:
        its ``jobCompletionDeadline`` minus the grace, in run seconds; ``gone``: deleted)."""
        marks = self.runner_marks.setdefault(name, RunnerMarks())
        if marks.first_seen_at is None:
            marks.first_seen_at = now
        if runner_id and runner_id not in marks.runner_ids:
            marks.runner_ids = (*marks.runner_ids, runner_id)
        if gone and marks.gone_at is None:
            marks.gone_at = now
        if job_request_id:
            self.started_landed.setdefault(job_request_id, now)
        if completion_job:
            self.completion_landed.setdefault(completion_job, now)
            if marks.completion_at is None:
                marks.completion_job, marks.completion_at = completion_job, now
        if observed_at is not None and marks.observed_at is None:
            marks.observed_at = observed_at
        if deleting and marks.deleting_at is None:
            marks.deleting_at = now

    def registration_seen(self, registration_id: int, name: str, now: float) -> None:
        """The fake service holds registration ``registration_id`` of runner ``name``."""
        self.registered_at.setdefault(registration_id, (name, now))

    def registrations_without_runner(self, names: list[str], now: float) -> list[str]:
        """The live registrations without an EphemeralRunner seen on this sample (``names``);
        returns those seen so on two samples or more that are gone since (removed: by the
        registration pass, L6). One seen on a single sample is not counted: the sample lists
        the runners before it asks GitHub, so a runner created in between looks so."""
        removed = []
        for name, (since, samples) in list(self.without_runner.items()):
            if name not in names:
                del self.without_runner[name]
                if samples >= 2:
                    removed.append(name)
                    self.removed_orphans.append((name, since, now))
        for name in names:
            since, samples = self.without_runner.get(name, (now, 0))
            self.without_runner[name] = (since, samples + 1)
        return removed

    def leak_history(self, name: str) -> str:
        """What the run saw of a registration left without its runner: the registrations of
        that name, and its EphemeralRunner's life (for the diagnosis of a leak)."""
        ids = [
            f"id {rid} from {at:.1f}s"
            for rid, (n, at) in sorted(self.registered_at.items())
            if n == name
        ]
        marks = self.runner_marks.get(name)
        if marks is None:
            runner = "its EphemeralRunner was never seen"
        else:

            def at(value: float | None) -> str:
                return "-" if value is None else f"{value:.1f}s"

            runner = (
                f"its EphemeralRunner seen {at(marks.first_seen_at)}, being deleted "
                f"{at(marks.deleting_at)}, gone {at(marks.gone_at)}, runner ids on it "
                f"{list(marks.runner_ids) or 'none'}"
            )
        return f"registrations: {', '.join(ids) or 'not sampled'}; {runner}"

    def fault_injected(self, pod: str) -> None:
        """The demo itself is about to kill ``pod``: its job may fail, that is not a bug."""
        self.faulted_pods.add(pod)

    def outage_started(self, now: float) -> int:
        """A blackout begins (GitHub down, or no controller); returns its handle."""
        self.outages.append((now, None))
        return len(self.outages) - 1

    def outage_ended(self, now: float, handle: int | None = None) -> None:
        index = len(self.outages) - 1 if handle is None else handle
        if 0 <= index < len(self.outages) and self.outages[index][1] is None:
            self.outages[index] = (self.outages[index][0], now)

    def outage_overlap(self, start: float, now: float) -> float:
        """Seconds of blackout within ``[start, now]`` (overlapping blackouts counted once)."""
        spans = sorted(
            (max(start, begin), min(now, end if end is not None else now))
            for begin, end in self.outages
        )
        overlap, reached = 0.0, start
        for begin, end in spans:
            begin = max(begin, reached)
            if end > begin:
                overlap += end - begin
                reached = end
        return overlap

    def jit_started(self, digest: str, pod: str, start: int, now: float) -> None:
        """A runner process (``pod``'s ``start``-th container start) was given the JIT config
        with this digest; a second process with the same config is a reuse."""
        first = self.jit_configs.setdefault(digest, (pod, start))
        if first != (pod, start):
            self._violate(
                "no-jit-reuse",
                digest,
                f"pod {pod} started with the JIT config pod {first[0]} ran first",
                now,
            )

    def job_event_lost(
        self, kind: str, job: str, runner: str, late: float, now: float, fate: str = "unknown"
    ) -> None:
        """``kind`` (JobStarted/JobCompleted) of ``job`` is missing on ``runner`` ``late``
        seconds after it happened (more than the bound). ``fate`` is what GitHub did with it
        (``hops.LostEvent``): one GitHub dropped before any listener got it is recorded, not a
        broken invariant."""
        key = (kind, job)
        if key not in self.lost_events:
            self.lost_events[key] = LostEvent(
                kind=kind,
                request_id=int(job) if job.isdigit() else -1,
                runner=runner,
                seen_at=now,
                late=late,
                fate=fate,
            )
        if self.lost_events[key].github_dropped:
            return
        self._violate(
            "no-lost-job-event",
            f"{kind} {job}",
            f"{kind} of job {job} not on runner {runner} {late:.1f}s after it happened",
            now,
        )

    def event_bound(self, since: float, now: float) -> float:
        """How long an event that happened at ``since`` may take to show: the zombie bound plus
        the blackouts meanwhile."""
        return self.zombie_bound + self.outage_overlap(since, now)

    def er_phase(self, uid: str, name: str, phase: str, now: float) -> None:
        """An EphemeralRunner was seen with ``phase`` (from a watch, in order)."""
        seen = self.er_phases.setdefault(uid, [])
        if seen and seen[-1] == phase:
            return
        if seen and seen[-1] in TERMINAL_ER_PHASES and phase not in TERMINAL_ER_PHASES:
            self._violate(
                "no-resurrection",
                name,
                f"runner {name} went from {seen[-1]} to {phase or '(empty)'}",
                now,
            )
        seen.append(phase)

    # ------------------------------------------------------------------ checks
    def check(self, now: float) -> None:
        """Sampled throughout the run: zombies older than the bound."""
        for process in self.processes.values():
            if process.zombie_since is None or process.ended_at is not None:
                continue
            age = now - process.zombie_since
            process.max_zombie_age = max(process.max_zombie_age, age)
            judged = age - self.outage_overlap(process.zombie_since, now)
            process.max_judged_age = max(process.max_judged_age, judged)
            bound = self.event_bound(process.zombie_since, now)
            if age > bound:
                self._violate(
                    "no-zombie-over-bound",
                    process.pod,
                    f"runner in pod {process.pod} has been a zombie ({process.phase.value}) for "
                    f"{age:.1f}s, more than the {bound:.0f}s bound",
                    now,
                )

    def finish(
        self,
        now: float,
        *,
        unfinished_jobs: list[str],
        leaked_registrations: list[str],
        runner_count: int,
        desired: int,
    ) -> None:
        """The end-of-run invariants."""
        self.check(now)
        for job in unfinished_jobs:
            self._violate("jobs-finished", job, f"job {job} never finished", now)
        for name in leaked_registrations:
            self._violate(
                "no-leaked-registration",
                name,
                f"registration {name} has no runner ({self.leak_history(name)})",
                now,
            )
        if runner_count != desired:
            self._violate(
                "runners-converge",
                "runner set",
                f"{runner_count} runners at the end, {desired} wanted",
                now,
            )

    # ------------------------------------------------------------------ figures
    def zombie_seconds(self, now: float) -> float:
        total = 0.0
        for process in self.processes.values():
            total += process.zombie_seconds
            if process.zombie_since is not None and process.ended_at is None:
                total += now - process.zombie_since
        return total

    def broken(self) -> Counter[str]:
        """Invariant -> how many subjects broke it."""
        return Counter(v.invariant for v in self.violations)

    def max_zombie_age(self) -> float:
        return max((p.max_zombie_age for p in self.processes.values()), default=0.0)

    def max_judged_zombie_age(self) -> float:
        """The oldest zombie minus the blackouts it lived through (compare with the bound)."""
        return max((p.max_judged_age for p in self.processes.values()), default=0.0)

    def crossings(self) -> list[RunnerProcess]:
        """The processes whose judged zombie age crossed the bound."""
        return [p for p in self.processes.values() if p.max_judged_age > self.zombie_bound]

    def lost(self, job_ids: Mapping[int, str]) -> list[LostEvent]:
        """The lost job events, each with when it landed after all (``None``: never);
        ``job_ids`` maps a job's request id to its job id (the fake service's)."""
        events = []
        for event in self.lost_events.values():
            if event.kind == "JobStarted":
                event.landed_at = self.started_landed.get(event.request_id)
            else:
                event.landed_at = self.completion_landed.get(job_ids.get(event.request_id, ""))
            events.append(event)
        return events

    def runner_seconds(self, now: float) -> float:
        return sum(p.alive_seconds(now) for p in self.processes.values())

    # ------------------------------------------------------------------ internals
    def _end_zombie(self, process: RunnerProcess, now: float) -> None:
        if process.zombie_since is None:
            return
        age = now - process.zombie_since
        process.zombie_seconds += age
        process.max_zombie_age = max(process.max_zombie_age, age)
        judged = age - self.outage_overlap(process.zombie_since, now)
        process.max_judged_age = max(process.max_judged_age, judged)
        process.zombie_since = None

    def _violate(self, invariant: str, subject: str, detail: str, now: float) -> None:
        if (invariant, subject) in self._reported:
            return
        self._reported.add((invariant, subject))
        self.violations.append(Violation(invariant, subject, detail, now))
