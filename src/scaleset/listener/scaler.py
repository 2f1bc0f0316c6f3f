"""The desired runner count and the EphemeralRunnerSet patch that carries it: pure decisions.

``Scaler.desired(assigned)`` is ARC's ``HandleDesiredRunnerCount``:
``target = min(minRunners + assigned, maxRunners)``; every call takes the next patch sequence
number (wrapping at 2^31-1 to 1); the patch id is that number, except 0 ("force this exact
state", the only request on which the EphemeralRunnerSet scales down) when no job event happened
since the last call, the target did not change and it equals ``minRunners``. ``ers_patch`` is the
merge patch ARC sends, ``"replicas": null`` for a target of 0.

Ours on top (lifecycle.md L7): the sequence and the last target are restored from the listener's
state after a restart (``Scaler(..., patch_seq=, last_target=)``), so patch ids only grow and the
EphemeralRunnerSet never mistakes a new request for one it already consumed; and
``judge_surplus`` caps a surplus of assigned-but-not-running jobs that persists while idle
runners exist (ARC #4397: stale ``totalAssignedJobs`` over-provisions forever), only for as long
as that evidence lasts. ``with_minimum`` moves the minimum (a warm window's edge) without
losing the sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_PATCH_SEQ = 2_147_483_647


@dataclass(frozen=True)
class DesiredCount:
    """One decision: the replicas to ask for, the patch id to send, the sequence it used."""

    target: int
    patch_id: int
    patch_seq: int


class Scaler:
    """ARC's scaler state machine (``targetRunners``, ``patchSeq``, ``dirty``)."""

    def __init__(
        self, min_runners: int, max_runners: int, *, patch_seq: int = -1, last_target: int = -1
    ) -> None:
        if min_runners < 0 or max_runners < min_runners:
            raise ValueError("need 0 <= min_runners <= max_runners")
        self.min_runners = min_runners
        self.max_runners = max_runners
        self.patch_seq = patch_seq
        self.last_target = last_target
        self.dirty = False

    def job_event(self) -> None:
        """A JobStarted or JobCompleted was handled since the last decision."""
        self.dirty = True

    def next_patch_id(self) -> int | None:
        """The patch id of the next ``desired`` after a job event: what a JobCompleted record
        names as the first count that accounts for it. ``None`` when that is 0 (a fresh
        scaler's first patch: the force-state id, under which no finished runner holds a
        slot anyway)."""
        seq = 0 if self.patch_seq >= MAX_PATCH_SEQ else max(self.patch_seq, -1)
        return seq + 1 if seq + 1 > 0 else None

    def target_for(self, assigned: int) -> int:
        return min(self.min_runners + max(assigned, 0), self.max_runners)

    def desired(self, assigned: int) -> DesiredCount:
        """Decide the next patch for ``assigned`` jobs (``statistics.totalAssignedJobs``)."""
        was_dirty, self.dirty = self.dirty, False
        if self.patch_seq >= MAX_PATCH_SEQ:
            self.patch_seq = 0
        self.patch_seq = max(self.patch_seq, -1) + 1  # the first call of a fresh scaler: 0
        target = self.target_for(assigned)
        force = not was_dirty and target == self.last_target and target == self.min_runners
        self.last_target = target
        return DesiredCount(target, 0 if force else self.patch_seq, self.patch_seq)


def with_minimum(scaler: Scaler, minimum: int) -> Scaler:
    """``scaler`` with ``minimum`` (clipped to its maximum) as its minimum: ``scaler`` itself
    when that is its minimum already, else a new one that goes on from its patch sequence, last
    target and pending job event (a warm window opening or closing is not a restart: the next
    patch id still grows, and a scale-down still needs the force-state patch of an unchanged
    target)."""
    minimum = min(max(minimum, 0), scaler.max_runners)
    if minimum == scaler.min_runners:
        return scaler
    moved = Scaler(
        minimum, scaler.max_runners, patch_seq=scaler.patch_seq, last_target=scaler.last_target
    )
    moved.dirty = scaler.dirty
    return moved


def ers_patch(desired: DesiredCount) -> dict[str, Any]:
    """The merge patch of ``spec`` ARC sends: ``replicas`` null (removed, i.e. 0) for 0."""
    return {"spec": {"patchID": desired.patch_id, "replicas": desired.target or None}}


@dataclass(frozen=True)
class SurplusObservation:
    """What one desired-count decision sees: GitHub's assigned and running jobs, the idle runners,
    when, and whether the statistics were carried over from before a failed poll (then they are
    the last ones GitHub sent, not news)."""

    assigned: int
    running: int
    idle_runners: int
    now: float
    carried_over: bool = False

    @property
    def evidence(self) -> int:
        """Assigned-but-not-running jobs that idle runners could have taken: at most the
        surplus, at most the idle runners."""
        return min(max(self.assigned - self.running, 0), max(self.idle_runners, 0))


@dataclass(frozen=True)
class StaleSurplus:
    """The guard's memory: since when fresh statistics have shown more evidence than is latched,
    and how many assigned jobs are held back as stale."""

    since: float | None = None
    latched: int = 0

    def effective(self, seen: SurplusObservation) -> int:
        """The assigned count to scale on."""
        return seen.assigned - self.latched


def judge_surplus(previous: StaleSurplus, seen: SurplusObservation, window: float) -> StaleSurplus:
    """The stale-surplus decision (ARC #4397, lifecycle.md L7), pure.

    Jobs assigned to the scale set but not running, while our runners sit idle, are normally
    picked up within seconds. When fresh statistics show such a surplus beside idle runners for
    ``window`` seconds, the part the idle runners should have absorbed (the evidence: at most
    the surplus, at most the idle count) is taken as stale and latched: no more runners are asked
    for it. New jobs on top are counted as usual.

    The latch lasts only while its evidence does: it never exceeds the current evidence, so it
    shrinks with the surplus and with the idle runners, and a surplus with no idle runner is
    real demand again (issue 25: the idle runners were runners that could not connect during a
    GitHub outage; once they were scaled away the queued jobs waited forever). Statistics
    carried over from failed polls are no evidence: they never start, advance or complete the
    window and never grow the latch (they may shrink it).
    """
    latched = min(previous.latched, seen.evidence)
    if seen.carried_over or seen.evidence <= latched:
        return StaleSurplus(None, latched)
    if previous.since is None:
        return StaleSurplus(seen.now, latched)
    if seen.now - previous.since >= window:
        return StaleSurplus(None, seen.evidence)
    return StaleSurplus(previous.since, latched)


@dataclass
class StaleSurplusGuard:
    """``judge_surplus`` with its memory, for the loop."""

    window: float
    """Seconds (the listener's ``LoopSettings.stale_window``)."""
    memory: StaleSurplus = StaleSurplus()

    @property
    def latched(self) -> int:
        return self.memory.latched

    def effective_assigned(
        self,
        *,
        assigned: int,
        running: int,
        idle_runners: int,
        now: float,
        carried_over: bool = False,
    ) -> int:
        """The assigned count to scale on (``assigned`` minus the latched stale surplus)."""
        seen = SurplusObservation(assigned, running, idle_runners, now, carried_over)
        self.memory = judge_surplus(self.memory, seen, self.window)
        return self.memory.effective(seen)
