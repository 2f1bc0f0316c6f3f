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
- ``runners-converge`` — at the end the runner count is back at the minimum (L3/L6).

Each broken invariant is recorded once per subject with the time it was seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    jobs: int = 0

    def alive_seconds(self, now: float) -> float:
        return (self.ended_at if self.ended_at is not None else now) - self.started_at


@dataclass
class Truth:
    """What the run saw, appended to while it runs; ``check`` and ``finish`` add violations."""

    zombie_bound: float
    processes: dict[tuple[str, int], RunnerProcess] = field(default_factory=dict)
    faulted_pods: set[str] = field(default_factory=set)
    outages: list[tuple[float, float | None]] = field(default_factory=list)
    """GitHub outages (start, end or ``None`` while it lasts): nobody can learn that a job
    completed while GitHub is down, so a zombie's bound is extended by its overlap with them."""
    er_phases: dict[str, list[str]] = field(default_factory=dict)
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
        elif phase not in ZOMBIE_PHASES and phase != RunnerPhase.STOPPING:
            self._end_zombie(process, now)
        if phase in (RunnerPhase.EXITED, RunnerPhase.CRASHED, RunnerPhase.INVALID_CONFIG):
            self._end_zombie(process, now)
            process.ended_at = now
        process.phase = phase

    def pod_gone(self, pod: str, now: float) -> None:
        """The node no longer runs ``pod`` (its processes ended without reporting)."""
        for (name, _), process in self.processes.items():
            if name == pod and process.ended_at is None:
                self._end_zombie(process, now)
                process.ended_at = now

    def fault_injected(self, pod: str) -> None:
        """The demo itself is about to kill ``pod``: its job may fail, that is not a bug."""
        self.faulted_pods.add(pod)

    def outage_started(self, now: float) -> None:
        self.outages.append((now, None))

    def outage_ended(self, now: float) -> None:
        if self.outages and self.outages[-1][1] is None:
            self.outages[-1] = (self.outages[-1][0], now)

    def _outage_overlap(self, start: float, now: float) -> float:
        overlap = 0.0
        for begin, end in self.outages:
            overlap += max(0.0, min(now, end if end is not None else now) - max(start, begin))
        return overlap

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
            bound = self.zombie_bound + self._outage_overlap(process.zombie_since, now)
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
            self._violate("no-leaked-registration", name, f"registration {name} has no runner", now)
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

    def max_zombie_age(self) -> float:
        return max((p.max_zombie_age for p in self.processes.values()), default=0.0)

    def runner_seconds(self, now: float) -> float:
        return sum(p.alive_seconds(now) for p in self.processes.values())

    # ------------------------------------------------------------------ internals
    def _end_zombie(self, process: RunnerProcess, now: float) -> None:
        if process.zombie_since is None:
            return
        age = now - process.zombie_since
        process.zombie_seconds += age
        process.max_zombie_age = max(process.max_zombie_age, age)
        process.zombie_since = None

    def _violate(self, invariant: str, subject: str, detail: str, now: float) -> None:
        if (invariant, subject) in self._reported:
            return
        self._reported.add((invariant, subject))
        self.violations.append(Violation(invariant, subject, detail, now))
