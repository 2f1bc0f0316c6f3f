"""What the demo feeds the system: jobs and faults, deterministic per seed.

A ``Workload`` is a list of jobs (when each is queued, how long it runs) and a fault schedule
(when each fault hits, and what). The same ``seed`` always gives the same workload, so a run
that breaks an invariant can be replayed; the timing of the system under it is not part of the
contract (tests check invariants over many seeds, not exact timings).

The default is bursty: the jobs arrive in three bursts spread over the first two thirds of the
run, so the demo shows scale-up from the minimum, a busy plateau and scale-down.
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


CHAOS_PROFILES: dict[str, tuple[FaultKind, ...]] = {
    "none": (),
    "spot": (FaultKind.EVICT_IDLE, FaultKind.EVICT_BUSY),
    "hang": (FaultKind.HANG_AFTER_JOB,),
    "oom": (FaultKind.OOM_BUSY,),
    "restarts": (FaultKind.KILL_LISTENER, FaultKind.RESTART_CONTROLLER, FaultKind.KILL_CONTROLLER),
    "outage": (FaultKind.GITHUB_OUTAGE,),
    "all": tuple(FaultKind),
    **{kind.value: (kind,) for kind in FaultKind},
}
"""``--chaos NAME``: which faults the run injects (each once, at a seeded time). Every fault
kind is also a profile of its own (``--chaos kill-listener``)."""


@dataclass(frozen=True)
class JobPlan:
    """One job: queued ``at`` seconds after the start, running ``duration`` seconds."""

    index: int
    at: float
    duration: float


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
