"""Carries out one deletion of the registration pass: one GitHub call and/or one API call.

- A runner whose registration is missing: delete the EphemeralRunner with the uid and
  resourceVersion the pass read (a runner that changed since — the listener promoted it, say —
  is a Conflict and is left for the next pass; L2). Its finalizer's registration removal then
  answers RunnerNotFound, which counts as removed.
- A runner replaced (offline) or retired (age): re-read it (fresh GET), give up if it now has a
  job or is being deleted, remove its registration first (JobStillRunning: GitHub says it is
  busy — keep it; RunnerNotFound: already gone), then delete it with the fresh resourceVersion.
- A registration without an EphemeralRunner: remove it (JobStillRunning: keep; RunnerNotFound:
  already gone).

Returns whether the deletion happened; any other error propagates and ends the pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from scaleset.api import EphemeralRunner, RunnerState, classify
from scaleset.controllers.hygiene.plan import (
    DeleteMissing,
    Deletion,
    RemoveOrphan,
    ReplaceOffline,
    Retire,
    RunnerTarget,
)
from scaleset.github import ActionsClient, JobStillRunning, RunnerNotFound
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict, NotFound
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER


@dataclass(frozen=True)
class Outcome:
    """What one deletion did: ``done`` or why not (``skipped``)."""

    done: bool
    skipped: str = ""


@dataclass
class Applier:
    kube: KubeClient
    namespace: str

    async def apply(self, deletion: Deletion, github: ActionsClient) -> Outcome:
        if isinstance(deletion, RemoveOrphan):
            return await self._remove_registration(github, deletion.runner_id)
        if isinstance(deletion, DeleteMissing):
            return await self._delete_runner(deletion.runner, deletion.runner.resource_version)
        assert isinstance(deletion, ReplaceOffline | Retire)
        return await self._replace(deletion.runner, github)

    async def _replace(self, target: RunnerTarget, github: ActionsClient) -> Outcome:
        try:
            fresh = await self.kube.get(EPHEMERAL_RUNNER, ObjectKey(self.namespace, target.name))
        except NotFound:
            return Outcome(False, "gone")
        runner = EphemeralRunner.model_validate(fresh.raw)
        if fresh.uid != target.uid or runner.status.runner_id != target.runner_id:
            return Outcome(False, "replaced since the pass read it")
        if classify(runner) not in (RunnerState.IDLE, RunnerState.STARTING):
            return Outcome(False, f"now {classify(runner)}")
        removed = await self._remove_registration(github, target.runner_id)
        if not removed.done and removed.skipped != "already removed":
            return removed
        return await self._delete_runner(target, fresh.resource_version)

    async def _remove_registration(self, github: ActionsClient, runner_id: int) -> Outcome:
        try:
            await github.remove_runner(runner_id)
        except JobStillRunning:
            return Outcome(False, "GitHub says it runs a job")
        except RunnerNotFound:
            return Outcome(False, "already removed")
        return Outcome(True)

    async def _delete_runner(self, target: RunnerTarget, resource_version: str) -> Outcome:
        try:
            await self.kube.delete(
                EPHEMERAL_RUNNER,
                ObjectKey(self.namespace, target.name),
                uid=target.uid,
                resource_version=resource_version,
            )
        except NotFound:
            return Outcome(False, "gone")
        except Conflict:
            return Outcome(False, "changed since the pass read it")
        return Outcome(True)
