"""JobStarted and JobCompleted as writes to the EphemeralRunner they name (L1, L2, L4).

JobStarted (L1/L2): read the runner, decide, write — inside ``retry_on_conflict`` (5 tries,
jittered). ``decide_started`` is the whole decision, pure:

=====================================================  ==========================================
the runner (as just read)                              write
=====================================================  ==========================================
being deleted, terminal, or a matching jobCompletion   the job fields only, no precondition
already Running with these job fields                  nothing
otherwise                                              ``phase: Running`` + the job fields in ONE
                                                       status merge patch carrying the
                                                       ``metadata.resourceVersion`` that was read
=====================================================  ==========================================

The first read comes from the listener's watch cache of the namespace's runners when it has the
runner (``cached``): a cached runner that must be promoted is patched under the *cached*
resourceVersion, so a stale cache costs one 409 and the normal path (a fresh GET, decide, locked
patch) follows — L2 holds either way, and a message's JobStarted cost one request instead of two
(bench/listener_jobstarted.py). The cached runner only ever answers a guarded promotion or
"nothing to do" (already Running this job: job fields are write-once and Running never goes back);
a runner the cache shows terminal, being deleted or completed, or one the cache does not hold
yet, is decided on a fresh read. The stale-cache 409 is not one of the ``attempts`` (it is counted
as a conflict retry all the same).

A 409 Conflict means the runner changed after the read: read again, decide again. When the
retries run out, the job fields (write-once metadata) are written without a precondition, the
runner is remembered and ``retry_deferred`` tries the phase again later; a counter records it.
NotFound is harmless (the runner is gone). Any other error is raised: the loop does not
acknowledge the message and handles it again.

JobCompleted (L4): ``status.jobCompletion`` {result, runnerId, runnerName, jobId, workflowRunId,
finishTime, patchId} merge-patched on the exact runner it names; ``patchId`` is the id of the
runner-set patch that follows the message (the first count that accounts for this job's end),
so the EphemeralRunnerSet controller frees the runner's slot as soon as it sees that patch. An
empty ``runnerName`` (a job that never reached a runner — how a reassigned job looks:
JobAssigned, then JobCompleted ``canceled`` with no runner, up to 3 times) touches no runner.
Repeats are harmless.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from scaleset.api.ephemeralrunner import TERMINAL_PHASES, RunnerPhase
from scaleset.clock import Clock
from scaleset.github import JobCompleted, JobStarted
from scaleset.github.models import JobMessage
from scaleset.kube import (
    Conflict,
    ConflictRetriesExhausted,
    KubeClient,
    KubeObject,
    NotFound,
    ObjectKey,
    RuntimeMetrics,
    retry_on_conflict,
)
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.logs import get_logger

log = get_logger(__name__)

JOB_STARTED_OPERATION = "listener_job_started"
CONFLICT_ATTEMPTS = 5

RunnerLookup = Callable[[ObjectKey], KubeObject | None]
"""A watch cache's view of a runner by key (None: not cached)."""


class JobMessageOutcome(enum.StrEnum):
    """What handling one job message did (also the ``outcome`` metric label)."""

    PROMOTED = "promoted"
    """JobStarted: phase Running and the job fields, written under the read's resourceVersion."""
    FIELDS_ONLY = "fields_only"
    """JobStarted on a runner that must not become Running: job fields only, no precondition."""
    UNCHANGED = "unchanged"
    """Already recorded; nothing written."""
    DEFERRED = "deferred"
    """Conflict retries ran out: job fields written unguarded, the phase is retried later."""
    RECORDED = "recorded"
    """JobCompleted written to ``status.jobCompletion``."""
    NOT_FOUND = "not_found"
    """The runner does not exist (any more): nothing to do."""
    SKIPPED = "skipped"
    """No runner named (a reassigned or cancelled job): nothing to do."""


class Write(enum.Enum):
    PROMOTE = "promote"
    FIELDS = "fields"
    NOTHING = "nothing"


@dataclass(frozen=True)
class StartedDecision:
    write: Write
    reason: str


def job_fields(job: JobStarted) -> dict[str, Any]:
    """The six job fields of a JobStarted, zero values omitted (as ARC's patch does)."""
    repository = (
        f"{job.owner_name}/{job.repository_name}" if job.owner_name or job.repository_name else ""
    )
    fields: dict[str, Any] = {
        "jobRequestId": job.runner_request_id,
        "jobRepositoryName": repository,
        "jobId": job.job_id,
        "workflowRunId": job.workflow_run_id,
        "jobWorkflowRef": job.job_workflow_ref,
        "jobDisplayName": job.job_display_name,
    }
    return {key: value for key, value in fields.items() if value}


def _matching_completion(status: Mapping[str, Any], job: JobStarted) -> bool:
    completion = status.get("jobCompletion")
    if not isinstance(completion, Mapping):
        return False
    recorded_job = completion.get("jobId") or ""
    return not recorded_job or not job.job_id or recorded_job == job.job_id


def decide_started(runner: Mapping[str, Any], job: JobStarted) -> StartedDecision:
    """What a JobStarted does to the runner ``runner`` (its JSON as just read)."""
    metadata = runner.get("metadata") or {}
    status = runner.get("status") or {}
    fields = job_fields(job)
    has_fields = all(status.get(key) == value for key, value in fields.items())
    if metadata.get("deletionTimestamp"):
        reason = "deleting"
    elif status.get("phase") in TERMINAL_PHASES:
        reason = f"terminal ({status.get('phase')})"
    elif _matching_completion(status, job):
        reason = "job already completed"
    else:
        if status.get("phase") == RunnerPhase.RUNNING and has_fields:
            return StartedDecision(Write.NOTHING, "already running this job")
        return StartedDecision(Write.PROMOTE, "job started")
    return StartedDecision(Write.NOTHING if has_fields else Write.FIELDS, reason)


def decision_view(raw: dict[str, Any]) -> dict[str, Any]:
    """What the watch cache keeps of a runner: all ``decide_started`` and the locked patch read
    (kind, metadata without ``managedFields``, status); the pod spec is dropped."""
    metadata = raw.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return {
        key: value
        for key, value in raw.items()
        if key in ("apiVersion", "kind", "metadata", "status")
    }


def completion_of(job: JobCompleted, patch_id: int | None = None) -> dict[str, Any]:
    """``status.jobCompletion`` for a JobCompleted (``finishTime`` omitted when unset, and an
    empty string left out: the real kube-apiserver v1.20.2 we test on refuses ``""`` in a
    custom resource's string field with 422 "must be of type string: null", so a JobCompleted
    with no result would never be recorded; absent reads as empty). ``patch_id``: the id of the
    runner-set patch that follows this message, the first count that accounts for this job's
    end (``patchId``; omitted when not given)."""
    completion: dict[str, Any] = {
        "result": job.result,
        "runnerId": job.runner_id,
        "runnerName": job.runner_name,
        "jobId": job.job_id,
        "workflowRunId": job.workflow_run_id,
    }
    if patch_id is not None:
        completion["patchId"] = patch_id
    if job.finish_time is not None:
        completion["finishTime"] = (
            job.finish_time.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
        )
    return {key: value for key, value in completion.items() if value != ""}


def write_chains(jobs: Sequence[JobMessage]) -> list[list[JobStarted | JobCompleted]]:
    """A message's JobStarted/JobCompleted grouped by the runner they name, each runner's in
    message order; runners with a JobCompleted first, then the others, each group in the order
    the runners first appear. Other job types write nothing and are left out."""
    chains: dict[str, list[JobStarted | JobCompleted]] = {}
    for job in jobs:
        if isinstance(job, JobStarted | JobCompleted):
            chains.setdefault(job.runner_name, []).append(job)
    ended = [c for c in chains.values() if any(isinstance(e, JobCompleted) for e in c)]
    running = [c for c in chains.values() if not any(isinstance(e, JobCompleted) for e in c)]
    return ended + running


class JobEventHandler:
    """Applies JobStarted / JobCompleted to the EphemeralRunners of one namespace."""

    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        *,
        clock: Clock,
        runtime_metrics: RuntimeMetrics,
        attempts: int = CONFLICT_ATTEMPTS,
        rng: random.Random | None = None,
        cached: RunnerLookup | None = None,
    ) -> None:
        self.kube = kube
        self._cached = cached
        self.namespace = namespace
        self._clock = clock
        self._runtime_metrics = runtime_metrics
        self._attempts = attempts
        self._rng = rng or random.Random()  # noqa: S311 - jitter
        self.deferred: dict[str, JobStarted] = {}
        """Runners whose Running phase is still to be written (conflict retries ran out)."""

    def _key(self, runner_name: str) -> ObjectKey:
        return ObjectKey(self.namespace, runner_name)

    async def job_started(self, job: JobStarted) -> JobMessageOutcome:
        """Record a JobStarted on its runner (see the module docstring)."""
        if not job.runner_name:
            log.info("JobStarted names no runner; skipped", job_id=job.job_id)
            return JobMessageOutcome.SKIPPED
        key = self._key(job.runner_name)
        try:
            guessed = await self._from_cache(key, job)
        except NotFound:
            guessed = JobMessageOutcome.NOT_FOUND
        if guessed is not None:
            if guessed is JobMessageOutcome.NOT_FOUND:
                log.info("JobStarted for a runner that does not exist", runner=job.runner_name)
            self.deferred.pop(job.runner_name, None)
            return guessed

        async def attempt() -> JobMessageOutcome:
            runner = await self.kube.get(EPHEMERAL_RUNNER, key)
            decision = decide_started(runner.raw, job)
            return await self._apply(runner, decision, job)

        try:
            outcome = await retry_on_conflict(
                attempt,
                operation=JOB_STARTED_OPERATION,
                attempts=self._attempts,
                clock=self._clock,
                metrics=self._runtime_metrics,
                rng=self._rng,
            )
        except NotFound:
            self.deferred.pop(job.runner_name, None)
            log.info("JobStarted for a runner that does not exist", runner=job.runner_name)
            return JobMessageOutcome.NOT_FOUND
        except ConflictRetriesExhausted:
            return await self._defer(key, job)
        self.deferred.pop(job.runner_name, None)
        return outcome

    async def _from_cache(self, key: ObjectKey, job: JobStarted) -> JobMessageOutcome | None:
        """The JobStarted decided on the cached runner, when that is safe; None: read afresh.

        Only a promotion (locked on the cached resourceVersion) or "nothing to do" is taken from
        the cache; a 409 means the cache was behind, and the caller reads afresh.
        """
        runner = self._cached(key) if self._cached is not None else None
        if runner is None or not runner.resource_version:
            return None
        decision = decide_started(runner.raw, job)
        if decision.write is Write.FIELDS:
            return None
        try:
            return await self._apply(runner, decision, job)
        except Conflict:
            self._runtime_metrics.conflict_retries.labels(JOB_STARTED_OPERATION).inc()
            log.debug("cached runner was stale; reading it again", runner=key.name)
            return None

    async def _apply(
        self, runner: KubeObject, decision: StartedDecision, job: JobStarted
    ) -> JobMessageOutcome:
        fields = job_fields(job)
        if decision.write is Write.PROMOTE:
            await self.kube.patch_with_lock(
                runner, {"status": {**fields, "phase": RunnerPhase.RUNNING.value}}, status=True
            )
            log.info("runner Running: job started", runner=runner.name, job_id=job.job_id)
            return JobMessageOutcome.PROMOTED
        if decision.write is Write.FIELDS:
            await self.kube.patch_merge(
                EPHEMERAL_RUNNER, runner.key, {"status": fields}, status=True
            )
            log.info(
                "job fields recorded without Running", runner=runner.name, reason=decision.reason
            )
            return JobMessageOutcome.FIELDS_ONLY
        return JobMessageOutcome.UNCHANGED

    async def _defer(self, key: ObjectKey, job: JobStarted) -> JobMessageOutcome:
        """Conflicts ran out: write the write-once job fields unguarded, retry the phase later."""
        try:
            await self.kube.patch_merge(
                EPHEMERAL_RUNNER, key, {"status": job_fields(job)}, status=True
            )
        except NotFound:
            self.deferred.pop(job.runner_name, None)
            return JobMessageOutcome.NOT_FOUND
        self.deferred[job.runner_name] = job
        log.warning(
            "Running phase deferred: the runner kept changing; job fields written",
            runner=job.runner_name,
            attempts=self._attempts,
        )
        return JobMessageOutcome.DEFERRED

    async def retry_deferred(self) -> dict[str, JobMessageOutcome]:
        """Try the deferred Running phases again; returns what each attempt did."""
        results: dict[str, JobMessageOutcome] = {}
        for name, job in list(self.deferred.items()):
            results[name] = await self.job_started(job)
        return results

    async def job_completed(
        self, job: JobCompleted, patch_id: int | None = None
    ) -> JobMessageOutcome:
        """Record a JobCompleted on the runner it names (see the module docstring), with the id
        of the runner-set patch that will account for it (``patch_id``)."""
        if not job.runner_name:
            log.info(
                "JobCompleted names no runner (reassigned or cancelled job); skipped",
                job_id=job.job_id,
                result=job.result,
            )
            return JobMessageOutcome.SKIPPED
        self.deferred.pop(job.runner_name, None)  # a finished job's runner is never promoted
        try:
            await self.kube.patch_merge(
                EPHEMERAL_RUNNER,
                self._key(job.runner_name),
                {"status": {"jobCompletion": completion_of(job, patch_id)}},
                status=True,
            )
        except NotFound:
            log.info("JobCompleted for a runner that does not exist", runner=job.runner_name)
            return JobMessageOutcome.NOT_FOUND
        log.info("job completion recorded", runner=job.runner_name, result=job.result)
        return JobMessageOutcome.RECORDED
