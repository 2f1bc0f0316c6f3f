"""Where a zombie's time goes, and whose a lost job event is (issue 20's soak report).

A runner that hangs after its job is ended by a chain of hops (lifecycle.md L4): the job
finishes on GitHub → GitHub delivers JobCompleted to the listener (a poll carries it) → the
listener writes ``status.jobCompletion`` on the EphemeralRunner → the controller observes it and
sets ``jobCompletionDeadline`` (observed + grace, its own clock) → after the grace it deletes
the pod (the kubelet sends SIGTERM) → the process is gone. ``ZombieHops`` holds the time of each
step for one zombie, from ground truth and timestamps the system already writes:

- job finished, delivered, acknowledged: the fake GitHub service (``JobTruth.finish_time``,
  ``FakeControl.job_event``);
- jobCompletion written: first seen on the demo's own watch of the EphemeralRunners;
- observed: ``jobCompletionDeadline`` minus the grace (exact: the controller writes it);
- SIGTERM and process gone: the simulated node (the runner program's stop signal and end).

``hop_summary`` turns the crossings of a run (or of many seeds) into per-hop median and maximum
and names the hop that dominates. ``LostEvent`` is a JobStarted/JobCompleted that did not show
on its living runner within the bound, with what the fake service knows of its fate: GitHub
dropped it before any listener got it (its session expired, or there was none: not our loss),
or it was delivered to the listener (our loss: late, or never applied), or it was still queued
or dropped with a session the listener itself deleted (ours too).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

HOPS: tuple[tuple[str, str], ...] = (
    ("github", "job finished → JobCompleted delivered to the listener"),
    ("listener", "delivered → jobCompletion on the runner"),
    ("observe", "jobCompletion → controller observed it (deadline set)"),
    ("act", "deadline passed → pod deleted (SIGTERM)"),
    ("stop", "SIGTERM → process gone"),
)
"""The hops of an L4 ending, in order (the grace itself, observed → deadline, is not a hop:
it is the configured constant)."""


@dataclass
class RunnerMarks:
    """What the demo's watch saw of one EphemeralRunner (seconds since the run started)."""

    completion_job: str = ""
    completion_at: float | None = None
    """When ``status.jobCompletion`` (for ``completion_job``) was first seen."""
    observed_at: float | None = None
    """When the controller observed the completion: ``jobCompletionDeadline`` − grace."""
    deleting_at: float | None = None
    """When the EphemeralRunner was first seen being deleted."""
    first_seen_at: float | None = None
    gone_at: float | None = None
    """When the EphemeralRunner was seen deleted (gone from the API server)."""
    runner_ids: tuple[int, ...] = ()
    """Every ``status.runnerId`` it was seen with, in order."""


@dataclass(frozen=True)
class ZombieHops:
    """One zombie's way to its end; times in seconds since the run started (``None``: the step
    did not happen, or is not known)."""

    pod: str
    phase: str
    """The zombie phase it entered first (hanging, registration-deleted, session-conflict)."""
    since: float
    judged_age: float
    """Its age minus the blackouts it lived through (what the bound judges)."""
    blackout: float
    request_id: int | None = None
    finished_at: float | None = None
    delivered_at: float | None = None
    acked_at: float | None = None
    dropped: str = ""
    """Why GitHub dropped its JobCompleted undelivered ("" when it did not)."""
    written_at: float | None = None
    observed_at: float | None = None
    deadline_at: float | None = None
    runner_deleting_at: float | None = None
    sigterm_at: float | None = None
    gone_at: float | None = None

    @property
    def ended_by(self) -> str:
        """How the zombie ended: its L4 deadline, the runner's deletion without one (the
        registration pass, a scale-down), some other way, or not within the run."""
        if self.gone_at is None:
            return "alive at the end"
        if self.deadline_at is not None and (
            self.sigterm_at is None or self.sigterm_at >= self.deadline_at - 0.5
        ):
            return "L4 deadline"
        if self.runner_deleting_at is not None:
            return "runner deleted without an L4 deadline"
        return "process ended otherwise"

    def hops(self) -> dict[str, float | None]:
        """Each hop's seconds (``None`` where an end is missing)."""

        def span(begin: float | None, end: float | None) -> float | None:
            return None if begin is None or end is None else max(0.0, end - begin)

        return {
            "github": span(self.finished_at, self.delivered_at),
            "listener": span(self.delivered_at, self.written_at),
            "observe": span(self.written_at, self.observed_at),
            "act": span(self.deadline_at, self.sigterm_at),
            "stop": span(self.sigterm_at, self.gone_at),
        }

    def dominant(self) -> str | None:
        """The longest hop, ``None`` when none is known."""
        known = {name: value for name, value in self.hops().items() if value is not None}
        return max(known, key=lambda name: known[name]) if known else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ZombieHops:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})

    def describe(self) -> str:
        """One line: the zombie and each hop."""
        hops = self.hops()
        parts = ", ".join(
            f"{name} {'-' if value is None else f'{value:.1f}s'}" for name, value in hops.items()
        )
        extra = f"; JobCompleted dropped by GitHub ({self.dropped})" if self.dropped else ""
        return (
            f"{self.pod} ({self.phase}) judged {self.judged_age:.1f}s "
            f"(+{self.blackout:.1f}s blackout): {parts}; {self.ended_by}{extra}"
        )


def hop_summary(crossings: Sequence[ZombieHops], *, title: str) -> list[str]:
    """Per hop over ``crossings``: how many have it, median and maximum seconds; then which hop
    dominated how many of them, and how they ended."""
    if not crossings:
        return [f"{title}: none"]
    lines = [f"{title}: {len(crossings)}"]
    for name, meaning in HOPS:
        values = sorted(v for c in crossings if (v := c.hops()[name]) is not None)
        if values:
            lines.append(
                f"  {name:<9} {meaning}: n {len(values)}, median "
                f"{statistics.median(values):.1f}s, max {values[-1]:.1f}s"
            )
        else:
            lines.append(f"  {name:<9} {meaning}: n 0")
    dominant = Counter(d for c in crossings if (d := c.dominant()) is not None)
    if dominant:
        lines.append(
            "  longest hop: " + ", ".join(f"{name} {n}" for name, n in dominant.most_common())
        )
    ended = Counter(c.ended_by for c in crossings)
    lines.append("  ended by: " + ", ".join(f"{how} {n}" for how, n in ended.most_common()))
    dropped = sum(1 for c in crossings if c.dropped)
    if dropped:
        lines.append(f"  JobCompleted dropped by GitHub (never delivered): {dropped}")
    return lines


@dataclass
class LostEvent:
    """A JobStarted/JobCompleted not on its living runner within the bound."""

    kind: str
    request_id: int
    runner: str
    seen_at: float
    """When the check first found it missing (seconds since the run started)."""
    late: float
    fate: str
    """What the fake service knows: ``github-dropped (why)``, ``delivered``, ``queued``
    (never delivered), ``dropped (session-deleted)``, ``unknown``."""
    landed_at: float | None = field(default=None)
    """When it did show on the runner after all (``None``: never within the run)."""

    @property
    def github_dropped(self) -> bool:
        return self.fate.startswith("github-dropped")

    @property
    def delivered(self) -> bool:
        return self.fate.startswith("delivered")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LostEvent:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})

    def describe(self) -> str:
        landed = (
            f"applied at {self.landed_at:.1f}s (late)"
            if self.landed_at is not None
            else "never applied"
        )
        return (
            f"{self.kind} of job {self.request_id} on {self.runner}: {self.fate}; {landed} "
            f"(missing {self.late:.1f}s at {self.seen_at:.1f}s)"
        )
