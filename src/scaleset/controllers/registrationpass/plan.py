"""The registration pass's decision table (lifecycle.md L6, ARC #4395/#4396, #4100): pure.

Read top to bottom; a runner gets the first rule that holds.

For each EphemeralRunner of the set, skipping runners being deleted, terminal runners (the set
reaps them) and names without our prefix (``<set>-runner-``; not ours to judge):

1. **RegistrationMissing** — it has a runner id (so it was registered before the pass began),
   that id answered RunnerNotFound, and it has no live job → delete the EphemeralRunner.
   **JobCompletionInferred** — the same, but it has a job recorded (JobStarted landed: job
   fields) and no ``jobCompletion``: its JobCompleted was lost (GitHub drops the events queued
   in an expired message session). A registration that is gone runs no job, so the job is over;
   the pass still never deletes a runner with a job: it records the completion the listener
   would have, from the runner's own job fields (no result: unknown), and the EphemeralRunner
   controller's L4 path ends the runner after the grace period. A runner with a live job and no
   job fields (phase Running only) or with a completion already is left alone.
2. **RunnerOffline** — its registration is listed offline and not busy, it has no job, and its
   pod runs: the first pass that sees this remembers the time; a pass at least
   ``offline_bound`` later replaces the runner. Seen online again → forgotten.
3. **RunnerRetired** — ``max_runner_age`` is set, the runner is idle (never busy, never with a
   job, never listed busy) and older than that → retire and replace it.

Then each registration in GitHub's list with our prefix whose name is in neither read of our
runners:

4. **OrphanRegistration** — the Actions service confirmed it belongs to our scale set id (a
   second cluster's same-named scale set has another id) and it is not busy → remove it.
   The same for a registration whose name is a runner's that records **another** runner id,
   one GitHub no longer has (rule 1 ends that runner): nothing uses it — a runner records one
   registration, and its pod runs that one's JIT config — unless a process is connected with
   it, so it must also be offline. Left alone, it would outlive the runner (whose deletion
   removes the id it records) with no runner to point at it.

Deletions and inferred completions run in that order and stop at ``max_deletions`` together (an
inferred completion is a deletion put off by the grace period; **DeletionCapReached** names what
was left for the next pass). Every deletion of a live runner asks GitHub first (``apply``).
"""

from __future__ import annotations

from collections.abc import Mapping

from scaleset.api import RunnerState
from scaleset.controllers.registrationpass.actions import (
    Action,
    Capped,
    DeleteMissing,
    DeletionCapReached,
    ForgetOffline,
    InferCompletion,
    NoteOffline,
    RemoveOrphan,
    ReplaceOffline,
    Retire,
    RunnerTarget,
)
from scaleset.controllers.registrationpass.observed import Observed, Registration, RunnerView
from scaleset.controllers.registrationpass.settings import Settings


def plan(observed: Observed, settings: Settings) -> list[Action]:
    """The pass's actions: memory updates first, then deletions and inferred completions
    (capped)."""
    memory: list[Action] = []
    missing: list[Capped] = []
    recorded_missing = missing_ids_by_name(observed.runners, observed.missing)
    offline: list[Capped] = []
    retired: list[Capped] = []
    for runner in sorted(observed.runners, key=lambda r: r.name):
        if runner.state in (RunnerState.DELETING, RunnerState.TERMINAL):
            continue
        if not runner.name.startswith(observed.prefix):
            continue
        target = RunnerTarget.of(runner)
        if runner.runner_id and runner.runner_id in observed.missing:
            if not runner.live_job:
                missing.append(DeleteMissing(target))
            elif runner.has_job:
                missing.append(
                    InferCompletion(
                        target, runner.job_id, runner.workflow_run_id, finish_time=observed.now
                    )
                )
            continue
        registration = observed.registration(runner.runner_id) if runner.runner_id else None
        since = observed.offline_since.get(runner.uid)
        idle = not runner.live_job and (registration is None or not registration.busy)
        if (
            registration is not None
            and not registration.online
            and idle
            and runner.pod_running
            and runner.state in (RunnerState.IDLE, RunnerState.STARTING)
        ):
            if since is None:
                memory.append(NoteOffline(runner.uid, observed.now))
            elif observed.now - since >= settings.offline_bound:
                offline.append(ReplaceOffline(target, observed.now - since))
                continue
        elif since is not None:
            memory.append(ForgetOffline(runner.uid))
        age = None if runner.created is None else observed.now - runner.created
        if (
            settings.max_runner_age is not None
            and age is not None
            and age >= settings.max_runner_age
            and idle
            and runner.state is RunnerState.IDLE
        ):
            retired.append(Retire(target, age, settings.max_runner_age))
    known = {runner.name for runner in observed.runners} | observed.names_after
    orphans: list[Capped] = []
    for registration in sorted(observed.registrations, key=lambda r: r.id):
        ours = observed.scale_set_of.get(registration.id) == observed.scale_set_id
        if not registration.name.startswith(observed.prefix) or registration.busy or not ours:
            continue
        recorded = recorded_missing.get(registration.name, 0)
        if registration.name not in known:
            orphans.append(RemoveOrphan(registration.id, registration.name, observed.scale_set_id))
        elif recorded and recorded != registration.id and not registration.online:
            orphans.append(
                RemoveOrphan(
                    registration.id, registration.name, observed.scale_set_id, recorded_id=recorded
                )
            )
    due = [*missing, *orphans, *offline, *retired]
    actions: list[Action] = [*memory, *due[: settings.max_deletions]]
    if len(due) > settings.max_deletions:
        left = tuple(_name(d) for d in due[settings.max_deletions :])
        actions.append(DeletionCapReached(left, settings.max_deletions))
    return actions


def orphan_candidates(
    registrations: tuple[Registration, ...],
    prefix: str,
    known: frozenset[str],
    recorded_missing: Mapping[str, int] | None = None,
) -> list[int]:
    """Registration ids worth confirming with the Actions service (step 4 of ``observed``): no
    runner has their name, or the runner of their name records another id, a missing one."""
    recorded = recorded_missing or {}
    return [
        r.id
        for r in registrations
        if r.name.startswith(prefix) and (r.name not in known or recorded.get(r.name, r.id) != r.id)
    ]


def missing_ids_by_name(runners: tuple[RunnerView, ...], missing: frozenset[int]) -> dict[str, int]:
    """Runner name -> the runner id it records, for the runners (not being deleted, not
    terminal) whose id answered RunnerNotFound."""
    return {
        runner.name: runner.runner_id
        for runner in runners
        if runner.runner_id in missing
        and runner.state not in (RunnerState.DELETING, RunnerState.TERMINAL)
    }


def missing_candidates(runners: tuple[RunnerView, ...], listed: frozenset[int]) -> list[int]:
    """Runner ids registered before the pass that GitHub's list does not hold."""
    return [
        r.runner_id
        for r in runners
        if r.runner_id
        and r.runner_id not in listed
        and r.state not in (RunnerState.DELETING, RunnerState.TERMINAL)
    ]


def _name(deletion: Capped) -> str:
    if isinstance(deletion, RemoveOrphan):
        return f"registration {deletion.name} ({deletion.runner_id})"
    return deletion.runner.name
