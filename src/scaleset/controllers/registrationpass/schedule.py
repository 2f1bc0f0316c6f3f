"""When the registration pass of one scale set runs (lifecycle.md L6): pure.

A pass is **due** ``interval`` seconds after the previous one (at once when there was none). It
runs **early** when the listener's count of GitHub's registrations disagrees with the set's
runners for a sustained time — a registration that vanished, or one left without a runner.

The counts (``Counts``) are read from caches, no API call: the listener's
``totalRegisteredRunners`` from its state annotation on the EphemeralRunnerSet (with the time
the statistics arrived), and the set's EphemeralRunners. Every runner has at most one
registration, and a runner with a runner id that is neither finished nor being deleted has one,
so the counts **disagree** when GitHub reports fewer registrations than such runners, or more
registrations than runners at all. A runner being created, finishing its job or being deleted
makes them disagree for a moment; that is normal, so a disagreement counts only when

- it was seen in at least ``min_observations`` observations spanning at least ``sustain``
  seconds, with no agreeing (or unusable) observation in between, and
- the listener's statistics are at most ``freshness`` seconds old (the listener hears GitHub's
  count only with a message: after a quiet scale-down its last count is simply old), and
- the previous pass (early or not) is at least ``min_gap`` seconds ago; the gap doubles with
  each early pass after which the disagreement stays (a pass cannot fix a registration that
  vanished from a busy runner), up to ``interval`` — so early passes never come more often
  than once per ``min_gap`` and never add more than a few passes to a lasting disagreement.

It also runs early when the listener **replaced its message session** after the previous pass
began (it had to create a new one because its old one could not be resumed): the
JobStarted/JobCompleted events queued in the old session may be lost, and a runner that hung after
such a job never hears of its end (L4) — only a pass (L6) finds its registration gone. The
listener publishes when it did (``replaced``); the watch keeps the value seen when the previous
pass began, and a different one is a replacement that pass cannot have covered. Comparing values
rather than times needs no agreement between the two pods' clocks. One pass per replacement
suffices, so it needs no sustain and no back-off: only ``replaced_gap`` seconds since the previous
pass (default 10 s, far below ``min_gap``: each such pass answers a distinct, rare event and
cannot repeat for it). It does not count towards the disagreement's back-off.

A pass that reached its deletion cap (``max_deletions``) left work it found for the next one;
that pass comes ``min_gap`` seconds later, not an interval later (the cap bounds how fast passes
delete, not how long a leak found may stay: L6's bound is grace + one pass).

``decide`` returns the new ``Watch`` (the per-set memory; losing it on a restart only delays an
early pass) and either ``RunPass`` or ``WaitFor`` (re-observe then, even without an event).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class EarlySettings:
    sustain: float = 30.0
    min_observations: int = 2
    min_gap: float = 60.0
    freshness: float = 180.0
    replaced_gap: float = 10.0

    def __post_init__(self) -> None:
        if self.sustain < 0 or min(self.min_gap, self.freshness, self.replaced_gap) <= 0:
            raise ValueError("early-pass timings must be positive (sustain: not negative)")
        if self.min_observations < 1:
            raise ValueError("an early pass needs at least one observation")


@dataclass(frozen=True)
class Counts:
    """One observation of a set, from caches."""

    registered: int
    """The listener's ``totalRegisteredRunners``."""
    age: float
    """Seconds since the listener received those statistics."""
    holding: int
    """Runners that must hold a registration: a runner id, no finished job, not terminal, not
    being deleted."""
    runners: int
    """All runners of the set (each holds at most one registration)."""

    @property
    def disagree(self) -> bool:
        return self.registered < self.holding or self.registered > self.runners


@dataclass(frozen=True)
class Watch:
    """What one set's scheduler remembers (monotonic seconds)."""

    last_pass: float | None = None
    disagree_since: float | None = None
    observations: int = 0
    streak: int = 0
    """Early passes since the counts last agreed."""
    replaced_seen: float | None = None
    """The listener's ``replaced`` when the last pass began."""
    left_over: bool = False
    """The last pass reached its deletion cap: what it left is due ``min_gap`` after it."""


@dataclass(frozen=True)
class RunPass:
    early: bool
    replaced: bool = False
    """Early because the listener replaced its message session after the last pass began."""
    left_over: bool = False
    """Early because the last pass left deletions to this one (its cap)."""


@dataclass(frozen=True)
class WaitFor:
    seconds: float


Decision = RunPass | WaitFor


def early_gap(watch: Watch, interval: float, early: EarlySettings) -> float:
    """The least time between the last pass and an early one."""
    return min(early.min_gap * 2.0 ** min(watch.streak, 32), max(interval, early.min_gap))


def decide(
    watch: Watch,
    counts: Counts | None,
    now: float,
    interval: float,
    early: EarlySettings,
    replaced: float | None = None,
) -> tuple[Watch, Decision]:
    """The next step for one set observed at ``now`` (``counts``: ``None`` when the listener
    published no count; ``replaced``: when the listener last replaced its message session, by
    its own clock, ``None`` when it never did)."""
    usable = counts is not None and counts.age <= early.freshness
    if usable and counts is not None and counts.disagree:
        since = now if watch.disagree_since is None else watch.disagree_since
        watch = replace(watch, disagree_since=since, observations=watch.observations + 1)
    else:
        watch = replace(watch, disagree_since=None, observations=0)
        if usable:
            watch = replace(watch, streak=0)
    if watch.last_pass is None or now >= watch.last_pass + interval:
        return _ran(watch, now, replaced, early=False), RunPass(early=False)
    due_at = watch.last_pass + interval
    if watch.left_over:
        due_at = min(due_at, watch.last_pass + early.min_gap)
        if now >= due_at:
            return _ran(watch, now, replaced, early=False), RunPass(early=True, left_over=True)
    wake = [due_at]
    if replaced is not None and replaced != watch.replaced_seen:
        replaced_allowed_at = watch.last_pass + early.replaced_gap
        if now >= replaced_allowed_at:
            return _ran(watch, now, replaced, early=False), RunPass(early=True, replaced=True)
        wake.append(replaced_allowed_at)
    if watch.disagree_since is None:
        return watch, WaitFor(min(wake) - now)
    sustained_at = watch.disagree_since + early.sustain
    allowed_at = watch.last_pass + early_gap(watch, interval, early)
    if watch.observations >= early.min_observations and now >= sustained_at and now >= allowed_at:
        return _ran(watch, now, replaced, early=True), RunPass(early=True)
    # look again when the disagreement would be sustained and allowed (or the pass is due)
    wake.append(max(sustained_at, allowed_at))
    return watch, WaitFor(max(min(wake) - now, 0.0) or 1.0)


def left_over(watch: Watch) -> Watch:
    """The watch after the pass it remembers reached its deletion cap."""
    return replace(watch, left_over=True)


def _ran(watch: Watch, now: float, replaced: float | None, *, early: bool) -> Watch:
    """The watch after a pass that starts at ``now``: the disagreement is judged afresh, and the
    session replacement it covers is remembered."""
    streak = watch.streak + 1 if early else watch.streak
    return Watch(
        last_pass=now, disagree_since=None, observations=0, streak=streak, replaced_seen=replaced
    )
