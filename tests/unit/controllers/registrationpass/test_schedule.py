"""When the registration pass runs (``schedule.decide``, pure): every interval, and early only on
a disagreement between the listener's count and ours that is sustained (two observations, the
sustain time, fresh statistics) and rate-limited (``min_gap``, doubling while it lasts); and once
when the listener replaced its message session after the last pass began (``replaced_gap``).

The property tests drive ``decide`` with arbitrary observation sequences: an early pass never
follows the previous pass by less than ``min_gap``, needs the disagreement seen at least twice
over ``sustain`` seconds with no agreement in between, and a pass is never later than due; a
session replacement the last pass did not see runs one pass as soon as ``replaced_gap`` allows
(looked at again no later than that), never sooner."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from scaleset.controllers.registrationpass.schedule import (
    Counts,
    EarlySettings,
    RunPass,
    WaitFor,
    Watch,
    decide,
)

INTERVAL = 300.0
EARLY = EarlySettings(sustain=30.0, min_observations=2, min_gap=60.0, freshness=180.0)
AGREE = Counts(registered=3, age=1.0, holding=3, runners=3)
FEWER = Counts(registered=2, age=1.0, holding=3, runners=3)
"""A registration vanished: GitHub lists fewer than the runners that must have one."""
MORE = Counts(registered=5, age=1.0, holding=3, runners=4)
"""A registration without a runner."""


def after_first_pass() -> Watch:
    watch, decision = decide(Watch(), AGREE, 0.0, INTERVAL, EARLY)
    assert decision == RunPass(early=False)
    return watch


def test_counts_disagree_only_outside_what_runners_may_hold() -> None:
    assert not AGREE.disagree
    assert FEWER.disagree
    assert MORE.disagree
    starting = Counts(registered=4, age=0.0, holding=3, runners=5)
    assert not starting.disagree, "a runner being created may or may not be registered yet"


def test_the_first_observation_runs_a_pass_then_the_next_is_due_an_interval_later() -> None:
    watch = after_first_pass()
    watch, decision = decide(watch, AGREE, 100.0, INTERVAL, EARLY)
    assert decision == WaitFor(200.0)
    _, decision = decide(watch, AGREE, 300.0, INTERVAL, EARLY)
    assert decision == RunPass(early=False)


def test_a_sustained_disagreement_runs_the_pass_early() -> None:
    watch = after_first_pass()
    watch, decision = decide(watch, FEWER, 100.0, INTERVAL, EARLY)
    assert decision == WaitFor(30.0), "look again once it would be sustained"
    watch, decision = decide(watch, FEWER, 129.0, INTERVAL, EARLY)
    assert isinstance(decision, WaitFor)
    _, decision = decide(watch, MORE, 130.0, INTERVAL, EARLY)
    assert decision == RunPass(early=True)


def test_a_single_observation_never_runs_the_pass_early() -> None:
    watch = after_first_pass()
    watch, decision = decide(watch, FEWER, 200.0, INTERVAL, EARLY)
    assert isinstance(decision, WaitFor)
    one = EarlySettings(sustain=0.0, min_observations=2)
    _, decision = decide(after_first_pass(), FEWER, 200.0, INTERVAL, one)
    assert isinstance(decision, WaitFor)


def test_an_agreeing_observation_in_between_starts_the_wait_again() -> None:
    watch = after_first_pass()
    watch, _ = decide(watch, FEWER, 100.0, INTERVAL, EARLY)
    watch, _ = decide(watch, AGREE, 110.0, INTERVAL, EARLY)
    watch, decision = decide(watch, FEWER, 131.0, INTERVAL, EARLY)
    assert isinstance(decision, WaitFor)
    _, decision = decide(watch, FEWER, 161.0, INTERVAL, EARLY)
    assert decision == RunPass(early=True)


def test_old_statistics_or_no_count_never_run_the_pass_early() -> None:
    stale = Counts(registered=2, age=181.0, holding=3, runners=3)
    for counts in (stale, None):
        watch = after_first_pass()
        for now in (100.0, 150.0, 200.0, 250.0):
            watch, decision = decide(watch, counts, now, INTERVAL, EARLY)
            assert isinstance(decision, WaitFor)


def test_early_passes_are_rate_limited_and_back_off_while_the_disagreement_lasts() -> None:
    watch = after_first_pass()
    watch, _ = decide(watch, FEWER, 10.0, INTERVAL, EARLY)
    watch, decision = decide(watch, FEWER, 40.0, INTERVAL, EARLY)
    assert isinstance(decision, WaitFor), "sustained, but the last pass was 40 s ago"
    watch, decision = decide(watch, FEWER, 60.0, INTERVAL, EARLY)
    assert decision == RunPass(early=True)
    early_passes = [60.0]
    now = 60.0
    while now < 1000.0:
        now += 5.0
        watch, decision = decide(watch, FEWER, now, INTERVAL, EARLY)
        if isinstance(decision, RunPass):
            early_passes.append(now)
    gaps = [b - a for a, b in itertools.pairwise(early_passes)]
    assert gaps[:2] == [120.0, 240.0]
    assert all(gap <= INTERVAL for gap in gaps[2:])


def test_agreement_resets_the_back_off() -> None:
    watch = Watch(last_pass=0.0, streak=3)
    watch, _ = decide(watch, AGREE, 10.0, INTERVAL, EARLY)
    assert watch.streak == 0


def test_a_session_replaced_after_the_last_pass_runs_one_pass_at_once() -> None:
    watch = after_first_pass()
    watch, decision = decide(watch, AGREE, 100.0, INTERVAL, EARLY, replaced=1700.0)
    assert decision == RunPass(early=True, replaced=True), "no sustain, no min_gap"
    assert watch.last_pass == 100.0
    assert watch.streak == 0
    watch, decision = decide(watch, AGREE, 150.0, INTERVAL, EARLY, replaced=1700.0)
    assert decision == WaitFor(250.0), "the same replacement runs no second pass"
    _, decision = decide(watch, AGREE, 150.0, INTERVAL, EARLY, replaced=1760.0)
    assert decision == RunPass(early=True, replaced=True), "a second replacement does"


def test_a_replacement_the_last_pass_saw_runs_nothing_early() -> None:
    watch, decision = decide(Watch(), AGREE, 0.0, INTERVAL, EARLY, replaced=1700.0)
    assert decision == RunPass(early=False)
    assert watch.replaced_seen == 1700.0
    _, decision = decide(watch, AGREE, 100.0, INTERVAL, EARLY, replaced=1700.0)
    assert decision == WaitFor(200.0)
    _, decision = decide(watch, None, 100.0, INTERVAL, EARLY, replaced=None)
    assert decision == WaitFor(200.0)


def test_a_replacement_waits_for_the_replaced_gap_after_the_last_pass() -> None:
    watch = after_first_pass()
    watch, decision = decide(watch, AGREE, 4.0, INTERVAL, EARLY, replaced=1700.0)
    assert decision == WaitFor(EARLY.replaced_gap - 4.0)
    _, decision = decide(watch, AGREE, EARLY.replaced_gap, INTERVAL, EARLY, replaced=1700.0)
    assert decision == RunPass(early=True, replaced=True)


def test_a_replacement_pass_keeps_the_disagreement_back_off() -> None:
    watch = Watch(last_pass=0.0, streak=2)
    watch, decision = decide(watch, FEWER, 100.0, INTERVAL, EARLY, replaced=1.0)
    assert decision == RunPass(early=True, replaced=True)
    assert watch.streak == 2, "the back-off of a lasting disagreement is not reset"


observation = st.tuples(
    st.floats(min_value=0.0, max_value=120.0),  # seconds since the previous observation
    st.one_of(st.none(), st.sampled_from([1.0, 2.0, 3.0])),  # the listener's sessionReplacedAt
    st.one_of(
        st.none(),
        st.builds(
            Counts,
            registered=st.integers(0, 6),
            age=st.floats(0.0, 400.0),
            holding=st.integers(0, 6),
            runners=st.integers(0, 6),
        ),
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    steps=st.lists(observation, min_size=1, max_size=60),
    early=st.builds(
        EarlySettings,
        sustain=st.floats(0.0, 100.0),
        min_observations=st.integers(1, 4),
        min_gap=st.floats(1.0, 200.0),
        freshness=st.floats(1.0, 400.0),
        replaced_gap=st.floats(1.0, 60.0),
    ),
    interval=st.floats(10.0, 600.0),
)
def test_property_early_passes_never_exceed_the_rate_limit(
    steps: list[tuple[float, float | None, Counts | None]], early: EarlySettings, interval: float
) -> None:
    watch = Watch()
    now = 0.0
    last_pass: float | None = None
    covered: float | None = None  # the replacement the last pass saw
    seen: list[tuple[float, bool]] = []  # (time, usable disagreement) since the last pass
    for delta, replaced, counts in steps:
        now += delta
        disagreeing = counts is not None and counts.age <= early.freshness and counts.disagree
        seen.append((now, disagreeing))
        pending = last_pass is not None and replaced is not None and replaced != covered
        watch, decision = decide(watch, counts, now, interval, early, replaced)
        if pending and last_pass is not None and now - last_pass >= early.replaced_gap:
            assert isinstance(decision, RunPass), "a new replacement runs a pass once allowed"
        if isinstance(decision, RunPass):
            covered = replaced
            if decision.replaced:
                assert decision.early
                assert pending
                assert last_pass is not None
                assert now - last_pass >= early.replaced_gap - 1e-9
                assert now - last_pass < interval
            elif decision.early:
                assert last_pass is not None
                assert now - last_pass >= early.min_gap - 1e-9
                assert now - last_pass < interval
                run = []
                for at, bad in reversed(seen):
                    if not bad:
                        break
                    run.append(at)
                assert len(run) >= early.min_observations
                assert now - run[-1] >= early.sustain - 1e-9
            else:
                assert last_pass is None or now - last_pass >= interval - 1e-9
            last_pass = now
            seen = []
        else:
            assert decision.seconds > 0
            if pending and last_pass is not None:
                assert now + decision.seconds <= last_pass + early.replaced_gap + 1e-6 or (
                    decision.seconds == 1.0
                ), "re-observed no later than the replacement's pass is allowed"
            if last_pass is not None:
                assert now + decision.seconds <= last_pass + interval + 1e-6 or (
                    decision.seconds == 1.0
                ), "re-observed no later than the pass is due"
