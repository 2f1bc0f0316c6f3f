"""``plan`` of the EphemeralRunnerSet controller, one rule per test (no server)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.unit.controllers.ephemeralrunnerset.builders import (
    NOW,
    busy,
    condition,
    creates,
    deleting,
    events,
    idle,
    observed,
    reaped,
    removed,
    scale_down,
    starting,
    terminal,
    written,
)

from scaleset.api import EphemeralRunnerSetStatus, RunnerPhase, keys
from scaleset.api.ephemeralrunnerset import FailureStreak, FinishedRunner
from scaleset.controllers.ephemeralrunnerset.actions import (
    FINALIZER_ADDED,
    RUNNERS_GONE,
    AddFinalizers,
    DeleteRunner,
    Note,
    RemoveFinalizers,
    Requeue,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunnerset.plan import plan
from scaleset.controllers.ephemeralrunnerset.proxy_secret import ProxyState
from scaleset.controllers.ephemeralrunnerset.settings import PlanSettings
from scaleset.controllers.github_access import GitHubAccessError

# --------------------------------------------------------------------- finalizer, status


def test_a_set_without_finalizer_gets_it_and_nothing_else() -> None:
    added = AddFinalizers((), (keys.EPHEMERAL_RUNNER_SET_FINALIZER,), FINALIZER_ADDED)
    assert plan(observed(replicas=3, finalizer=False), NOW) == [added]


def test_L0_status_has_the_five_counts_and_arcs_counts_by_phase() -> None:
    actions = plan(
        observed(
            starting("s1"),
            idle("i1"),
            idle("i2", phase=RunnerPhase.RUNNING),  # ARC-made idle runner (takeover)
            busy("b1"),
            terminal("t1"),
            deleting("d1"),
            replicas=4,
        ),
        NOW,
    )
    status = written(actions)
    assert status is not None
    assert (
        status.starting_ephemeral_runners,
        status.idle_ephemeral_runners,
        status.busy_ephemeral_runners,
        status.terminal_ephemeral_runners,
        status.deleting_ephemeral_runners,
    ) == (1, 2, 1, 1, 1)
    # ARC: by phase, deleting ones excluded; currentReplicas = pending + running + failed
    assert status.pending_ephemeral_runners == 2  # s1 (""), i1 (Pending)
    assert status.running_ephemeral_runners == 2  # i2, b1
    assert status.failed_ephemeral_runners == 1
    assert status.current_replicas == 5
    assert status.phase == "Running"


def test_status_is_not_written_when_nothing_changed() -> None:
    first = written(plan(observed(idle("i1"), replicas=1), NOW))
    assert first is not None
    again = plan(observed(idle("i1"), replicas=1, status=first), NOW)
    assert not any(isinstance(a, WriteStatus) for a in again)


# ------------------------------------------------------------------------------ scale up


def test_scale_up_creates_the_difference_for_the_current_patch() -> None:
    actions = plan(observed(idle("i1"), busy("b1"), replicas=5, patch_id=7), NOW)
    assert creates(actions) == 3
    assert {a.patch_id for a in actions if type(a).__name__ == "CreateRunner"} == {7}  # type: ignore[attr-defined]


def test_L0_runners_created_but_not_yet_in_the_cache_count_as_capacity() -> None:
    assert creates(plan(observed(idle("i1"), replicas=5, phantoms=4), NOW)) == 0
    assert creates(plan(observed(idle("i1"), replicas=5, phantoms=2), NOW)) == 2


def test_creates_per_pass_are_capped_and_the_rest_follows_at_once() -> None:
    actions = plan(observed(replicas=1000), NOW, PlanSettings(max_creates=300))
    assert creates(actions) == 300
    assert Requeue(0.5, Note("MoreToCreate")) in actions


def test_L3_a_positive_patch_never_scales_down() -> None:
    actions = plan(observed(idle("i1"), idle("i2"), idle("i3"), replicas=1, patch_id=4), NOW)
    assert removed(actions) == []


# ---------------------------------------------------------------------------- L3 scale down


def test_L3_force_state_scales_down_in_l3_order() -> None:
    actions = plan(
        observed(
            idle("idle-young", age=10),
            idle("idle-old", age=500),
            starting("starting-registered", runner_id=9, age=5),
            starting("starting-jit", runner_id=0, age=5, jit_in_flight=True),
            busy("busy"),
            replicas=1,
            patch_id=0,
        ),
        NOW,
    )
    down = scale_down(actions)
    assert down is not None
    assert down.count == 4
    assert [c.name for c in down.candidates] == ["starting-registered", "idle-old", "idle-young"]


def test_L3_never_picks_busy_job_or_completion_or_jit_in_flight() -> None:
    actions = plan(
        observed(
            busy("busy"),
            idle("idle-with-job", has_job=True),
            busy("completed", has_job=False, job_completed=True),
            starting("jit", runner_id=0, jit_in_flight=True),
            starting("no-id", runner_id=0),
            replicas=0,
            patch_id=0,
        ),
        NOW,
    )
    assert scale_down(actions) is None


def test_L3_runners_being_removed_by_us_are_not_capacity_nor_candidates() -> None:
    actions = plan(
        observed(
            idle("i1"), idle("i2"), replicas=1, patch_id=0, in_flight_deletes=frozenset({"i1"})
        ),
        NOW,
    )
    assert scale_down(actions) is None
    assert creates(actions) == 0


# ------------------------------------------------------------------------- L3 reaping


def test_L3_terminal_reason_is_recorded_before_the_runner_is_reaped() -> None:
    actions = plan(
        observed(terminal("t1", reason="InvalidPod"), idle("i1"), replicas=2),
        NOW,
    )
    kinds = [type(a).__name__ for a in actions]
    assert kinds.index("WriteStatus") < kinds.index("DeleteRunner")
    status = written(actions)
    assert status is not None
    assert status.terminal_reasons == {"InvalidPod": 1}
    assert status.recorded_terminal_runners == ["t1"]
    assert condition(status, "TerminalRunners") == ("True", "InvalidPod")
    assert reaped(actions) == ["t1"]
    # terminal runners are no capacity: the slot is refilled at once
    assert creates(actions) == 1
    again = plan(
        observed(terminal("t1", reason="InvalidPod"), idle("i1"), replicas=2, status=status), NOW
    )
    second = written(again) or status
    assert second.terminal_reasons == {"InvalidPod": 1}, "a reason is counted once"
    assert reaped(again) == ["t1"], "the delete is retried"


def test_L3_outdated_is_recorded_and_the_phase_stays_until_the_spec_changes() -> None:
    first = written(plan(observed(terminal("t1", phase=RunnerPhase.OUTDATED), replicas=1), NOW))
    assert first is not None
    assert first.phase == "Outdated"
    assert first.terminal_reasons == {"Outdated": 1}
    later = plan(observed(idle("i2"), replicas=1, status=first), NOW)
    assert (written(later) or first).phase == "Outdated"
    changed = written(plan(observed(idle("i2"), replicas=1, status=first, spec_hash="spec-2"), NOW))
    assert changed is not None
    assert changed.phase == "Running"


def test_L3_breaker_pauses_creation_after_the_same_reason_n_times() -> None:
    settings = PlanSettings(breaker_threshold=3, breaker_backoff=(60.0, 120.0))
    status = EphemeralRunnerSetStatus()
    for index in range(3):
        actions = plan(
            observed(terminal(f"t{index}", reason="InvalidPod"), replicas=1, status=status),
            NOW,
            settings,
        )
        status = written(actions) or status
    assert status.failure_streak is not None
    assert status.failure_streak.count == 3
    assert status.failure_streak.paused_until == NOW + timedelta(seconds=60)
    assert "CreationPaused" in events(actions)
    assert creates(actions) == 0
    assert condition(status, "CreationPaused") == ("True", "InvalidPod")
    assert Requeue(60.0, Note("CreationPaused")) in actions
    # after the back-off, one more try
    later = NOW + timedelta(seconds=61)
    probe = plan(observed(replicas=1, status=status), later, settings)
    assert creates(probe) == 1
    # it fails the same way: paused again, twice as long
    tripped = written(
        plan(
            observed(terminal("t9", reason="InvalidPod"), replicas=1, status=status),
            later,
            settings,
        )
    )
    assert tripped is not None
    assert tripped.failure_streak is not None
    assert tripped.failure_streak.paused_until == later + timedelta(seconds=120)


def test_L3_breaker_counts_only_the_same_reason_in_a_row() -> None:
    settings = PlanSettings(breaker_threshold=2)
    status = written(plan(observed(terminal("a", reason="InvalidPod"), replicas=1), NOW, settings))
    assert status is not None
    status = written(
        plan(
            observed(terminal("b", phase=RunnerPhase.OUTDATED), replicas=1, status=status),
            NOW,
            settings,
        )
    )
    assert status is not None
    assert status.failure_streak is not None
    assert (status.failure_streak.reason, status.failure_streak.count) == ("Outdated", 1)


def test_L3_breaker_resets_when_a_new_runner_starts() -> None:
    streak = FailureStreak(
        reason="InvalidPod", count=5, since=NOW - timedelta(seconds=100), trips=1,
        paused_until=NOW + timedelta(seconds=30),
    )  # fmt: skip
    status = EphemeralRunnerSetStatus(failure_streak=streak)
    actions = plan(observed(idle("fresh", age=50), replicas=2, status=status), NOW)
    assert "CreationResumed" in events(actions)
    assert (written(actions) or status).failure_streak is None
    assert creates(actions) == 1


def test_L3_a_new_runner_spec_ends_the_breakers_pause_at_once() -> None:
    """The user fixed the template that kept failing: the next pass creates a runner, not one
    up to 15 minutes later when the back-off ends."""
    streak = FailureStreak(
        reason="InvalidPod", count=5, since=NOW - timedelta(seconds=100), trips=3,
        paused_until=NOW + timedelta(seconds=800), runner_spec="spec-0",
    )  # fmt: skip
    status = EphemeralRunnerSetStatus(failure_streak=streak)
    paused = plan(observed(replicas=2, status=status, spec_hash="spec-0"), NOW)
    assert creates(paused) == 0
    fixed = plan(observed(replicas=2, status=status, spec_hash="spec-1"), NOW)
    assert creates(fixed) == 2
    assert "CreationResumed" in events(fixed)
    after = written(fixed)
    assert after is not None
    assert after.failure_streak is None


def test_L3_failures_of_an_older_runner_spec_do_not_trip_the_breaker() -> None:
    settings = PlanSettings(breaker_threshold=3)
    old = [terminal(f"t{i}", reason="InvalidPod", current_spec=False) for i in range(3)]
    actions = plan(observed(*old, replicas=1), NOW, settings)
    assert creates(actions) == 1
    assert (written(actions) or EphemeralRunnerSetStatus()).failure_streak is None


def test_L3_a_streak_remembers_the_runner_spec_it_counts() -> None:
    actions = plan(observed(terminal("t", reason="InvalidPod"), replicas=1), NOW)
    status = written(actions)
    assert status is not None
    assert status.failure_streak is not None
    assert status.failure_streak.runner_spec == "spec-1"


# ---------------------------------------------------------- finished vs lost (ARC #4642)


def test_L3_a_finished_runner_is_replaced_only_on_a_new_patch() -> None:
    # b1 finished its job and is being deleted: its slot stays taken under patch 5 ...
    first = plan(observed(deleting("b1", has_job=True), idle("i1"), replicas=2, patch_id=5), NOW)
    assert creates(first) == 0
    status = written(first)
    assert status is not None
    assert status.finished_runners == [FinishedRunner(name="b1", patch_id=5)]
    # ... also once it is gone ...
    gone = plan(observed(idle("i1"), replicas=2, patch_id=5, status=status), NOW)
    assert creates(gone) == 0
    # ... until the listener's next patch, which accounts for it
    later = plan(observed(idle("i1"), replicas=2, patch_id=6, status=written(gone) or status), NOW)
    assert creates(later) == 1


def test_L3_a_runner_whose_end_the_current_patch_accounts_for_is_replaced_at_once() -> None:
    """The listener records JobCompleted with the id of the patch that follows it (``patchId``
    6): under patch 6 that count already left the job out, so the runner's slot is free as soon
    as it goes — visible (being deleted) or gone (seen by the informer). It used to be held
    until patch 7: the listener's next message, or with nothing to say the end of GitHub's 50 s
    long poll, while a queued job waited (maxRunners 1: 4 of 11 jobs done in 130 s)."""
    done = deleting("b1", has_job=True, job_completed=True, completion_patch_id=6)
    assert creates(plan(observed(done, idle("i1"), replicas=2, patch_id=6), NOW)) == 1
    gone = plan(
        replace(
            observed(idle("i1"), replicas=2, patch_id=6, seen_finished=frozenset({"b1"})),
            accounted={"b1": 6},
        ),
        NOW,
    )
    assert creates(gone) == 1
    assert (written(gone) or EphemeralRunnerSetStatus()).finished_runners == []
    # an entry from before the record (under patch 6) is not held either
    held = EphemeralRunnerSetStatus(finished_runners=[FinishedRunner(name="b1", patch_id=6)])
    assert creates(plan(observed(done, idle("i1"), replicas=2, patch_id=6, status=held), NOW)) == 1


def test_L3_a_runner_whose_end_the_next_patch_will_account_for_holds_its_slot_until_then() -> None:
    """ARC #4642 kept: the record names patch 6, the set still shows patch 5 (its count may
    still hold the job): the slot stays taken until patch 6 arrives."""
    done = deleting("b1", has_job=True, job_completed=True, completion_patch_id=6)
    first = plan(observed(done, idle("i1"), replicas=2, patch_id=5), NOW)
    assert creates(first) == 0
    status = written(first) or EphemeralRunnerSetStatus()
    later = plan(observed(idle("i1"), replicas=2, patch_id=6, status=status), NOW)
    assert creates(later) == 1


def test_L3_at_a_force_state_patch_a_finished_runner_holds_no_slot() -> None:
    """Patch id 0 states the exact count (the listener sends it on every empty poll while idle
    at minRunners): a runner first seen finished under it is replaced, and its entry goes with
    it. It used to hold its slot for as long as the patch id stayed 0 — for ever in a min ==
    max pool."""
    first = plan(observed(deleting("b1", has_job=True), idle("i1"), replicas=2, patch_id=0), NOW)
    assert creates(first) == 1
    status = written(first) or EphemeralRunnerSetStatus()
    for _ in range(3):  # the listener keeps sending patch 0
        again = plan(observed(idle("i1"), replicas=2, patch_id=0, status=status), NOW)
        assert creates(again) == 1
        status = written(again) or status
    assert status.finished_runners == []


def test_L3_a_slot_held_under_a_positive_patch_is_given_back_by_a_force_state_patch() -> None:
    held = EphemeralRunnerSetStatus(finished_runners=[FinishedRunner(name="b1", patch_id=5)])
    assert creates(plan(observed(idle("i1"), replicas=2, patch_id=5, status=held), NOW)) == 0
    assert creates(plan(observed(idle("i1"), replicas=2, patch_id=0, status=held), NOW)) == 1


def test_L3_a_runner_seen_finishing_under_a_force_state_patch_holds_no_slot() -> None:
    seen = frozenset({"x"})
    actions = plan(observed(idle("i1"), replicas=2, patch_id=0, seen_finished=seen), NOW)
    assert creates(actions) == 1
    assert (written(actions) or EphemeralRunnerSetStatus()).finished_runners == []


def test_L3_a_lost_runner_is_replaced_at_once() -> None:
    # deleted without a job (pod lost, replaced by the runner controller): refilled now
    actions = plan(
        observed(deleting("lost", has_job=False), idle("i1"), replicas=2, patch_id=5), NOW
    )
    assert creates(actions) == 1


def test_L3_a_runner_seen_finishing_by_the_informer_holds_its_slot() -> None:
    actions = plan(
        observed(idle("i1"), replicas=2, patch_id=5, seen_finished=frozenset({"x"})), NOW
    )
    assert creates(actions) == 0


def test_L3_a_hung_runner_counts_until_gone_then_is_replaced_under_a_newer_patch() -> None:
    hung = busy("hung", job_completed=True)
    first = written(plan(observed(hung, replicas=1, patch_id=5), NOW))
    assert first is not None
    assert creates(plan(observed(hung, replicas=1, patch_id=6, status=first), NOW)) == 0
    status = written(plan(observed(hung, replicas=1, patch_id=6, status=first), NOW)) or first
    ended = plan(
        observed(
            deleting("hung", has_job=True, job_completed=True),
            replicas=1,
            patch_id=6,
            status=status,
        ),
        NOW,
    )
    assert creates(ended) == 1


# ------------------------------------------------------------------------------ L10


def test_L10_a_deleting_set_ignores_replicas_removes_idle_waits_for_busy() -> None:
    actions = plan(
        observed(
            idle("i1"),
            starting("s1", runner_id=4),
            starting("s0", runner_id=0, jit_in_flight=True),
            busy("b1"),
            terminal("t1"),
            replicas=10,
            deleting=True,
        ),
        NOW,
    )
    assert creates(actions) == 0
    assert sorted(removed(actions)) == ["i1", "s1"]
    assert reaped(actions) == ["t1"]
    assert not any(isinstance(a, RemoveFinalizers) for a in actions)
    assert Requeue(5.0, Note("JitRequestInFlight")) in actions


def test_L10_a_deleting_set_lets_go_when_no_runner_is_left() -> None:
    released = RemoveFinalizers((keys.EPHEMERAL_RUNNER_SET_FINALIZER,), (), RUNNERS_GONE)
    assert plan(observed(deleting=True, replicas=3), NOW)[-1] == released
    assert released not in plan(observed(deleting("d1"), deleting=True), NOW)
    assert released not in plan(observed(deleting=True, phantoms=1), NOW)


def test_L10_a_released_set_sheds_ours_and_the_legacy_finalizer_in_one_write() -> None:
    base = observed(deleting=True)
    held = (
        "other.io/keep",
        keys.LEGACY_EPHEMERAL_RUNNER_SET_FINALIZER,
        keys.EPHEMERAL_RUNNER_SET_FINALIZER,
    )
    runner_set = replace(base.runner_set, finalizers=held)
    actions = plan(replace(base, runner_set=runner_set), NOW)
    assert actions[-1] == RemoveFinalizers(held, ("other.io/keep",), RUNNERS_GONE)
    assert sum(isinstance(a, RemoveFinalizers) for a in actions) == 1
    only_others = replace(base.runner_set, finalizers=("other.io/keep",))
    actions = plan(replace(base, runner_set=only_others), NOW)
    assert not any(isinstance(a, RemoveFinalizers) for a in actions), "none of ours is left"


def test_L10_spec_change_replaces_idle_and_starting_keeps_busy_and_never_waits() -> None:
    actions = plan(
        observed(
            idle("old-idle", current_spec=False),
            starting("old-starting", current_spec=False, runner_id=3),
            busy("old-busy", current_spec=False),
            idle("new-idle"),
            replicas=4,
            patch_id=9,
        ),
        NOW,
    )
    assert sorted(removed(actions)) == ["old-idle", "old-starting"]
    assert not any(
        isinstance(a, Requeue) and a.note.reason == "WaitingForBusyRunners" for a in actions
    )
    # replacements come once the old ones are gone (no double count meanwhile)
    assert creates(actions) == 0
    after = plan(
        observed(busy("old-busy", current_spec=False), idle("new-idle"), replicas=4, patch_id=9),
        NOW,
    )
    assert creates(after) == 2


def test_L10_spec_change_with_min_runners_and_only_idle_runners_completes() -> None:
    old = [idle(f"old{i}", current_spec=False) for i in range(3)]
    actions = plan(observed(*old, replicas=3, patch_id=0), NOW)
    assert sorted(removed(actions)) == ["old0", "old1", "old2"]
    assert scale_down(actions) is None, "no extra scale-down on top of the replacement"


# ---------------------------------------------------------------------------- bad input


def test_L8_negative_replicas_are_ignored_with_an_event() -> None:
    actions = plan(observed(idle("i1"), idle("i2"), replicas=-3, patch_id=0), NOW)
    assert removed(actions) == []
    assert creates(actions) == 0
    assert events(actions) == ["InvalidReplicas"]
    assert condition(written(actions), "ReplicasAccepted") == ("False", "InvalidReplicas")


def test_L8_replicas_above_the_scale_set_maximum_are_ignored() -> None:
    actions = plan(observed(replicas=50, max_runners=10), NOW)
    assert creates(actions) == 0
    assert events(actions) == ["ReplicasAboveMaximum"]


def test_L8_a_patch_id_going_backwards_is_ignored() -> None:
    status = EphemeralRunnerSetStatus(last_patch_id=12)
    actions = plan(observed(replicas=5, patch_id=11, status=status), NOW)
    assert creates(actions) == 0
    assert events(actions) == ["PatchIDWentBackwards"]
    again = plan(observed(replicas=5, patch_id=11, status=written(actions)), NOW)
    assert events(again) == [], "one Event per new problem, not per pass"


def test_a_force_state_patch_restarts_the_sequence() -> None:
    # ARC's listener starts over at 0 after a restart, then counts up from 1
    status = written(
        plan(
            observed(replicas=2, patch_id=0, status=EphemeralRunnerSetStatus(last_patch_id=40)), NOW
        )
    )
    assert status is not None
    assert status.last_patch_id == 0
    assert creates(plan(observed(replicas=2, patch_id=1, status=status), NOW)) == 2


def test_terminal_runners_are_reaped_even_while_input_is_bad() -> None:
    actions = plan(observed(terminal("t1"), replicas=-1), NOW)
    assert [type(a) for a in actions if isinstance(a, (WriteStatus, DeleteRunner))] == [
        WriteStatus,
        DeleteRunner,
    ]


# ------------------------------------------------------------------------ proxy Secret


def test_the_proxy_secret_is_written_before_runners_that_name_it() -> None:
    proxy = ProxyState("set-proxy", {"http_proxy": "http://p:1"}, None)
    actions = plan(replace(observed(replicas=1), proxy=proxy), NOW)
    kinds = [type(a).__name__ for a in actions]
    assert kinds.index("EnsureProxySecret") < kinds.index("CreateRunner")
    current = ProxyState("set-proxy", {"http_proxy": "http://p:1"}, {"http_proxy": "http://p:1"})
    assert not any(
        type(a).__name__ == "EnsureProxySecret"
        for a in plan(replace(observed(replicas=1), proxy=current), NOW)
    )


def test_a_deleting_set_deletes_its_proxy_secret_then_lets_go() -> None:
    proxy = ProxyState("set-proxy", None, {"http_proxy": "http://p:1"})
    actions = plan(replace(observed(deleting=True), proxy=proxy), NOW)
    assert [type(a).__name__ for a in actions][-2:] == ["DeleteProxySecret", "RemoveFinalizers"]


def test_a_proxy_that_cannot_be_built_is_a_condition_and_an_event() -> None:
    problem = GitHubAccessError("ProxySecretMissing", "spec.ephemeralRunnerSpec.proxy.http", "no")
    actions = plan(replace(observed(replicas=1), proxy=ProxyState("p", None, None, problem)), NOW)
    assert events(actions) == ["ProxySecretMissing"]
    assert condition(written(actions), "ProxySecret") == ("False", "ProxySecretMissing")


def test_a_succeeded_runner_is_reaped_and_the_next_patch_fills_its_slot() -> None:
    # §9.2 "double scale up (2 -> 3 with one Succeeded): 3 runners, none Succeeded"
    done = terminal("done", phase=RunnerPhase.SUCCEEDED, has_job=True)
    first = plan(observed(done, idle("i1"), replicas=2, patch_id=5), NOW)
    assert reaped(first) == ["done"]
    assert creates(first) == 0, "its slot is the listener's to give back"
    status = written(first)
    assert status is not None
    assert status.failure_streak is None, "a success is no failure"
    later = plan(observed(idle("i1"), replicas=3, patch_id=6, status=status), NOW)
    assert creates(later) == 2
