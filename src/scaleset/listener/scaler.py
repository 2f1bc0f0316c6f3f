"""The desired runner count and the EphemeralRunnerSet patch that carries it: pure decisions.

``Scaler.desired(assigned)`` is ARC's ``HandleDesiredRunnerCount`` (protocol §5.3):
``target = min(minRunners + assigned, maxRunners)``; every call takes the next patch sequence
number (wrapping at 2^31-1 to 1); the patch id is that number, except 0 ("force this exact
state", the only request on which the EphemeralRunnerSet scales down) when no job event happened
since the last call, the target did not change and it equals ``minRunners``. ``ers_patch`` is the
merge patch ARC sends, ``"replicas": null`` for a target of 0.

Ours on top (lifecycle.md L7): the sequence and the last target are restored from the listener's
state after a restart (``Scaler(..., patch_seq=, last_target=)``), so patch ids only grow and the
EphemeralRunnerSet never mistakes a new request for one it already consumed; and
``StaleSurplusGuard`` caps a surplus of assigned-but-not-running jobs that persists while idle
runners exist (ARC #4397: stale ``totalAssignedJobs`` over-provisions forever).
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


def ers_patch(desired: DesiredCount) -> dict[str, Any]:
    """The merge patch of ``spec`` ARC sends: ``replicas`` null (removed, i.e. 0) for 0."""
    return {"spec": {"patchID": desired.patch_id, "replicas": desired.target or None}}


@dataclass
class StaleSurplusGuard:
    """Caps stale ``totalAssignedJobs`` (ARC #4397).

    Jobs assigned to the scale set but not running, while our runners sit idle, are normally
    picked up within seconds. When such a surplus persists for ``window`` seconds, the part of it
    the idle runners should have absorbed (at most the idle count) is taken as stale: it is
    latched and no longer counted, so no more runners are asked for it. The latch only shrinks:
    when the surplus falls below it, to the surplus; at 0 it is released. New jobs on top of the
    latched amount are counted as usual, so real demand still scales up, and a latched amount
    never comes back when the idle runners it left are scaled away (no oscillation).
    """

    window: float = 180.0
    since: float | None = None
    latched: int = 0

    def effective_assigned(
        self, *, assigned: int, running: int, idle_runners: int, now: float
    ) -> int:
        """The assigned count to scale on (``assigned`` minus the latched stale surplus)."""
        surplus = max(assigned - running, 0)
        self.latched = min(self.latched, surplus)
        if surplus - self.latched > 0 and idle_runners > 0:
            if self.since is None:
                self.since = now
            elif now - self.since >= self.window:
                self.latched += min(surplus - self.latched, idle_runners)
                self.since = None
        else:
            self.since = None
        return assigned - self.latched
