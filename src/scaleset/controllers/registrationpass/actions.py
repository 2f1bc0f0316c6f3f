"""What the registration pass can decide (``plan``): small frozen values; ``apply`` makes the
calls.

A deletion carries the runner as it was read (``RunnerTarget``: uid and resourceVersion, the
preconditions of its writes). Like every controller's action, each carries its ``note``: the
``Note`` that ``announce`` counts by reason (``scaleset_registration_pass_decisions_total``),
posts as an Event and logs once the pass has carried the action out (for
``DeletionCapReached``: what it left). The pass's own memory (``NoteOffline``,
``ForgetOffline``) carries none.
"""

from __future__ import annotations

from dataclasses import dataclass

from scaleset.controllers.decisions import Note
from scaleset.controllers.registrationpass.observed import RunnerView


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


def _unknown(runner: RunnerTarget) -> str:
    return f"GitHub no longer knows runner id {runner.runner_id} (RunnerNotFound) and "


@dataclass(frozen=True)
class DeleteMissing:
    """Rule 1: its registration is gone; delete the EphemeralRunner (the set replaces it)."""

    runner: RunnerTarget
    reason: str = "RegistrationMissing"

    @property
    def note(self) -> Note:
        text = "it has no job: deleted, the set replaces it"
        return Note(self.reason, _unknown(self.runner) + text, warning=True)


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

    @property
    def note(self) -> Note:
        text = (
            f"the JobCompleted of its job {self.job_id!r} never arrived: job completion "
            "recorded (result unknown); the runner is ended after the grace period unless it "
            "exits by itself"
        )
        return Note(self.reason, _unknown(self.runner) + text, warning=True)


@dataclass(frozen=True)
class ReplaceOffline:
    """Rule 2: offline past the bound while its pod runs; replace it."""

    runner: RunnerTarget
    offline_seconds: float
    reason: str = "RunnerOffline"

    @property
    def note(self) -> Note:
        text = (
            f"GitHub shows the runner offline for {self.offline_seconds:.0f}s while its pod "
            "runs and it has no job: replaced"
        )
        return Note(self.reason, text, warning=True)


@dataclass(frozen=True)
class Retire:
    """Rule 3: an idle runner older than the maximum age; retire and replace it."""

    runner: RunnerTarget
    age_seconds: float
    max_age: float
    """The maximum runner age in force (seconds)."""
    reason: str = "RunnerRetired"

    @property
    def note(self) -> Note:
        return Note(
            self.reason,
            f"idle runner {self.age_seconds:.0f}s old, past the maximum runner age "
            f"{self.max_age:.0f}s: retired, the set replaces it",
        )


@dataclass(frozen=True)
class RemoveOrphan:
    """Rule 4: a registration of our scale set with no EphemeralRunner; remove it."""

    runner_id: int
    name: str
    scale_set_id: int
    """Ours, which the Actions service confirmed the registration belongs to."""
    reason: str = "OrphanRegistration"
    recorded_id: int = 0
    """When a runner of that name exists: the (missing) runner id it records instead."""

    @property
    def note(self) -> Note:
        why = "no EphemeralRunner has that name"
        if self.recorded_id:
            why = (
                f"the EphemeralRunner of that name records runner id {self.recorded_id}, "
                "which GitHub no longer has: no runner uses this registration"
            )
        return Note(
            self.reason,
            f"removed registration {self.name} (runner id {self.runner_id}) of scale set "
            f"{self.scale_set_id}: {why}",
        )


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
    cap: int
    """The per-pass deletion cap in force."""
    reason: str = "DeletionCapReached"

    @property
    def note(self) -> Note:
        text = f"per-pass deletion cap {self.cap} reached; left for the next pass: "
        return Note(self.reason, text + ", ".join(self.deferred), warning=True)


Deletion = DeleteMissing | ReplaceOffline | Retire | RemoveOrphan
Capped = Deletion | InferCompletion
"""What counts against ``max_deletions``."""
Action = Capped | NoteOffline | ForgetOffline | DeletionCapReached
