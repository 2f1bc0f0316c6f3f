"""What the demo feeds the system: jobs and faults, deterministic per seed.

A ``Workload`` is a list of jobs (when each is queued, how long it runs) and a fault schedule
(when each fault hits, and what). The same ``seed`` always gives the same workload, so a run
that breaks an invariant can be replayed; the timing of the system under it is not part of the
contract (tests check invariants over many seeds, not exact timings).

The default is bursty: the jobs arrive in three bursts spread over the first two thirds of the
run, so the demo shows scale-up from the minimum, a busy plateau and scale-down.

The ``soak`` profile (issue 20, ``build_soak_workload``) is a chaos soak with rates rather than
single faults: each job's runner is evicted (10 %) or OOM-killed (5 %) with a seeded chance,
5 % of runner processes hang after their job, 2 % of the API writes fail (409/500/503), and a
schedule of process kills and GitHub incidents (``SOAK_SCHEDULE``) is spread over the run.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass


class FaultKind(enum.StrEnum):
    """A fault the demo can inject (``--chaos`` profiles are sets of these)."""

    EVICT_IDLE = "evict-idle"
    """Spot eviction of an idle runner's pod: the runner is replaced (L5)."""
    EVICT_BUSY = "evict-busy"
    """Spot eviction of a busy runner's pod: its job fails, the runner is replaced (L5)."""
    HANG_AFTER_JOB = "hang-after-job"
    """The next runner to take a job hangs after finishing it: ended after the grace (L4)."""
    OOM_BUSY = "oom-busy"
    """A busy runner is OOM-killed: replaced, never left Running (L5)."""
    KILL_LISTENER = "kill-listener"
    """The listener's process is killed (exit 137): its pod is recreated, nothing lost (L7)."""
    RESTART_CONTROLLER = "restart-controller"
    """The controller manager is stopped and started again: no in-memory state (L7)."""
    KILL_CONTROLLER = "kill-controller"
    """The controller manager dies without a word (``kill -9``: no drain, the lease is not
    released); a new one takes over once the lease expires, with nothing in memory (L7)."""
    GITHUB_OUTAGE = "github-outage"
    """GitHub answers 503 to everything for a while, then recovers."""
    GITHUB_5XX_BURST = "github-5xx-burst"
    """GitHub answers 500 to everything for a few seconds (``--chaos soak``)."""
    MQ_TOKEN_EXPIRY = "mq-token-expiry"  # noqa: S105 - a fault's name, not a token
    """The listener session's message-queue token expires: the next queue call gets 401 and
    the listener must refresh the session."""
    STALE_SESSION_RESTART = "stale-session-restart"
    """The listener is killed and its successor cannot delete the old session (GitHub answers
    that DELETE with 503): GitHub still holds the session, so creating one gets 409 Conflict
    until the service expires the old one."""
    WATCH_EXPIRY = "watch-expiry"
    """The API server compacts its history and ends every watch: each informer's re-watch gets
    410 Gone and must list again (injected during a burst of jobs)."""


CHAOS_PROFILES: dict[str, tuple[FaultKind, ...]] = {
    "none": (),
    "spot": (FaultKind.EVICT_IDLE, FaultKind.EVICT_BUSY),
    "hang": (FaultKind.HANG_AFTER_JOB,),
    "oom": (FaultKind.OOM_BUSY,),
    "restarts": (FaultKind.KILL_LISTENER, FaultKind.RESTART_CONTROLLER, FaultKind.KILL_CONTROLLER),
    "outage": (FaultKind.GITHUB_OUTAGE,),
    "all": tuple(FaultKind),
    **{kind.value: (kind,) for kind in FaultKind},
    "soak": (),
}
"""``--chaos NAME``: which faults the run injects (each once, at a seeded time). Every fault
kind is also a profile of its own (``--chaos kill-listener``). ``soak`` is special: rates and a
schedule (``build_soak_workload``), not single faults."""

SOAK = "soak"
SOAK_SCHEDULE: tuple[tuple[FaultKind, int], ...] = (
    (FaultKind.KILL_LISTENER, 3),
    (FaultKind.KILL_CONTROLLER, 2),
    (FaultKind.GITHUB_5XX_BURST, 1),
    (FaultKind.GITHUB_OUTAGE, 1),
    (FaultKind.MQ_TOKEN_EXPIRY, 1),
    (FaultKind.STALE_SESSION_RESTART, 1),
    (FaultKind.WATCH_EXPIRY, 1),
)
"""The soak's scheduled faults and how many of each (issue 20)."""


@dataclass(frozen=True)
class SoakRates:
    """The soak's rates (each a share, 0..1)."""

    evict: float = 0.10
    """Jobs whose runner is evicted (a spot reclaim; a third of them hit an idle runner)."""
    oom: float = 0.05
    """Jobs whose runner is OOM-killed while it runs them."""
    hang: float = 0.05
    """Runner processes that hang after their job."""
    api_write_failures: float = 0.02
    """Writes to the API server answered 409, 500 or 503."""


SOAK_RATES = SoakRates()


@dataclass(frozen=True)
class JobPlan:
    """One job: queued ``at`` seconds after the start, running ``duration`` seconds."""

    index: int
    at: float
    duration: float
    fault: FaultKind | None = None
    """``--chaos soak``: EVICT_BUSY / OOM_BUSY hit this job's runner ``fault_after`` its start
    (a share of ``duration``); EVICT_IDLE evicts an idle runner when the job is queued."""
    fault_after: float = 0.0


@dataclass(frozen=True)
class FaultPlan:
    """One fault, injected ``at`` seconds after the start."""

    at: float
    kind: FaultKind


@dataclass(frozen=True)
class Workload:
    jobs: tuple[JobPlan, ...]
    faults: tuple[FaultPlan, ...]
    duration: float
    """Seconds over which jobs arrive (the run then waits for them to finish and settle)."""
    seed: int
    rates: SoakRates | None = None
    """The soak's rates (``None`` outside ``--chaos soak``)."""

    @property
    def busy_seconds(self) -> float:
        """Seconds of job work the workload asks for (the lower bound of runner-seconds)."""
        return sum(job.duration for job in self.jobs)


def build_workload(
    *,
    jobs: int,
    duration: float,
    seed: int,
    chaos: str = "none",
    job_seconds: tuple[float, float] = (2.0, 6.0),
    outage_seconds: float = 60.0,
) -> Workload:
    """The bursty default: ``jobs`` jobs in three bursts within ``duration`` seconds.

    Raises ``ValueError`` for an unknown chaos profile or a non-positive count/duration.
    """
    if jobs < 0:
        raise ValueError("--jobs must be 0 or more")
    if duration <= 0:
        raise ValueError("--duration must be more than 0 seconds")
    if chaos not in CHAOS_PROFILES:
        known = ", ".join(CHAOS_PROFILES)
        raise ValueError(f"--chaos {chaos!r}: unknown profile (known: {known})")
    if chaos == SOAK:
        return build_soak_workload(
            jobs=jobs, duration=duration, seed=seed, outage_seconds=outage_seconds
        )
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, not a secret
    bursts = (0.0, duration / 3, 2 * duration / 3)
    spread = duration / 10
    planned: list[JobPlan] = []
    for index in range(jobs):
        start = bursts[index % len(bursts)] + rng.uniform(0.0, spread)
        planned.append(
            JobPlan(
                index=index,
                at=round(min(start, duration), 3),
                duration=round(rng.uniform(*job_seconds), 3),
            )
        )
    planned.sort(key=lambda job: (job.at, job.index))
    faults = tuple(
        sorted(
            (
                FaultPlan(at=round(rng.uniform(duration * 0.2, duration * 0.8), 3), kind=kind)
                for kind in CHAOS_PROFILES[chaos]
            ),
            key=lambda fault: (fault.at, fault.kind.value),
        )
    )
    return Workload(jobs=tuple(planned), faults=faults, duration=duration, seed=seed)


def build_soak_workload(
    *,
    jobs: int,
    duration: float,
    seed: int,
    rates: SoakRates = SOAK_RATES,
    job_seconds: tuple[float, float] = (0.5, 2.5),
    outage_seconds: float = 60.0,
) -> Workload:
    """``--chaos soak``: ``jobs`` short jobs over ``duration`` seconds (half of them at a steady
        rate, half in three bursts), each with a seeded chance of an eviction or OOM kill of its
        runner, and ``SOAK_SCHEDULE`` spread over the run. The watch expiry comes with the second
        burst; the GitHub incidents come one after the other in a seeded order, ``duration * 0.12``
    apart (after the ``outage_seconds`` of the outage), so they never overlap."""
    if jobs < 0:
        raise ValueError("--jobs must be 0 or more")
    if duration <= 0:
        raise ValueError("--duration must be more than 0 seconds")
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, not a secret
    bursts = (duration * 0.15, duration * 0.5, duration * 0.8)
    planned: list[JobPlan] = []
    for index in range(jobs):
        if index % 2:
            start = bursts[(index // 2) % len(bursts)] + rng.uniform(0.0, duration / 20)
        else:
            start = rng.uniform(0.0, duration)
        length = round(rng.uniform(*job_seconds), 3)
        draw = rng.random()
        fault: FaultKind | None = None
        if draw < rates.evict:
            fault = FaultKind.EVICT_IDLE if draw < rates.evict / 3 else FaultKind.EVICT_BUSY
        elif draw < rates.evict + rates.oom:
            fault = FaultKind.OOM_BUSY
        planned.append(
            JobPlan(
                index=index,
                at=round(min(start, duration), 3),
                duration=length,
                fault=fault,
                fault_after=round(length * rng.uniform(0.2, 0.8), 3),
            )
        )
    planned.sort(key=lambda job: (job.at, job.index))
    faults: list[FaultPlan] = [FaultPlan(at=round(bursts[1], 3), kind=FaultKind.WATCH_EXPIRY)]
    # GitHub incidents: one slot each, in a seeded order, so they never overlap.
    github = [
        FaultKind.GITHUB_OUTAGE,
        FaultKind.GITHUB_5XX_BURST,
        FaultKind.MQ_TOKEN_EXPIRY,
        FaultKind.STALE_SESSION_RESTART,
    ]
    rng.shuffle(github)
    at = duration * 0.05
    for kind in github:
        faults.append(FaultPlan(at=round(at, 3), kind=kind))
        at += (outage_seconds if kind == FaultKind.GITHUB_OUTAGE else 0.0) + duration * 0.12
    for kind, count in SOAK_SCHEDULE:
        if kind in github or kind == FaultKind.WATCH_EXPIRY:
            continue
        faults.extend(
            FaultPlan(at=round(rng.uniform(duration * 0.1, duration * 0.9), 3), kind=kind)
            for _ in range(count)
        )
    faults.sort(key=lambda fault: (fault.at, fault.kind.value))
    return Workload(
        jobs=tuple(planned), faults=tuple(faults), duration=duration, seed=seed, rates=rates
    )


def parse_runners(text: str) -> tuple[int, int]:
    """``--runners MIN:MAX`` -> ``(min, max)``; ``ValueError`` naming the problem."""
    low, sep, high = text.partition(":")
    if not sep:
        raise ValueError(f"--runners {text!r}: expected MIN:MAX, e.g. 0:10")
    try:
        minimum, maximum = int(low), int(high)
    except ValueError:
        raise ValueError(f"--runners {text!r}: MIN and MAX must be whole numbers") from None
    if minimum < 0 or maximum < 1 or minimum > maximum:
        raise ValueError(f"--runners {text!r}: need 0 <= MIN <= MAX and MAX >= 1")
    return minimum, maximum
