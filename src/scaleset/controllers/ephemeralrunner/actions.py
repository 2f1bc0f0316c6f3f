"""The actions ``plan`` can decide on: small frozen values, one API call each (see ``apply``).

Every action carries ``Note``s: the stable ``reason`` is the counter label
(``scaleset_ephemeral_runner_decisions_total{reason}``) and, when the note has a message, the
reason of the Kubernetes Event posted on the runner (L9). ``Wait`` ends a plan: when to look
again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scaleset.controllers.decisions import AddFinalizers as AddFinalizers
from scaleset.controllers.decisions import Note as Note
from scaleset.controllers.decisions import RemoveFinalizers as RemoveFinalizers
from scaleset.controllers.decisions import Report as Report
from scaleset.controllers.decisions import Wait as Wait
from scaleset.controllers.decisions import WriteStatus as WriteStatus

FINALIZERS_ADDED = Note("FinalizersAdded")
"""The note of the runner's ``AddFinalizers`` (its two finalizers)."""
FINALIZERS_REMOVED = Note("FinalizersRemoved")
"""The note of the runner's ``RemoveFinalizers``."""


@dataclass(frozen=True)
class RegisterRunner:
    """generatejitconfig for the runner's name, then the JIT Secret (named like the runner)."""

    note: Note = Note("RunnerRegistered")


@dataclass(frozen=True)
class CreatePod:
    """The runner pod from the template, mounting the JIT Secret."""

    note: Note = Note("PodCreated")


@dataclass(frozen=True)
class DeletePod:
    """Delete the runner pod (uid precondition). ``grace_seconds`` overrides the pod's own
    termination grace period (``None``: the pod's). ``resource_version``, when set, is a
    precondition too: a pod that changed since it was read is not deleted (Conflict: read
    again, decide again) — a deletion decided because the runner never started must not act
    on a pod whose runner started in the meantime (L5)."""

    uid: str
    note: Note = Note("PodDeleted")
    grace_seconds: int | None = None
    resource_version: str = ""


@dataclass(frozen=True)
class AnnotatePod:
    """One merge patch of the runner pod's ``metadata.annotations``: the job the runner took
    (``keys.JOB_ANNOTATIONS``). Idempotent (the same values each time), so it needs no
    precondition; a pod gone meanwhile is left alone, never created."""

    annotations: Mapping[str, str] = field(hash=False)
    note: Note = Note("PodJobAnnotated")


@dataclass(frozen=True)
class DeleteSecret:
    """Delete the JIT Secret (uid precondition)."""

    uid: str
    note: Note = Note("JitSecretDeleted")


@dataclass(frozen=True)
class RemoveRegistration:
    """Remove the runner's GitHub registration; ``runner_id`` 0: look it up by name first.
    RunnerNotFound counts as removed; JobStillRunning is reported back."""

    runner_id: int
    note: Note = Note("RegistrationRemoved")


@dataclass(frozen=True)
class DeleteRunner:
    """Delete the EphemeralRunner; its finalizers then clean up and the EphemeralRunnerSet
    creates a fresh runner if one is still wanted.

    ``guarded``: with the resourceVersion that was read as a precondition too, so a runner
    changed since (a Running written meanwhile) is not deleted on a stale decision. Unguarded
    (the uid precondition only) where the decision rests on the runner container's exit, which
    no write to the runner can undo: the listener's JobCompleted, which can land as the runner
    exits at the end of its job, then costs no 409 and second DELETE."""

    note: Note
    guarded: bool = True


@dataclass(frozen=True)
class DeleteHookPods:
    """Kubernetes container mode: delete the pods and Secrets labelled ``runner-pod=<name>``."""

    note: Note = Note("HookResourcesDeleted")


Effect = (
    AddFinalizers
    | WriteStatus
    | RegisterRunner
    | CreatePod
    | AnnotatePod
    | DeletePod
    | DeleteSecret
    | RemoveRegistration
    | DeleteRunner
    | DeleteHookPods
    | RemoveFinalizers
)
"""An action that calls an API."""

GITHUB_CALLS = (RegisterRunner, RemoveRegistration)
"""The effects that call GitHub (and may wait out its retries); the others call Kubernetes."""

Action = Effect | Report | Wait
