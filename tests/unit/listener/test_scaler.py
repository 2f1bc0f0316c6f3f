"""The desired count and patch ids (ARC's rule), the merge patch
ARC sends, the sequence continued across restarts (L7), and the stale-surplus guard (ARC #4397)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scaleset.listener.scaler import (
    MAX_PATCH_SEQ,
    DesiredCount,
    Scaler,
    StaleSurplus,
    StaleSurplusGuard,
    SurplusObservation,
    ers_patch,
    judge_surplus,
)

HUGE = 2_147_483_647

# Each step: (job event before the call?, assigned) -> (target, patch id, patch seq).
TABLES = {
    "first call: min + count, seq 0, patch id 0": (
        0,
        HUGE,
        [((False, 1), (1, 0, 0))],
    ),
    "dirty then 0: target min, patch id increments": (
        0,
        HUGE,
        [((False, 1), (1, 0, 0)), ((True, 0), (0, 1, 1))],
    ),
    "same count twice without events, above min: patch id increments": (
        0,
        HUGE,
        [((False, 1), (1, 0, 0)), ((False, 1), (1, 1, 1))],
    ),
    "at min twice without events: forced 0 while seq grows": (
        0,
        HUGE,
        [((False, 0), (0, 0, 0)), ((False, 0), (0, 0, 1)), ((True, 0), (0, 2, 2))],
    ),
    "first call dirty: still patch id 0": (
        0,
        HUGE,
        [((True, 1), (1, 0, 0))],
    ),
    "min 1: count 3, dirty 0, clean 0": (
        1,
        HUGE,
        [((False, 3), (4, 0, 0)), ((True, 0), (1, 1, 1)), ((False, 0), (1, 0, 2))],
    ),
    "min 1 at start: floor forced": (
        1,
        HUGE,
        [((False, 0), (1, 0, 0)), ((False, 0), (1, 0, 1)), ((True, 0), (1, 2, 2))],
    ),
    "max 5: count 6 clamps, back to 0 after events": (
        0,
        5,
        [((False, 6), (5, 0, 0)), ((False, 6), (5, 1, 1)), ((True, 0), (0, 2, 2))],
    ),
    "max 0: never a runner": (
        0,
        0,
        [((False, 3), (0, 0, 0)), ((False, 3), (0, 0, 1))],
    ),
}


@pytest.mark.parametrize("case", list(TABLES), ids=list(TABLES))
def test_scaler_table(case: str) -> None:
    min_runners, max_runners, steps = TABLES[case]
    scaler = Scaler(min_runners, max_runners)
    for (event, assigned), expected in steps:
        if event:
            scaler.job_event()
        decision = scaler.desired(assigned)
        assert (decision.target, decision.patch_id, decision.patch_seq) == expected
        assert scaler.dirty is False


@pytest.mark.parametrize(
    ("target", "patch_id", "body"),
    [
        (0, 5, {"spec": {"patchID": 5, "replicas": None}}),
        (3, 5, {"spec": {"patchID": 5, "replicas": 3}}),
        (0, 0, {"spec": {"patchID": 0, "replicas": None}}),
    ],
)
def test_the_merge_patch_sends_null_replicas_for_zero(
    target: int, patch_id: int, body: dict[str, object]
) -> None:
    assert ers_patch(DesiredCount(target, patch_id, patch_id)) == body


def test_L7_a_restored_sequence_keeps_growing_after_a_restart() -> None:
    before = Scaler(0, 10)
    decisions = [before.desired(n) for n in (2, 3)]
    restored = Scaler(0, 10, patch_seq=before.patch_seq, last_target=before.last_target)
    after = restored.desired(3)
    assert after.patch_seq == decisions[-1].patch_seq + 1
    assert after.patch_id == after.patch_seq  # not 0: a new, never consumed request


def test_L7_a_restored_scaler_still_forces_the_floor() -> None:
    before = Scaler(1, 10)
    before.desired(0)
    restored = Scaler(1, 10, patch_seq=before.patch_seq, last_target=before.last_target)
    assert restored.desired(0).patch_id == 0


def test_the_sequence_wraps_at_int32() -> None:
    scaler = Scaler(0, 10, patch_seq=MAX_PATCH_SEQ - 1)
    assert scaler.desired(3).patch_seq == MAX_PATCH_SEQ
    assert scaler.desired(3).patch_seq == 1


@settings(max_examples=200, deadline=None)
@given(
    st.integers(-1, MAX_PATCH_SEQ),
    st.lists(st.tuples(st.booleans(), st.integers(0, 20)), max_size=6),
    st.integers(0, 20),
)
@example(MAX_PATCH_SEQ, [], 3)
@example(MAX_PATCH_SEQ - 1, [], 0)
@example(-1, [], 0)
def test_the_patch_id_a_job_completion_names_is_the_next_patchs(
    start: int, steps: list[tuple[bool, int]], assigned: int
) -> None:
    """What a JobCompleted record names (``next_patch_id``) is the id of the next patch after
    that job event, whatever came before (restored sequences and the wrap at int32 included),
    and never the force-state 0 (``None`` names none: a fresh scaler's first patch is 0)."""
    scaler = Scaler(0, 20, patch_seq=start)
    for event, count in steps:
        if event:
            scaler.job_event()
        scaler.desired(count)
    named = scaler.next_patch_id()
    scaler.job_event()
    sent = scaler.desired(assigned).patch_id
    assert sent == (0 if named is None else named)
    assert named is None or named >= 1


def test_invalid_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="min_runners"):
        Scaler(3, 2)


# --- stale surplus (ARC #4397, lifecycle.md L7) ------------------------------------------------


def test_a_short_surplus_with_idle_runners_is_counted() -> None:
    guard = StaleSurplusGuard(window=180)
    assert guard.effective_assigned(assigned=5, running=2, idle_runners=3, now=0) == 5
    assert guard.effective_assigned(assigned=5, running=2, idle_runners=3, now=179) == 5


def test_a_persistent_surplus_with_idle_runners_is_held_back_while_they_stay_idle() -> None:
    guard = StaleSurplusGuard(window=180)
    guard.effective_assigned(assigned=34, running=19, idle_runners=20, now=0)
    assert guard.effective_assigned(assigned=34, running=19, idle_runners=20, now=180) == 19
    assert guard.effective_assigned(assigned=34, running=19, idle_runners=20, now=500) == 19
    # real new demand on top is counted
    assert guard.effective_assigned(assigned=37, running=19, idle_runners=20, now=600) == 22


def test_L7_a_held_back_surplus_comes_back_when_the_idle_runners_are_gone() -> None:
    """Issue 25, item 1: the idle runners the latch was based on were scaled away; the jobs
    still assigned are real demand again (the latch used to stay until the surplus shrank)."""
    guard = StaleSurplusGuard(window=180)
    guard.effective_assigned(assigned=3, running=0, idle_runners=3, now=0)
    assert guard.effective_assigned(assigned=3, running=0, idle_runners=3, now=180) == 0
    assert guard.effective_assigned(assigned=3, running=0, idle_runners=0, now=200) == 3
    assert guard.latched == 0


def test_L7_the_latch_never_exceeds_the_idle_runners_left() -> None:
    guard = StaleSurplusGuard(window=60)
    guard.effective_assigned(assigned=15, running=0, idle_runners=5, now=0)
    assert guard.effective_assigned(assigned=15, running=0, idle_runners=5, now=60) == 10
    assert guard.effective_assigned(assigned=15, running=0, idle_runners=2, now=70) == 13


def test_L7_statistics_carried_over_from_failed_polls_never_latch() -> None:
    """Issue 25, item 1: a GitHub outage that starts with a backlog. Every failed poll patched
    again with the statistics from before it while the runners that could not connect sat idle,
    so after the window the whole backlog was held back."""
    guard = StaleSurplusGuard(window=180)
    for now in range(0, 900, 5):
        effective = guard.effective_assigned(
            assigned=3, running=0, idle_runners=3, now=now, carried_over=True
        )
        assert effective == 3
    # GitHub is back: the window starts again on fresh statistics
    assert guard.effective_assigned(assigned=3, running=0, idle_runners=3, now=900) == 3
    assert guard.effective_assigned(assigned=3, running=0, idle_runners=3, now=1079) == 3


def test_the_latch_shrinks_with_the_surplus_and_is_released_at_zero() -> None:
    guard = StaleSurplusGuard(window=60)
    guard.effective_assigned(assigned=10, running=0, idle_runners=10, now=0)
    assert guard.effective_assigned(assigned=10, running=0, idle_runners=10, now=60) == 0
    assert guard.effective_assigned(assigned=4, running=0, idle_runners=10, now=70) == 0
    assert guard.latched == 4
    assert guard.effective_assigned(assigned=0, running=0, idle_runners=10, now=80) == 0
    assert guard.latched == 0
    assert guard.effective_assigned(assigned=3, running=0, idle_runners=10, now=90) == 3


def test_no_idle_runners_means_no_stale_verdict() -> None:
    guard = StaleSurplusGuard(window=60)
    for now in (0, 60, 600):
        assert guard.effective_assigned(assigned=9, running=1, idle_runners=0, now=now) == 9


# --- the guard's decision as properties ---------------------------------------------------------

WINDOW = 60.0

counts = st.integers(min_value=0, max_value=40)
observations = st.builds(
    SurplusObservation,
    assigned=counts,
    running=counts,
    idle_runners=counts,
    now=st.just(0.0),
    carried_over=st.booleans(),
)
memories = st.builds(
    StaleSurplus,
    since=st.none() | st.floats(min_value=-1000, max_value=0),
    latched=counts,
)


@st.composite
def timelines(draw: st.DrawFn) -> list[SurplusObservation]:
    """Observations at growing times, as the loop makes them."""
    steps = draw(st.lists(st.tuples(observations, st.floats(0, 2 * WINDOW)), max_size=30))
    now, timeline = 0.0, []
    for observation, gap in steps:
        now += gap
        timeline.append(replace(observation, now=now))
    return timeline


@settings(max_examples=200, deadline=None)
@given(memories, observations)
def test_L7_with_no_idle_runner_the_effective_count_is_the_assigned_count(
    memory: StaleSurplus, seen: SurplusObservation
) -> None:
    seen = replace(seen, idle_runners=0)
    assert judge_surplus(memory, seen, WINDOW).effective(seen) == seen.assigned


@settings(max_examples=200, deadline=None)
@given(memories, observations)
def test_L7_carried_over_statistics_never_advance_the_latch(
    memory: StaleSurplus, seen: SurplusObservation
) -> None:
    seen = replace(seen, carried_over=True)
    after = judge_surplus(memory, seen, WINDOW)
    assert after.latched <= memory.latched
    assert after.since is None  # nor do they count towards the window


@settings(max_examples=200, deadline=None)
@given(memories, observations)
def test_L7_the_latch_never_outlives_its_evidence(
    memory: StaleSurplus, seen: SurplusObservation
) -> None:
    after = judge_surplus(memory, seen, WINDOW)
    surplus = max(seen.assigned - seen.running, 0)
    assert 0 <= after.latched <= min(surplus, seen.idle_runners)
    effective = after.effective(seen)
    assert max(seen.assigned - seen.idle_runners, 0) <= effective <= seen.assigned


@settings(max_examples=300, deadline=None)
@given(timelines())
@example(  # 61.25177762764913 - 1.251777627649136 == 60.0, yet 1.2517... > 61.2517... - 60.0
    [SurplusObservation(1, 0, 1, 1.251777627649136), SurplusObservation(1, 0, 1, 61.25177762764913)]
)
def test_L7_a_latch_grows_only_after_a_window_of_fresh_evidence(
    timeline: list[SurplusObservation],
) -> None:
    memory = StaleSurplus()
    for index, seen in enumerate(timeline):
        after = judge_surplus(memory, seen, WINDOW)
        if after.latched > memory.latched:
            # every observation of the last window (and the one before it) was fresh and
            # showed more idle runners beside a surplus than were latched before
            earlier = [o for o in timeline[:index] if seen.now - o.now < WINDOW]  # as judge_surplus
            first = index - len(earlier) - 1
            assert first >= 0
            for witness in [timeline[first], *earlier, seen]:
                assert not witness.carried_over
                evidence = min(max(witness.assigned - witness.running, 0), witness.idle_runners)
                assert evidence > 0
        memory = after
