"""``plan(observed, now) -> [Action]``: every decision of the EphemeralRunnerSet controller, pure.

Read top to bottom; each step names the rule it keeps.

1. **Finalizer** — a live set without ``ephemeralrunnerset.actions.github.com/finalizer`` gets
   it, and nothing else happens in that pass.
2. **Terminal runners (L3)** — each terminal runner's reason is recorded on the set (counter by
   reason, ``TerminalRunners`` condition) in the status write that comes *before* its deletion;
   terminal runners never count as capacity. The recorded names are kept until the runners are
   gone, so a retry never counts one twice.
3. **Failure breaker (L3)** — the same failure reason ``breaker_threshold`` times in a row pauses
   creation for a back-off period (doubling per trip), with the ``CreationPaused`` condition and
   an Event. A runner of the current spec that reaches idle or busy after the streak began, a
   runner that Succeeded, or a new runner spec (a fixed template) ends the streak; only runners
   of the current spec count in it.
4. **Deleting set (L10)** — ``replicas`` is ignored: idle and starting runners are removed at once
   (L3 removal: GitHub first), busy ones are waited for, terminal ones reaped; when no runner
   remains the runner proxy Secret and then the finalizer go. (A live set with a proxy keeps its
   runner proxy Secret current first, ARC §2.2 step 6; a proxy that cannot be built is the
   ``ProxySecret`` condition and an Event.)
5. **Bad input** — a runner spec the controller's policy refuses (an ``http://`` config URL
   without ``--allow-http-github-url``: every runner would send the namespace's GitHub
   credentials in clear text), ``replicas`` below 0 or above the scale set's ``maxRunners``, or
   a patch id going backwards (below the last accepted one, with no force-state ``0`` in
   between): ignored, ``ReplicasAccepted=False`` and an Event naming the field; nothing is
   created or removed for it.
6. **Spec change (§3.3, L10)** — runners built from an older runner spec are replaced: idle and
   starting ones are removed at once, busy ones finish on the old spec. Their replacements come
   from the count (step 7) once they are gone; nothing waits for the listener.
7. **Scale up** — ``replicas`` minus capacity, where capacity is live runners (starting, idle,
   busy, plus runners created by this process the cache does not show yet) and the slots of
   runners that finished under the current positive patch id (ARC #4642: the listener gives
   those back in its next patch; a runner lost or hung is not "finished", so its slot is
   refilled at once; patch id 0 states the exact count and holds no slot). Creation is paused
   while the breaker is open.
8. **Scale down (L3, §3.2)** — only on a force-state patch (``patchID`` 0): live minus
   ``replicas`` runners, candidates ranked starting-with-registration first, then idle, oldest
   first; never busy, never with a job, never with a JIT request in flight. ``apply`` re-checks
   each on a fresh read and asks GitHub before deleting.
9. **Status** — L0's five counts, ARC's counts by phase (``currentReplicas`` = pending + running
   + failed), phase (``Outdated`` from a runner reporting it until the runner spec changes),
   conditions and the controller's memory, written in one write, and only when a printer column
   (what ``kubectl get`` shows, ``scaleset.api.crds.PRINTER_COLUMNS``), a condition, or memory a
   restart must not lose (a terminal runner recorded, a finished runner entered with its patch
   id, the breaker, the outdated spec) changes. A write for columns and condition messages alone
   is paced: it comes at least ``status_interval`` (1 s) after this process's previous write of
   the set's status (``DeferStatus`` looks again then), so however fast runners and the
   listener's count change, they cost at most one write a second per set, and the columns are
   true again within that second; a condition's status or reason and memory are written at
   once. What only tidies memory (entries of runners gone), the ARC-only
   ``failedEphemeralRunners`` count, and ``lastPatchID`` ride along with the next such write:
   a listener patch is acknowledged (``ReplicasAccepted``, whose message names the count, not
   the patch id) when it changes the count — the listener patches after every message batch,
   mostly with the count it sent before. So ``lastPatchID`` may lag the newest
   patch with the same count; a patch id below the recorded one is still refused (step 5).
   The counts stay in status because the columns show them (the runner-set metrics carry them
   too, ``scaleset_runner_set_runners``), unlike ARC 0.15, which dropped both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from scaleset.api import (
    Condition,
    EphemeralRunnerSetStatus,
    RunnerPhase,
    RunnerState,
    keys,
    same_json,
    to_json,
)
from scaleset.api.crds import PRINTER_COLUMNS
from scaleset.api.ephemeralrunnerset import FailureStreak, FinishedRunner, RunnerSetPhase
from scaleset.controllers.decisions import add_finalizers, remove_finalizers
from scaleset.controllers.ephemeralrunnerset.actions import (
    FINALIZER_ADDED,
    RUNNERS_GONE,
    Action,
    CreateRunner,
    DeferStatus,
    DeleteProxySecret,
    DeleteRunner,
    EmitEvent,
    EnsureProxySecret,
    Note,
    RemoveRunner,
    Requeue,
    ScaleDown,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunnerset.observed import Observed, RunnerSetView, RunnerView
from scaleset.controllers.ephemeralrunnerset.proxy_secret import ProxyState
from scaleset.controllers.ephemeralrunnerset.settings import PlanSettings

ACCEPTED = "ReplicasAccepted"
CREATION_PAUSED = "CreationPaused"
PROXY_SECRET = "ProxySecret"  # noqa: S105 - a condition type
TERMINAL_RUNNERS = "TerminalRunners"
NEVER = datetime.max.replace(tzinfo=UTC)

FINALIZER = keys.EPHEMERAL_RUNNER_SET_FINALIZER
OURS = (FINALIZER, keys.LEGACY_EPHEMERAL_RUNNER_SET_FINALIZER)
"""The finalizers a deleted set is released from: ours, and the one older versions put."""


# ---------------------------------------------------------------------------------- the table


def plan(observed: Observed, now: datetime, settings: PlanSettings | None = None) -> list[Action]:
    """Everything to do for one EphemeralRunnerSet, in the order ``apply`` must run it."""
    settings = settings or PlanSettings()
    rs = observed.runner_set
    if not rs.deleting:
        added = add_finalizers(rs.finalizers, (FINALIZER,), FINALIZER_ADDED)
        if added is not None:
            return [added]

    runners = _with_deletes_in_flight(observed.runners, observed.in_flight_deletes)
    status = rs.status.model_copy(deep=True)
    events: list[EmitEvent] = []
    work: list[Action] = []
    waits: list[Requeue] = []

    # 2. terminal runners: record first, then reap
    newly_terminal = _record_terminal(status, runners, now)
    work.extend(DeleteRunner(r) for r in runners if r.state is RunnerState.TERMINAL)

    # 3. failure breaker
    events.extend(_run_breaker(status, rs.spec_hash, runners, newly_terminal, now, settings))
    paused_until = _paused_until(status, now)

    problem = observed.refused or _input_problem(rs)
    held = _hold_finished(
        status, runners, observed.seen_finished, _effective_patch(rs, problem), observed.accounted
    )
    proxy = observed.proxy
    if proxy is not None and not rs.deleting:
        # the runner proxy Secret (ARC §2.2 step 6), before any runner that names it
        work.extend(_proxy_secret(status, proxy, events, now, rs.generation))
    if rs.deleting:
        # 4. deleting set (L10)
        work.extend(_drain(runners, settings, waits, reason="RunnerSetDeleting"))
        if not runners and observed.phantoms == 0:
            if proxy is not None and proxy.existing is not None:
                work.append(DeleteProxySecret(proxy.name))
            released = remove_finalizers(rs.finalizers, OURS, RUNNERS_GONE)
            if released is not None:
                work.append(released)
    elif problem is not None:
        # 5. bad input: ignored
        reason, message = problem
        if _set_condition(status, ACCEPTED, "False", reason, message, now, rs.generation):
            events.append(EmitEvent(Note(reason, message, warning=True)))
    else:
        _set_condition(
            status, ACCEPTED, "True", "Accepted", _accepted_message(rs), now, rs.generation
        )
        status.last_patch_id = rs.patch_id
        # 6. spec change: replace idle and starting runners of an older spec
        outdated = [
            r for r in runners if r.live and not r.current_spec and r.state is not RunnerState.BUSY
        ]
        removals = _drain(outdated, settings, waits, reason="RunnerSpecChanged")
        work.extend(removals)
        # 7. scale up
        live = [r for r in runners if r.live]
        capacity = len(live) + observed.phantoms
        missing = rs.replicas - capacity - held
        if missing > 0 and paused_until is not None:
            pause = max(0.0, (paused_until - now).total_seconds())
            waits.append(Requeue(pause, Note(CREATION_PAUSED)))
        elif missing > 0:
            count = min(missing, settings.max_creates)
            work.extend(CreateRunner(rs.patch_id) for _ in range(count))
            if count < missing:
                waits.append(Requeue(0.5, Note("MoreToCreate")))
        # 8. scale down, on a force-state patch only
        excess = capacity - rs.replicas - len(removals)
        if rs.patch_id == 0 and excess > 0:
            removing = {a.runner.name for a in removals if isinstance(a, RemoveRunner)}
            candidates = scale_down_candidates([r for r in live if r.name not in removing])
            if candidates:
                work.append(ScaleDown(excess, candidates))

    # 9. status
    _fill_status(status, rs, runners, newly_terminal, now)
    actions: list[Action] = []
    wait = _status_wait(status, rs.status, observed.status_written_at, now, settings)
    if wait is None:
        reasons = tuple(r.failure_reason for r in newly_terminal)
        actions.append(WriteStatus(status, newly_terminal=reasons))
    elif wait > 0:
        actions.append(DeferStatus(status, wait))
    actions.extend(events)
    actions.extend(work)
    if waits:
        actions.append(min(waits, key=lambda wait: wait.after))
    return actions


def _proxy_secret(
    status: EphemeralRunnerSetStatus,
    proxy: ProxyState,
    events: list[EmitEvent],
    now: datetime,
    generation: int,
) -> list[Action]:
    """Create or rewrite the proxy Secret; a proxy that cannot be built is a condition and an
    Event (once per problem)."""
    if proxy.problem is not None:
        message = f"{proxy.problem.field}: {proxy.problem.message}"
        reason = proxy.problem.reason
        if _set_condition(status, PROXY_SECRET, "False", reason, message, now, generation):
            events.append(EmitEvent(Note(reason, message, warning=True)))
        return []
    _set_condition(status, PROXY_SECRET, "True", "Ready", f"Secret {proxy.name}", now, generation)
    if proxy.up_to_date or proxy.data is None:
        return []
    return [EnsureProxySecret(proxy.name, proxy.data, proxy.existing is not None)]


# ------------------------------------------------------------------------------------ choosing


def scale_down_candidates(runners: list[RunnerView]) -> tuple[RunnerView, ...]:
    """L3's order: starting runners whose registration exists (runner id known, no JIT request
    in flight), then idle runners; oldest first within each. Never busy, never with a job or a
    job completion, never with a JIT request in flight."""
    eligible = [r for r in runners if scale_down_ok(r)]

    def rank(runner: RunnerView) -> tuple[int, datetime, str]:
        group = 0 if runner.state is RunnerState.STARTING else 1
        return group, runner.created or NEVER, runner.name

    return tuple(sorted(eligible, key=rank))


def scale_down_ok(runner: RunnerView) -> bool:
    """May be removed by a scale-down (L3): idle, or starting with its registration known;
    never with a job, a job completion or a JIT request in flight."""
    if runner.has_job or runner.job_completed or runner.jit_in_flight:
        return False
    if runner.state is RunnerState.IDLE:
        return True
    return runner.state is RunnerState.STARTING and runner.registration_known


def removable_now(runner: RunnerView) -> bool:
    """May be removed when the set is deleted or its spec changed: idle, or starting with no
    JIT request in flight (its registration removed by id, or looked up by name)."""
    if runner.has_job or runner.job_completed or runner.jit_in_flight:
        return False
    return runner.state in (RunnerState.IDLE, RunnerState.STARTING)


def _drain(
    runners: list[RunnerView], settings: PlanSettings, waits: list[Requeue], *, reason: str
) -> list[Action]:
    """Remove every idle or starting runner now; wait for the rest (busy, JIT in flight)."""
    removals: list[Action] = []
    for runner in runners:
        if runner.state is RunnerState.TERMINAL or runner.state is RunnerState.DELETING:
            continue
        if removable_now(runner):
            removals.append(RemoveRunner(runner, Note(reason)))
        elif runner.jit_in_flight:
            waits.append(Requeue(settings.jit_wait_seconds, Note("JitRequestInFlight")))
        else:
            waits.append(Requeue(settings.busy_recheck_seconds, Note("WaitingForBusyRunners")))
    return removals


def _with_deletes_in_flight(
    runners: tuple[RunnerView, ...], deleting: frozenset[str]
) -> list[RunnerView]:
    """Runners this process removed count as being deleted, whatever the cache still says."""
    if not deleting:
        return list(runners)
    return [
        replace(r, state=RunnerState.DELETING) if r.name in deleting and r.live else r
        for r in runners
    ]


# ----------------------------------------------------------------------------- input checks


def _input_problem(rs: RunnerSetView) -> tuple[str, str] | None:
    """Why the desired state cannot be acted on (reason, message), or None. Messages do not
    name the patch id: the listener repeats a patch after every message batch, and the same
    problem must not be reported (written, and an Event) again for each."""
    if not rs.replicas_valid or rs.replicas < 0:
        return "InvalidReplicas", "spec.replicas must be 0 or more"
    if rs.max_runners is not None and rs.replicas > rs.max_runners:
        return (
            "ReplicasAboveMaximum",
            f"spec.replicas {rs.replicas} is above the scale set's maxRunners {rs.max_runners}",
        )
    if not rs.patch_id_valid or rs.patch_id < 0:
        return "InvalidPatchID", "spec.patchID must be 0 or more"
    last = rs.status.last_patch_id
    if rs.patch_id > 0 and last is not None and last > 0 and rs.patch_id < last:
        return (
            "PatchIDWentBackwards",
            f"spec.patchID is below the last accepted patch {last}; "
            "ignored (is a second listener writing this set?)",
        )
    return None


def _accepted_message(rs: RunnerSetView) -> str:
    """What the set was asked for: the count (a new patch id with the same count changes
    nothing the set does, so it changes nothing here either)."""
    return f"replicas {rs.replicas}"


def _effective_patch(rs: RunnerSetView, problem: tuple[str, str] | None) -> int:
    if problem is None:
        return rs.patch_id
    return rs.status.last_patch_id or 0


# ------------------------------------------------------------------------ finished runners


def _hold_finished(
    status: EphemeralRunnerSetStatus,
    runners: list[RunnerView],
    seen_finished: frozenset[str],
    patch_id: int,
    accounted: Mapping[str, int],
) -> int:
    """Update ``status.finishedRunners`` and return the slots held by finished runners that no
    longer count as live: finished under ``patch_id``, and now terminal, deleting or gone.

    A runner is entered with the patch id current when it is first seen finished; the entry
    lives while the runner is visible or while the patch id has not moved on. Patch id 0 holds
    nothing: it states the exact count (the listener sends it on every empty poll while idle at
    minRunners, so it does not "move on" — a slot held under it was never given back), and a
    runner first seen finished under it keeps its entry only while it is visible (so a later
    positive patch does not hold it either).

    A runner whose job completion record names the listener's patch that accounts for it
    (``patchId``, our listener's) holds nothing once the set shows that patch or a later one:
    that count already left its job out. Without this, a runner seen finishing under that very
    patch held its slot until the listener's next patch — the next message or, with nothing to
    say, the end of GitHub's 50 s long poll — while a queued job waited for it.
    """
    present = {r.name: r for r in runners}
    counted = dict(accounted)
    counted.update(
        (r.name, r.completion_patch_id) for r in runners if r.completion_patch_id is not None
    )
    entries = {entry.name: entry.patch_id for entry in status.finished_runners}
    for runner in runners:
        if runner.finished:
            entries.setdefault(runner.name, patch_id)
    for name in seen_finished:
        entries.setdefault(name, patch_id)
    if patch_id > 0:
        entries = {
            name: pid for name, pid in entries.items() if not 0 < counted.get(name, 0) <= patch_id
        }
    holding = patch_id != 0
    kept = {
        name: pid
        for name, pid in entries.items()
        if name in present or (holding and pid == patch_id)
    }
    status.finished_runners = [
        FinishedRunner(name=name, patch_id=pid) for name, pid in sorted(kept.items())
    ]
    if not holding:
        return 0
    return sum(
        1
        for name, pid in kept.items()
        if pid == patch_id and (name not in present or not present[name].live)
    )


# ----------------------------------------------------------------- terminal runners, breaker


def _record_terminal(
    status: EphemeralRunnerSetStatus, runners: list[RunnerView], now: datetime
) -> list[RunnerView]:
    """Count newly terminal runners by reason; returns them, oldest first."""
    recorded = set(status.recorded_terminal_runners)
    newly = sorted(
        (r for r in runners if r.state is RunnerState.TERMINAL and r.name not in recorded),
        key=lambda r: (r.created or now, r.name),
    )
    reasons = Counter(status.terminal_reasons)
    for runner in newly:
        reasons[runner.failure_reason] += 1
    status.terminal_reasons = dict(sorted(reasons.items()))
    present = {r.name for r in runners}
    status.recorded_terminal_runners = sorted(
        (recorded & present) | {r.name for r in runners if r.state is RunnerState.TERMINAL}
    )
    return newly


def _run_breaker(
    status: EphemeralRunnerSetStatus,
    spec_hash: str,
    runners: list[RunnerView],
    newly_terminal: list[RunnerView],
    now: datetime,
    settings: PlanSettings,
) -> list[EmitEvent]:
    """Advance the failure streak with this pass's terminal runners; trip or reset it.

    The streak belongs to the runner spec its runners were built from: a new runner spec (a
    template the user fixed) ends it, and a runner of an older spec that fails says nothing
    about the current one, so it does not count."""
    events: list[EmitEvent] = []
    streak = status.failure_streak
    resumed = "a runner started: creating runners again"
    if streak is not None and streak.runner_spec and streak.runner_spec != spec_hash:
        streak = None
        resumed = "the runner spec changed: creating runners again"
    grew = False
    for runner in newly_terminal:
        if runner.phase == RunnerPhase.SUCCEEDED:
            streak = None
            continue
        if not runner.current_spec:
            continue
        reason = runner.failure_reason
        if streak is not None and streak.reason == reason:
            streak = streak.model_copy(update={"count": streak.count + 1})
        else:
            streak = FailureStreak(reason=reason, count=1, since=now, runner_spec=spec_hash)
        grew = True
    if streak is not None and _healthy_since(runners, streak.since):
        streak = None
    if streak is None:
        if status.failure_streak is not None and status.failure_streak.paused_until is not None:
            events.append(EmitEvent(Note("CreationResumed", resumed)))
        status.failure_streak = None
        return events
    due = streak.paused_until is None or streak.paused_until <= now
    if grew and streak.count >= settings.breaker_threshold and due:
        backoff = settings.breaker_backoff[min(streak.trips, len(settings.breaker_backoff) - 1)]
        streak = streak.model_copy(
            update={"trips": streak.trips + 1, "paused_until": now + timedelta(seconds=backoff)}
        )
        events.append(
            EmitEvent(
                Note(
                    CREATION_PAUSED,
                    f"{streak.count} runners in a row ended with {streak.reason}: "
                    f"no runner is created for {backoff:.0f}s",
                    warning=True,
                )
            )
        )
    status.failure_streak = streak
    return events


def _healthy_since(runners: list[RunnerView], since: datetime | None) -> bool:
    """A runner of the current spec, created after the streak began, reached idle or busy."""
    return any(
        r.current_spec
        and r.state in (RunnerState.IDLE, RunnerState.BUSY)
        and (since is None or (r.created is not None and r.created >= since))
        for r in runners
    )


def _paused_until(status: EphemeralRunnerSetStatus, now: datetime) -> datetime | None:
    streak = status.failure_streak
    if streak is None or streak.paused_until is None or streak.paused_until <= now:
        return None
    return streak.paused_until


# ---------------------------------------------------------------------------------- status

SHOWN: tuple[tuple[str, ...], ...] = tuple(
    tuple(column["jsonPath"].removeprefix(".status.").split("."))
    for column in PRINTER_COLUMNS["EphemeralRunnerSet"]
    if column["jsonPath"].startswith(".status.")
)
"""The status fields ``kubectl get ephemeralrunnersets`` prints (``-o wide`` included)."""


def _shown(raw: dict[str, object]) -> tuple[object, ...]:
    values: list[object] = []
    for path in SHOWN:
        value: object = raw
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        values.append(value or None)  # absent, null, 0 and "" print alike
    return tuple(values)


def _status_wait(
    new: EphemeralRunnerSetStatus,
    old: EphemeralRunnerSetStatus,
    written_at: datetime | None,
    now: datetime,
    settings: PlanSettings,
) -> float | None:
    """Whether ``new`` is worth a write over ``old`` (the module docstring, step 9), and when.
    ``None``: write now (a condition's status or reason or memory a restart must not lose
    differs, or a printer column or a condition message does and the previous write is
    ``status_interval`` or more ago, or unknown); ``0``: nothing worth a write; ``> 0``: only
    columns or messages moved since a recent write — write in that many seconds."""
    if same_json(new, old):
        return 0.0
    if _durable_change(new, old):
        return None
    same_conditions = [c.model_dump() for c in new.conditions] == [
        c.model_dump() for c in old.conditions
    ]
    if same_conditions and _shown(to_json(new)) == _shown(to_json(old)):
        return 0.0
    if written_at is None:
        return None
    wait = settings.status_interval - (now - written_at).total_seconds()
    return min(wait, settings.status_interval) if wait > 0 else None


def _durable_change(new: EphemeralRunnerSetStatus, old: EphemeralRunnerSetStatus) -> bool:
    """A condition's type, status or reason, or memory a restart must not lose, differs (never
    paced; a condition whose message alone changed, such as the count ``ReplicasAccepted``
    names, waits like a column)."""
    if _condition_states(new) != _condition_states(old):
        return True
    if new.terminal_reasons != old.terminal_reasons or new.failure_streak != old.failure_streak:
        return True
    if new.outdated_runner_spec != old.outdated_runner_spec:
        return True
    if set(new.recorded_terminal_runners) - set(old.recorded_terminal_runners):
        return True
    entered = {(f.name, f.patch_id) for f in old.finished_runners}
    return any((f.name, f.patch_id) not in entered for f in new.finished_runners)


def _condition_states(status: EphemeralRunnerSetStatus) -> list[tuple[str, str, str]]:
    return [(c.type, c.status, c.reason) for c in status.conditions]


def _fill_status(
    status: EphemeralRunnerSetStatus,
    rs: RunnerSetView,
    runners: list[RunnerView],
    newly_terminal: list[RunnerView],
    now: datetime,
) -> None:
    """Counts, phase and conditions from this pass's view."""
    tally = Counter(r.state for r in runners)
    status.starting_ephemeral_runners = tally[RunnerState.STARTING]
    status.idle_ephemeral_runners = tally[RunnerState.IDLE]
    status.busy_ephemeral_runners = tally[RunnerState.BUSY]
    status.terminal_ephemeral_runners = tally[RunnerState.TERMINAL]
    status.deleting_ephemeral_runners = tally[RunnerState.DELETING]
    by_phase = Counter(r.phase for r in runners if r.state is not RunnerState.DELETING)
    status.pending_ephemeral_runners = by_phase[""] + by_phase[RunnerPhase.PENDING]
    status.running_ephemeral_runners = by_phase[RunnerPhase.RUNNING]
    status.failed_ephemeral_runners = by_phase[RunnerPhase.FAILED]
    status.current_replicas = (
        status.pending_ephemeral_runners
        + status.running_ephemeral_runners
        + status.failed_ephemeral_runners
    )
    outdated_now = any(
        r.phase == RunnerPhase.OUTDATED and r.state is not RunnerState.DELETING for r in runners
    )
    still_outdated = (
        rs.status.phase == RunnerSetPhase.OUTDATED
        and rs.status.outdated_runner_spec == rs.spec_hash
    )
    if outdated_now or still_outdated:
        status.phase = RunnerSetPhase.OUTDATED
        status.outdated_runner_spec = rs.spec_hash
    else:
        status.phase = RunnerSetPhase.RUNNING
        status.outdated_runner_spec = None
    streak = status.failure_streak
    paused = _paused_until(status, now)
    if paused is not None and streak is not None:
        _set_condition(
            status,
            CREATION_PAUSED,
            "True",
            streak.reason,
            f"{streak.count} runners in a row ended with {streak.reason}; no runner is created "
            f"before {paused.isoformat()}",
            now,
            rs.generation,
        )
    elif any(c.type == CREATION_PAUSED for c in status.conditions):
        _set_condition(
            status, CREATION_PAUSED, "False", "Resumed", "creating runners", now, rs.generation
        )
    if newly_terminal:
        last = newly_terminal[-1]
        summary = ", ".join(
            f"{reason} x{count}" for reason, count in status.terminal_reasons.items()
        )
        _set_condition(
            status,
            TERMINAL_RUNNERS,
            "True",
            last.failure_reason,
            f"last: {last.name} ended {last.phase} ({last.failure_reason}); so far: {summary}",
            now,
            rs.generation,
        )


def _set_condition(
    status: EphemeralRunnerSetStatus,
    type_: str,
    value: str,
    reason: str,
    message: str,
    now: datetime,
    generation: int,
) -> bool:
    """Set one condition; ``lastTransitionTime`` moves only when the status value does.
    Returns whether anything about it changed."""
    existing = next((c for c in status.conditions if c.type == type_), None)
    if existing is not None and (existing.status, existing.reason, existing.message) == (
        value,
        reason,
        message,
    ):
        return False
    moved = existing is None or existing.status != value
    condition = Condition(
        type=type_,
        status=value,
        reason=reason,
        message=message,
        last_transition_time=now if moved or existing is None else existing.last_transition_time,
        observed_generation=generation,
    )
    status.conditions = [c for c in status.conditions if c.type != type_] + [condition]
    status.conditions.sort(key=lambda c: c.type)
    return True
