"""Carries out one capped action of the registration pass: one GitHub call and/or one API call.

- A runner whose registration is missing: delete the EphemeralRunner with the uid and
  resourceVersion the pass read (a runner that changed since — the listener promoted it, say —
  is a Conflict and is left for the next pass; L2). Its finalizer's registration removal then
  answers RunnerNotFound, which counts as removed.
- A runner replaced (offline) or retired (age): re-read it (fresh GET), give up if it now has a
  job or is being deleted, remove its registration first (JobStillRunning: GitHub says it is
  busy — keep it; RunnerNotFound: already gone), then delete it with the fresh resourceVersion.
- A registration without an EphemeralRunner: remove it (JobStillRunning: keep; RunnerNotFound:
  already gone).
- A runner with a job whose registration is missing: merge-patch ``status.jobCompletion``
  carrying the resourceVersion the pass read (L2). A Conflict: read it again and decide again —
  still the same runner (uid, runner id), not being deleted, not terminal, the same job fields
  and still no completion (the listener's real JobCompleted may have come meanwhile) — then
  write with the fresh resourceVersion; at most ``CONFLICT_ATTEMPTS`` tries, then it is left
  for the next pass.

Returns whether the action happened; any other error propagates and ends the pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scaleset.api import EphemeralRunner, RunnerState, classify, format_kube_time
from scaleset.controllers.registrationpass.actions import (
    Capped,
    DeleteMissing,
    InferCompletion,
    RemoveOrphan,
    ReplaceOffline,
    Retire,
    RunnerTarget,
)
from scaleset.github import ActionsClient, JobStillRunning, RunnerNotFound
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER

CONFLICT_ATTEMPTS = 5
"""Tries of an inferred completion's guarded write (like client-go's ``RetryOnConflict``)."""


@dataclass(frozen=True)
class DeletionOutcome:
    """What one deletion did: ``done`` or why not (``skipped``)."""

    done: bool
    skipped: str = ""


@dataclass
class Applier:
    kube: KubeClient
    namespace: str

    async def apply(self, deletion: Capped, github: ActionsClient) -> DeletionOutcome:
        if isinstance(deletion, InferCompletion):
            return await self._infer(deletion)
        if isinstance(deletion, RemoveOrphan):
            return await self._remove_registration(github, deletion.runner_id)
        if isinstance(deletion, DeleteMissing):
            return await self._delete_runner(deletion.runner, deletion.runner.resource_version)
        assert isinstance(deletion, ReplaceOffline | Retire)
        return await self._replace(deletion.runner, github)

    async def _replace(self, target: RunnerTarget, github: ActionsClient) -> DeletionOutcome:
        try:
            fresh = await self.kube.get(EPHEMERAL_RUNNER, ObjectKey(self.namespace, target.name))
        except NotFound:
            return DeletionOutcome(False, "gone")
        runner = EphemeralRunner.model_validate(fresh.raw)
        if fresh.uid != target.uid or runner.status.runner_id != target.runner_id:
            return DeletionOutcome(False, "replaced since the pass read it")
        if classify(runner) not in (RunnerState.IDLE, RunnerState.STARTING):
            return DeletionOutcome(False, f"now {classify(runner)}")
        removed = await self._remove_registration(github, target.runner_id)
        if not removed.done and removed.skipped != "already removed":
            return removed
        return await self._delete_runner(target, fresh.resource_version)

    async def _remove_registration(self, github: ActionsClient, runner_id: int) -> DeletionOutcome:
        try:
            await github.remove_runner(runner_id)
        except JobStillRunning:
            return DeletionOutcome(False, "GitHub says it runs a job")
        except RunnerNotFound:
            return DeletionOutcome(False, "already removed")
        return DeletionOutcome(True)

    async def _delete_runner(self, target: RunnerTarget, resource_version: str) -> DeletionOutcome:
        try:
            await self.kube.delete(
                EPHEMERAL_RUNNER,
                ObjectKey(self.namespace, target.name),
                uid=target.uid,
                resource_version=resource_version,
            )
        except NotFound:
            return DeletionOutcome(False, "gone")
        except Conflict:
            return DeletionOutcome(False, "changed since the pass read it")
        return DeletionOutcome(True)

    async def _infer(self, action: InferCompletion) -> DeletionOutcome:
        target = action.runner
        key = ObjectKey(self.namespace, target.name)
        body = {"jobCompletion": completion_of(action)}
        resource_version = target.resource_version
        for attempt in range(CONFLICT_ATTEMPTS):
            if attempt:
                try:
                    fresh = await self.kube.get(EPHEMERAL_RUNNER, key)
                except NotFound:
                    return DeletionOutcome(False, "gone")
                why = _no_longer_due(fresh, action)
                if why:
                    return DeletionOutcome(False, why)
                resource_version = fresh.resource_version
            try:
                await self.kube.patch_merge(
                    EPHEMERAL_RUNNER,
                    key,
                    {"metadata": {"resourceVersion": resource_version}, "status": body},
                    status=True,
                )
            except NotFound:
                return DeletionOutcome(False, "gone")
            except Conflict:
                continue
            return DeletionOutcome(True)
        return DeletionOutcome(False, f"changed on each of {CONFLICT_ATTEMPTS} tries; next pass")


def completion_of(action: InferCompletion) -> dict[str, Any]:
    """``status.jobCompletion`` as the listener writes it, from the runner's own job fields.
    No ``result``: GitHub's never reached us, and GitHub has no "unknown" result (read, it is
    "", which the EphemeralRunner controller reports as "no result"). Empty strings are left
    out, not sent: the kube-apiserver of the real-backend tests answers a status merge patch
    carrying ``""`` in these string fields 422 ("Invalid value: \"null\": must be of type
    string"); the embedded backend takes it."""
    completion: dict[str, Any] = {
        "runnerId": action.runner.runner_id,
        "runnerName": action.runner.name,
        "workflowRunId": action.workflow_run_id,
        "finishTime": format_kube_time(datetime.fromtimestamp(action.finish_time, UTC)),
    }
    if action.job_id:
        completion["jobId"] = action.job_id
    return completion


def _no_longer_due(fresh: KubeObject, action: InferCompletion) -> str:
    """Why the runner as read now no longer gets the inferred completion ("": it still does)."""
    runner = EphemeralRunner.model_validate(fresh.raw)
    status = runner.status
    if fresh.uid != action.runner.uid or status.runner_id != action.runner.runner_id:
        return "replaced since the pass read it"
    if classify(runner) in (RunnerState.DELETING, RunnerState.TERMINAL):
        return f"now {classify(runner)}"
    if status.job_completion is not None:
        return "its job completion arrived meanwhile"
    if not status.has_job or (status.job_id, status.workflow_run_id) != (
        action.job_id,
        action.workflow_run_id,
    ):
        return "its job fields changed"
    return ""
