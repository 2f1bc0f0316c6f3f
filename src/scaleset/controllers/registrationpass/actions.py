"""What the registration pass can decide (``plan``) and what it says of each decision once
carried out (``note_of``): small frozen values; ``apply`` makes the calls.

A deletion carries the runner as it was read (``RunnerTarget``: uid and resourceVersion, the
preconditions of its writes); each action's ``reason`` is the Event reason and the label of
``scaleset_registration_pass_decisions_total{reason}``; ``note_of`` turns an action into the
``Note`` that ``announce`` counts, posts and logs (``NoteOffline`` and ``ForgetOffline`` are the
pass's own memory and say nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from scaleset.controllers.decisions import Note
from scaleset.controllers.registrationpass.observed import RunnerView, Settings


@dataclass(frozen=True)
class RunnerTarget:
    """An EphemeralRunner as read: its deletion carries this uid and resourceVersion."""

    name: str
    uid: str
    resource_version: str
    runner_id: int

    @classmethod
    def of(cls, runner: RunnerView) -> RunnerTarget:
        return cls(runner.name, runner.uid, runner.resource_version, runner.runner_id)


@dataclass(frozen=True)
class DeleteMissing:
    """Rule 1: its registration is gone; delete the EphemeralRunner (the set replaces it)."""

    runner: RunnerTarget
    reason: str = "RegistrationMissing"


@dataclass(frozen=True)
class InferCompletion:
    """Rule 1, a runner with a job: its registration is gone and its JobCompleted never came;
    write ``status.jobCompletion`` from its own job fields (not a deletion: L4 then ends it)."""

    runner: RunnerTarget
    job_id: str
    workflow_run_id: int
    finish_time: float
    """The pass's clock (unix seconds) when it began: GitHub's finish time is unknown."""
    reason: str = "JobCompletionInferred"


@dataclass(frozen=True)
class ReplaceOffline:
    """Rule 2: offline past the bound while its pod runs; replace it."""

    runner: RunnerTarget
    offline_seconds: float
    reason: str = "RunnerOffline"


@dataclass(frozen=True)
class Retire:
    """Rule 3: an idle runner older than the maximum age; retire and replace it."""

    runner: RunnerTarget
    age_seconds: float
    reason: str = "RunnerRetired"


@dataclass(frozen=True)
class RemoveOrphan:
    """Rule 4: a registration of our scale set with no EphemeralRunner; remove it."""

    runner_id: int
    name: str
    reason: str = "OrphanRegistration"
    recorded_id: int = 0
    """When a runner of that name exists: the (missing) runner id it records instead."""


@dataclass(frozen=True)
class NoteOffline:
    """Remember that a pass first saw this runner offline now (no write)."""

    uid: str
    since: float


@dataclass(frozen=True)
class ForgetOffline:
    uid: str


@dataclass(frozen=True)
class DeletionCapReached:
    """More deletions were due than the cap allows; these wait for the next pass."""

    deferred: tuple[str, ...]
    reason: str = "DeletionCapReached"


Deletion = DeleteMissing | ReplaceOffline | Retire | RemoveOrphan
Capped = Deletion | InferCompletion
"""What counts against ``max_deletions``."""
Action = Capped | NoteOffline | ForgetOffline | DeletionCapReached


def note_of(action: Action, scale_set_id: int, settings: Settings) -> Note | None:
    """What a pass says of an action it has carried out (or, for ``DeletionCapReached``, of
    what it left): the Event on the runner (on the set for a registration or the cap), and the
    decision counted by its reason. None for the pass's own memory (no write to tell of)."""
    if isinstance(action, NoteOffline | ForgetOffline):
        return None
    if isinstance(action, DeletionCapReached):
        left = ", ".join(action.deferred)
        text = f"per-pass deletion cap {settings.max_deletions} reached; left for the next pass: "
        return Note(action.reason, text + left, warning=True)
    if isinstance(action, RemoveOrphan):
        why = "no EphemeralRunner has that name"
        if action.recorded_id:
            why = (
                f"the EphemeralRunner of that name records runner id {action.recorded_id}, "
                "which GitHub no longer has: no runner uses this registration"
            )
        return Note(
            action.reason,
            f"removed registration {action.name} (runner id {action.runner_id}) of scale set "
            f"{scale_set_id}: {why}",
        )
    if isinstance(action, InferCompletion):
        text = (
            f"GitHub no longer knows runner id {action.runner.runner_id} (RunnerNotFound) and "
            f"the JobCompleted of its job {action.job_id!r} never arrived: job completion "
            "recorded (result unknown); the runner is ended after the grace period unless it "
            "exits by itself"
        )
        return Note(action.reason, text, warning=True)
    if isinstance(action, DeleteMissing):
        text = (
            f"GitHub no longer knows runner id {action.runner.runner_id} (RunnerNotFound) and "
            "it has no job: deleted, the set replaces it"
        )
        return Note(action.reason, text, warning=True)
    if isinstance(action, ReplaceOffline):
        text = (
            f"GitHub shows the runner offline for {action.offline_seconds:.0f}s while its pod "
            "runs and it has no job: replaced"
        )
        return Note(action.reason, text, warning=True)
    max_age = settings.max_runner_age or 0.0
    return Note(
        action.reason,
        f"idle runner {action.age_seconds:.0f}s old, past the maximum runner age "
        f"{max_age:.0f}s: retired, the set replaces it",
    )
