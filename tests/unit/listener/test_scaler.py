"""The desired count and patch ids (protocol §5.3 and the §7 scaler checklist), the merge patch
ARC sends, the sequence continued across restarts (L7), and the stale-surplus guard (ARC #4397)."""

from __future__ import annotations

import pytest

from scaleset.listener.scaler import (
    MAX_PATCH_SEQ,
    DesiredCount,
    Scaler,
    StaleSurplusGuard,
    ers_patch,
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


def test_invalid_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="min_runners"):
        Scaler(3, 2)


# --- stale surplus (ARC #4397) -------------------------------------------------------------


def test_a_short_surplus_with_idle_runners_is_counted() -> None:
    guard = StaleSurplusGuard(window=180)
    assert guard.effective_assigned(assigned=5, running=2, idle_runners=3, now=0) == 5
    assert guard.effective_assigned(assigned=5, running=2, idle_runners=3, now=179) == 5


def test_a_persistent_surplus_with_idle_runners_is_latched_and_dropped() -> None:
    guard = StaleSurplusGuard(window=180)
    guard.effective_assigned(assigned=34, running=19, idle_runners=20, now=0)
    assert guard.effective_assigned(assigned=34, running=19, idle_runners=20, now=180) == 19
    # the idle runners it left get scaled away: the stale part does not come back
    assert guard.effective_assigned(assigned=34, running=19, idle_runners=0, now=500) == 19
    # real new demand on top is counted
    assert guard.effective_assigned(assigned=37, running=19, idle_runners=0, now=600) == 22


def test_the_latch_only_covers_what_idle_runners_should_have_absorbed() -> None:
    guard = StaleSurplusGuard(window=60)
    guard.effective_assigned(assigned=15, running=0, idle_runners=5, now=0)
    assert guard.effective_assigned(assigned=15, running=0, idle_runners=5, now=60) == 10


def test_the_latch_shrinks_with_the_surplus_and_is_released_at_zero() -> None:
    guard = StaleSurplusGuard(window=60)
    guard.effective_assigned(assigned=10, running=0, idle_runners=10, now=0)
    assert guard.effective_assigned(assigned=10, running=0, idle_runners=10, now=60) == 0
    assert guard.effective_assigned(assigned=4, running=0, idle_runners=0, now=70) == 0
    assert guard.latched == 4
    assert guard.effective_assigned(assigned=0, running=0, idle_runners=0, now=80) == 0
    assert guard.latched == 0
    assert guard.effective_assigned(assigned=3, running=0, idle_runners=0, now=90) == 3


def test_no_idle_runners_means_no_stale_verdict() -> None:
    guard = StaleSurplusGuard(window=60)
    for now in (0, 60, 600):
        assert guard.effective_assigned(assigned=9, running=1, idle_runners=0, now=now) == 9
