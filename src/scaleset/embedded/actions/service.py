"""The fake Actions service's state machine: scale sets, runners, jobs, sessions and their queues.

This is the functional core of the fake: synchronous methods that check a rule, change state and
raise ``ActionsError``/``PlainError`` exactly where the real service refuses (spec §2, §3, §4,
§6.1). It never touches HTTP and reads time only from the injected clock. Every state change
calls ``on_change`` so that the HTTP layer can wake long polls.

Jobs move ``queued -> (available ->) assigned -> dispatched -> running -> completed``; every
transition a scale set can see becomes a job event on its active session's queue, and statistics
are always computed from the jobs and runners themselves, never kept as counters.
"""

from __future__ import annotations

import enum
import hashlib
import itertools
import secrets
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scaleset.clock import Clock
from scaleset.embedded.actions import errors
from scaleset.embedded.actions.errors import ActionsError, PlainError
from scaleset.embedded.actions.model import (
    ACTIVE_JOB_STATES,
    BUSY_JOB_STATES,
    EventDrop,
    EventTrace,
    Job,
    JobEventKind,
    JobState,
    Label,
    Message,
    Runner,
    RunnerGroup,
    RunnerSession,
    ScaleSet,
    ScaleSetSession,
    Scope,
    Tenant,
)
from scaleset.embedded.actions.rules import (
    Statistics,
    compute_statistics,
    job_event,
    route_job,
    version_below,
)

DEFAULT_RUNNER_GROUP_ID = 1
DEFAULT_RUNNER_GROUP_NAME = "Default"
SWEEP_THROTTLE_SECONDS = 0.2
"""Sweeps run on every request, but at most once per this many seconds of both clocks."""


class JobDelivery(enum.StrEnum):
    """How a matched job reaches a scale set (spec §4.4)."""

    ASSIGN = "assign"
    """github.com style: ``JobAssigned`` straight away."""
    ACQUIRE = "acquire"
    """GHES style: ``JobAvailable`` first; the listener must call acquirejobs."""


@dataclass(frozen=True)
class ServiceSettings:
    """Lifetimes and switches of the fake service (times in seconds of the injected clock)."""

    mq_token_ttl_seconds: float = 3000.0
    session_idle_timeout_seconds: float = 300.0
    """A listener session with no queue activity for this long is expired by the service."""
    runner_session_timeout_seconds: float = 300.0
    """A runner connection not seen for this long is lost; its job fails."""
    job_delivery: JobDelivery = JobDelivery.ASSIGN
    ephemeral_auto_remove: bool = True
    """Remove a runner's registration when its one job finishes (JIT runners are ephemeral)."""
    max_job_messages_per_message: int = 50
    liveness_grace_real_seconds: float = 1.0
    """A session or runner connection is only timed out once it has also been silent for this
    many real seconds, so that jumping a manual clock forward never kills a live poller in the
    instant between two of its polls. ``FakeControl.sweep()`` ignores it."""


def credential_digest(secret: str) -> str:
    """How the service stores a runner credential: only its SHA-256."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _norm(value: str) -> str:
    return value.casefold()


class ActionsService:
    """All state of the fake Actions service. Not thread-safe; used from one event loop."""

    def __init__(
        self,
        clock: Clock,
        settings: ServiceSettings | None = None,
        on_change: Callable[[], None] | None = None,
        real_monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock`` is the simulation's time (its wall time dates tokens, sessions and jobs);
        ``real_monotonic`` is real elapsed time, used only for ``liveness_grace_real_seconds``."""
        self._clock = clock
        self._monotonic = real_monotonic
        self.settings = settings or ServiceSettings()
        self._on_change = on_change or (lambda: None)
        self.tenants: dict[int, Tenant] = {}
        self._tenant_by_scope: dict[tuple[str, str, str], int] = {}
        self.runner_groups: dict[int, dict[int, RunnerGroup]] = {}
        self.scale_sets: dict[int, ScaleSet] = {}
        self.runners: dict[int, Runner] = {}
        self._registered_by_name: dict[tuple[int, str], Runner] = {}
        """Each tenant's registered runners by case-folded name (names are unique in a tenant)."""
        self._runner_by_credential: dict[str, int] = {}
        self.jobs: dict[int, Job] = {}
        self.sessions: dict[str, ScaleSetSession] = {}
        self._session_by_scale_set: dict[int, str] = {}
        self._session_by_token: dict[str, str] = {}
        self._frozen_statistics: dict[int, Statistics] | None = None
        self.issued_mq_tokens: list[str] = []
        self.relied_on: set[str] = set()
        """Keys of ledger assumptions this service's behaviour has depended on so far."""
        self.minimum_runner_version: str | None = None
        """Runner versions below this are refused as deprecated (I-RUNNER-DEPRECATED)."""
        self.event_traces: dict[tuple[int, JobEventKind], EventTrace] = {}
        """What became of each job event, by (runnerRequestId, kind); the latest of a kind."""
        self._tenant_ids = itertools.count(1)
        self._group_ids = itertools.count(DEFAULT_RUNNER_GROUP_ID + 1)
        self._scale_set_ids = itertools.count(1)
        self._runner_ids = itertools.count(1)
        self._job_ids = itertools.count(1)
        self._message_ids = itertools.count(1)
        self._run_ids = itertools.count(9001)
        self._last_sweep: tuple[float, float] = (float("-inf"), float("-inf"))

    # ----------------------------------------------------------------------------- plumbing

    def now(self) -> float:
        """Wall time of the injected clock, as Unix seconds."""
        return self._clock.time()

    def _changed(self) -> None:
        self._on_change()

    def rely(self, ledger_key: str) -> None:
        """Note that an assumption of the fidelity ledger was just relied on."""
        self.relied_on.add(ledger_key)

    def touch_session(self, session: ScaleSetSession) -> None:
        """The listener was heard from (queue activity)."""
        session.last_activity = self.now()
        session.last_activity_real = self._monotonic()

    def touch_runner(self, connection: RunnerSession) -> None:
        """The runner process was heard from."""
        connection.last_seen = self.now()
        connection.last_seen_real = self._monotonic()

    # ------------------------------------------------------------------------------ tenants

    def tenant_for_scope(self, scope: Scope) -> Tenant:
        """The tenant of a scope, created (with its default runner group) on first use."""
        tenant_id = self._tenant_by_scope.get(scope.key)
        if tenant_id is not None:
            return self.tenants[tenant_id]
        self.rely("A-TENANT-PER-SCOPE")
        tenant = Tenant(id=next(self._tenant_ids), scope=scope)
        self.tenants[tenant.id] = tenant
        self._tenant_by_scope[scope.key] = tenant.id
        self.runner_groups[tenant.id] = {
            DEFAULT_RUNNER_GROUP_ID: RunnerGroup(
                DEFAULT_RUNNER_GROUP_ID, tenant.id, DEFAULT_RUNNER_GROUP_NAME, is_default=True
            )
        }
        self._changed()
        return tenant

    def find_tenant(self, scope: Scope) -> Tenant | None:
        tenant_id = self._tenant_by_scope.get(scope.key)
        return None if tenant_id is None else self.tenants[tenant_id]

    def tenant(self, tenant_id: int) -> Tenant:
        tenant = self.tenants.get(tenant_id)
        if tenant is None:
            raise ActionsError(404, errors.RESOURCE_NOT_FOUND, f"Tenant {tenant_id} not found.")
        return tenant

    # ------------------------------------------------------------------------ runner groups

    def add_runner_group(self, tenant_id: int, name: str) -> RunnerGroup:
        groups = self.runner_groups[self.tenant(tenant_id).id]
        if not name or any(_norm(g.name) == _norm(name) for g in groups.values()):
            raise ValueError(f"runner group name {name!r} is empty or taken")
        group = RunnerGroup(next(self._group_ids), tenant_id, name, is_default=False)
        groups[group.id] = group
        self._changed()
        return group

    def runner_groups_named(self, tenant_id: int, name: str) -> list[RunnerGroup]:
        groups = self.runner_groups[self.tenant(tenant_id).id]
        return [g for g in groups.values() if _norm(g.name) == _norm(name)]

    def _runner_group(self, tenant_id: int, group_id: int) -> RunnerGroup:
        group = self.runner_groups[tenant_id].get(group_id)
        if group is None:
            raise ActionsError(
                404, errors.RUNNER_GROUP_NOT_FOUND, f"Runner group {group_id} was not found."
            )
        return group

    # --------------------------------------------------------------------------- scale sets

    def create_scale_set(
        self,
        tenant_id: int,
        *,
        name: str,
        runner_group_id: int | None,
        labels: list[Label],
        runner_setting: dict[str, Any],
    ) -> ScaleSet:
        tenant = self.tenant(tenant_id)
        if not name:
            raise ActionsError(400, errors.INVALID_ARGUMENT, "The scale set name is required.")
        group = self._runner_group(tenant.id, runner_group_id or DEFAULT_RUNNER_GROUP_ID)
        if self.scale_sets_named(tenant.id, group.id, name):
            raise ActionsError(
                409,
                errors.SCALE_SET_EXISTS,
                f"A runner scale set named {name} already exists in runner group {group.name}.",
            )
        scale_set = ScaleSet(
            id=next(self._scale_set_ids),
            tenant_id=tenant.id,
            name=name,
            runner_group_id=group.id,
            labels=labels or [Label(name, "System")],
            runner_setting=dict(runner_setting),
            created_on=self.now(),
        )
        self.scale_sets[scale_set.id] = scale_set
        self._assign_queued_jobs()
        self._changed()
        return scale_set

    def scale_set(self, tenant_id: int, scale_set_id: int) -> ScaleSet:
        scale_set = self.scale_sets.get(scale_set_id)
        if scale_set is None or scale_set.tenant_id != tenant_id:
            raise ActionsError(
                404,
                errors.SCALE_SET_NOT_FOUND,
                f"The runner scale set with id {scale_set_id} was not found.",
            )
        return scale_set

    def scale_sets_named(self, tenant_id: int, runner_group_id: int, name: str) -> list[ScaleSet]:
        return [
            s
            for s in self.scale_sets.values()
            if s.tenant_id == tenant_id and s.runner_group_id == runner_group_id and s.name == name
        ]

    def runner_group_of(self, scale_set: ScaleSet) -> RunnerGroup:
        return self.runner_groups[scale_set.tenant_id][scale_set.runner_group_id]

    def update_scale_set(
        self,
        tenant_id: int,
        scale_set_id: int,
        *,
        name: str | None = None,
        runner_group_id: int | None = None,
        labels: list[Label] | None = None,
        runner_setting: dict[str, Any] | None = None,
    ) -> ScaleSet:
        scale_set = self.scale_set(tenant_id, scale_set_id)
        new_group = self._runner_group(tenant_id, runner_group_id or scale_set.runner_group_id)
        new_name = name or scale_set.name
        clash = [
            s
            for s in self.scale_sets_named(tenant_id, new_group.id, new_name)
            if s.id != scale_set.id
        ]
        if clash:
            raise ActionsError(
                409,
                errors.SCALE_SET_EXISTS,
                f"A runner scale set named {new_name} already exists in runner group "
                f"{new_group.name}.",
            )
        scale_set.name = new_name
        scale_set.runner_group_id = new_group.id
        if labels:
            scale_set.labels = labels
        if runner_setting is not None:
            scale_set.runner_setting = dict(runner_setting)
        self._assign_queued_jobs()
        self._changed()
        return scale_set

    def delete_scale_set(self, tenant_id: int, scale_set_id: int) -> None:
        """Delete a scale set: its session ends, its registrations are removed, waiting jobs
        go back to the queue and jobs in flight are cancelled."""
        scale_set = self.scale_set(tenant_id, scale_set_id)
        self.rely("A-SCALE-SET-DELETE")
        session_id = self._session_by_scale_set.get(scale_set.id)
        if session_id is not None:
            self._drop_session(self.sessions[session_id], EventDrop.SCALE_SET_DELETED)
        now = self.now()
        for job in self.jobs.values():
            if job.scale_set_id != scale_set.id or job.state is JobState.COMPLETED:
                continue
            if job.state in BUSY_JOB_STATES:
                job.state, job.result, job.finish_time = JobState.COMPLETED, "canceled", now
            else:
                job.state, job.scale_set_id, job.scale_set_assign_time = (
                    JobState.QUEUED,
                    None,
                    None,
                )
                job.acquired = False
        for runner in self.runners.values():
            if runner.scale_set_id == scale_set.id and runner.registered:
                runner.job_request_id = None
                self._unregister(runner, "scale-set-deleted")
        del self.scale_sets[scale_set.id]
        self._assign_queued_jobs()
        self._changed()

    # ------------------------------------------------------------------------------ runners

    def generate_jit_runner(
        self, tenant_id: int, scale_set_id: int, *, name: str, work_folder: str
    ) -> tuple[Runner, str]:
        """Register a runner for a scale set; returns it and its one-time credential."""
        scale_set = self.scale_set(tenant_id, scale_set_id)
        if not name:
            raise ActionsError(400, errors.INVALID_ARGUMENT, "The runner name is required.")
        if self.runners_named(tenant_id, name):
            raise ActionsError(
                409, errors.AGENT_EXISTS, f"A runner with the name {name} already exists."
            )
        credential = "rcred_" + secrets.token_urlsafe(24)
        runner = Runner(
            id=next(self._runner_ids),
            tenant_id=tenant_id,
            scale_set_id=scale_set.id,
            name=name,
            work_folder=work_folder,
            created_at=self.now(),
            credential_digest=credential_digest(credential),
        )
        self.runners[runner.id] = runner
        self._registered_by_name[(tenant_id, _norm(name))] = runner
        self._runner_by_credential[runner.credential_digest] = runner.id
        self._changed()
        return runner, credential

    def runner(self, tenant_id: int, runner_id: int) -> Runner:
        runner = self.runners.get(runner_id)
        if runner is None or runner.tenant_id != tenant_id or not runner.registered:
            raise ActionsError(
                404, errors.AGENT_NOT_FOUND, f"The runner with id {runner_id} was not found."
            )
        return runner

    def runners_named(self, tenant_id: int, name: str) -> list[Runner]:
        """The tenant's registered runner of this name (case-insensitive): none or one."""
        runner = self._registered_by_name.get((tenant_id, _norm(name)))
        return [] if runner is None else [runner]

    def live_runners(self, tenant_id: int) -> list[Runner]:
        return sorted(
            (r for r in self.runners.values() if r.tenant_id == tenant_id and r.registered),
            key=lambda r: r.id,
        )

    def remove_runner(
        self, tenant_id: int, runner_id: int, *, force: bool = False, reason: str = "removed"
    ) -> None:
        """Delete a registration. A busy runner is refused unless ``force`` (its job fails)."""
        runner = self.runner(tenant_id, runner_id)
        if runner.busy:
            if not force:
                raise ActionsError(
                    400,
                    errors.JOB_STILL_RUNNING,
                    f"The runner {runner.name} is still running a job and cannot be removed.",
                )
            self._finish_job(self.jobs[runner.job_request_id or 0], runner, "failed")
        self._unregister(runner, reason)
        self._changed()

    def _unregister(self, runner: Runner, reason: str) -> None:
        key = (runner.tenant_id, _norm(runner.name))
        if self._registered_by_name.get(key) is runner:
            del self._registered_by_name[key]
        runner.removed_at = self.now()
        runner.removed_reason = reason
        runner.session = None

    # -------------------------------------------------------------------- listener sessions

    def create_session(self, tenant_id: int, scale_set_id: int, owner_name: str) -> ScaleSetSession:
        scale_set = self.scale_set(tenant_id, scale_set_id)
        if scale_set.id in self._session_by_scale_set:
            raise ActionsError(
                409,
                errors.SESSION_CONFLICT,
                f"The actions runner scaleset {scale_set.name} already has an active session.",
            )
        now = self.now()
        session = ScaleSetSession(
            id=str(uuid.uuid4()),
            scale_set_id=scale_set.id,
            owner_name=owner_name,
            created_at=now,
            mq_token=self._new_mq_token(),
            mq_token_expires_at=now + self.settings.mq_token_ttl_seconds,
            last_activity=now,
        )
        self.touch_session(session)
        self.sessions[session.id] = session
        self._session_by_scale_set[scale_set.id] = session.id
        self._session_by_token[session.mq_token] = session.id
        self._changed()
        return session

    def _new_mq_token(self) -> str:
        token = "mq_" + secrets.token_urlsafe(24)
        self.issued_mq_tokens.append(token)
        return token

    def _session_of(self, tenant_id: int, scale_set_id: int, session_id: str) -> ScaleSetSession:
        self.scale_set(tenant_id, scale_set_id)
        session = self.sessions.get(session_id)
        if session is None or session.scale_set_id != scale_set_id:
            raise ActionsError(
                404, errors.SESSION_NOT_FOUND, f"The session identifier {session_id} is not valid."
            )
        return session

    def refresh_session(
        self, tenant_id: int, scale_set_id: int, session_id: str
    ) -> ScaleSetSession:
        """Issue a new message-queue token; the old one stops working."""
        session = self._session_of(tenant_id, scale_set_id, session_id)
        self._session_by_token.pop(session.mq_token, None)
        now = self.now()
        session.mq_token = self._new_mq_token()
        session.mq_token_expires_at = now + self.settings.mq_token_ttl_seconds
        self.touch_session(session)
        self._session_by_token[session.mq_token] = session.id
        self._changed()
        return session

    def delete_session(self, tenant_id: int, scale_set_id: int, session_id: str) -> None:
        self.scale_set(tenant_id, scale_set_id)
        session = self.sessions.get(session_id)
        if session is None or session.scale_set_id != scale_set_id:
            raise ActionsError(
                400, errors.SESSION_EXPIRED, f"The session identifier {session_id} is not valid."
            )
        self._drop_session(session, EventDrop.SESSION_DELETED)
        self._changed()

    def expire_session(self, scale_set_id: int) -> bool:
        """End a scale set's session as the service does when it times one out."""
        session_id = self._session_by_scale_set.get(scale_set_id)
        if session_id is None:
            return False
        self._drop_session(self.sessions[session_id], EventDrop.SESSION_EXPIRED)
        self._changed()
        return True

    def expire_mq_token(self, scale_set_id: int) -> bool:
        """Make the current message-queue token of a scale set's session expire now."""
        session_id = self._session_by_scale_set.get(scale_set_id)
        if session_id is None:
            return False
        self.sessions[session_id].mq_token_expires_at = self.now()
        self._changed()
        return True

    def _drop_session(self, session: ScaleSetSession, why: EventDrop) -> None:
        now = self.now()
        queued = [*session.pending, *(e for m in session.messages for e in m.events)]
        for event in queued:
            trace = self.event_traces.get((event.runner_request_id, event.kind))
            if trace is not None and trace.acked_at is None and trace.dropped_at is None:
                trace.dropped_at, trace.dropped_why = now, why
        self.sessions.pop(session.id, None)
        self._session_by_token.pop(session.mq_token, None)
        if self._session_by_scale_set.get(session.scale_set_id) == session.id:
            del self._session_by_scale_set[session.scale_set_id]

    def session_for_scale_set(self, scale_set_id: int) -> ScaleSetSession | None:
        session_id = self._session_by_scale_set.get(scale_set_id)
        return None if session_id is None else self.sessions[session_id]

    def session_for_mq_token(self, token: str) -> ScaleSetSession:
        """The session a message-queue token belongs to; 401 when unknown or expired."""
        session_id = self._session_by_token.get(token)
        session = None if session_id is None else self.sessions.get(session_id)
        if session is None or self.now() >= session.mq_token_expires_at:
            raise PlainError(401, "")
        return session

    # -------------------------------------------------------------------------- the queue

    def note_poll(self, session: ScaleSetSession, max_capacity: int | None) -> None:
        """A listener polls: the session is alive, and its scale set can run ``max_capacity``
        runners (the ``X-ScaleSetMaxCapacity`` header; ``None`` when not sent)."""
        self.touch_session(session)
        session.polls += 1
        scale_set = self.scale_sets.get(session.scale_set_id)
        if (
            max_capacity is not None
            and scale_set is not None
            and scale_set.max_capacity != max_capacity
        ):
            scale_set.max_capacity = max_capacity
            self._assign_queued_jobs()
            self._changed()

    def take_message(self, session: ScaleSetSession, last_message_id: int) -> Message | None:
        """The oldest undeleted message after ``last_message_id``; forms a new one from pending
        job events when there is none. ``None`` when there is nothing to deliver."""
        for message in session.messages:
            if message.id > last_message_id:
                return message
        if not session.pending:
            return None
        cap = self.settings.max_job_messages_per_message
        batch = tuple(session.pending.popleft() for _ in range(min(cap, len(session.pending))))
        message = Message(next(self._message_ids), batch)
        session.messages.append(message)
        now = self.now()
        for event in batch:
            trace = self.event_traces.get((event.runner_request_id, event.kind))
            if trace is not None and trace.delivered_at is None:
                trace.delivered_at = now
        return message

    def delete_message(self, session: ScaleSetSession, message_id: int) -> None:
        """Acknowledge a message. Deleting one that is already gone is accepted (idempotent)."""
        self.touch_session(session)
        before = len(session.messages)
        now = self.now()
        for message in session.messages:
            if message.id != message_id:
                continue
            for event in message.events:
                trace = self.event_traces.get((event.runner_request_id, event.kind))
                if trace is not None and trace.acked_at is None:
                    trace.acked_at = now
        session.messages = [m for m in session.messages if m.id != message_id]
        session.deleted_messages += before - len(session.messages)
        if before == len(session.messages):
            self.rely("A-DELETE-MESSAGE-IDEMPOTENT")
        self._changed()

    def has_deliverable(self, session: ScaleSetSession, last_message_id: int) -> bool:
        return bool(session.pending) or any(m.id > last_message_id for m in session.messages)

    def acquire_jobs(
        self, session: ScaleSetSession, scale_set_id: int, request_ids: Iterable[int]
    ) -> list[int]:
        """Acquire offered jobs for the session's scale set; returns the ids now assigned to it
        (ids of jobs that are gone or belong elsewhere are left out)."""
        if session.scale_set_id != scale_set_id:
            raise PlainError(401, "")
        self.touch_session(session)
        acquired: list[int] = []
        for request_id in request_ids:
            job = self.jobs.get(request_id)
            if job is None or job.scale_set_id != scale_set_id:
                continue
            if job.state is JobState.AVAILABLE:
                job.state = JobState.ASSIGNED
                job.acquired = True
                self._emit(job, JobEventKind.ASSIGNED)
                acquired.append(job.id)
            elif job.acquired and job.state in ACTIVE_JOB_STATES:
                acquired.append(job.id)
        self._changed()
        return acquired

    # -------------------------------------------------------------------------- statistics

    def statistics(self, scale_set_id: int) -> Statistics:
        """Statistics of a scale set, computed from its jobs and runners (or the frozen copy
        while the stale-statistics fault is on)."""
        if self._frozen_statistics is not None:
            frozen = self._frozen_statistics.get(scale_set_id)
            if frozen is None:
                frozen = self.fresh_statistics(scale_set_id)
                self._frozen_statistics[scale_set_id] = frozen
            return frozen
        return self.fresh_statistics(scale_set_id)

    def fresh_statistics(self, scale_set_id: int) -> Statistics:
        self.rely("A-STATISTICS-DETAIL")
        return compute_statistics(
            (j for j in self.jobs.values() if j.scale_set_id == scale_set_id),
            (r for r in self.runners.values() if r.scale_set_id == scale_set_id),
        )

    def freeze_statistics(self, frozen: bool) -> None:
        """Stale-statistics fault: while frozen, every scale set reports the statistics it had
        when the fault was switched on (a scale set created later: when it was first asked)."""
        if frozen and self._frozen_statistics is None:
            self._frozen_statistics = {
                scale_set_id: self.fresh_statistics(scale_set_id)
                for scale_set_id in self.scale_sets
            }
        elif not frozen:
            self._frozen_statistics = None
        self._changed()

    @property
    def statistics_frozen(self) -> bool:
        return self._frozen_statistics is not None

    # -------------------------------------------------------------------------------- jobs

    def queue_job(
        self,
        labels: Iterable[str],
        *,
        owner: str,
        repository: str,
        enterprise: str | None = None,
        duration_seconds: float = 0.0,
        result: str = "success",
        display_name: str = "build",
        workflow_ref: str | None = None,
        event_name: str = "push",
    ) -> Job:
        label_tuple = tuple(labels)
        if not label_tuple:
            raise ValueError("a job needs at least one runs-on label")
        if duration_seconds < 0:
            raise ValueError("a job's duration cannot be negative")
        job = Job(
            id=next(self._job_ids),
            job_id=str(uuid.uuid4()),
            labels=label_tuple,
            owner=owner,
            repository=repository,
            enterprise=enterprise,
            workflow_ref=workflow_ref
            or f"{owner}/{repository}/.github/workflows/ci.yml@refs/heads/main",
            display_name=display_name,
            event_name=event_name,
            workflow_run_id=next(self._run_ids),
            duration_seconds=duration_seconds,
            planned_result=result,
            queue_time=self.now(),
        )
        self.jobs[job.id] = job
        self._assign_queued_jobs()
        self._changed()
        return job

    def job(self, request_id: int) -> Job:
        job = self.jobs.get(request_id)
        if job is None:
            raise KeyError(f"no job with runnerRequestId {request_id}")
        return job

    def cancel_job(self, request_id: int) -> bool:
        """Cancel a job. One still waiting completes as ``canceled`` at once; one on a runner is
        flagged and the runner finishes it. Returns False when it had already completed."""
        job = self.job(request_id)
        if job.state is JobState.COMPLETED:
            return False
        self.rely("A-JOB-CANCEL")
        if job.state in BUSY_JOB_STATES:
            job.cancel_requested = True
        else:
            job.state, job.result, job.finish_time = JobState.COMPLETED, "canceled", self.now()
            if job.scale_set_id is not None:
                self._emit(job, JobEventKind.COMPLETED)
            self._assign_queued_jobs()
        self._changed()
        return True

    def _assign_queued_jobs(self) -> None:
        """Route every queued job that now has a scale set with room, oldest first."""
        queued = sorted(j.id for j in self.jobs.values() if j.state is JobState.QUEUED)
        if not queued:
            return
        in_flight: dict[int, int] = {}
        for job in self.jobs.values():
            if job.scale_set_id is not None and job.state is not JobState.COMPLETED:
                in_flight[job.scale_set_id] = in_flight.get(job.scale_set_id, 0) + 1
        scopes = [(s, self.tenants[s.tenant_id].scope) for s in self.scale_sets.values()]
        now = self.now()
        for job_id in queued:
            job = self.jobs[job_id]
            routing = route_job(job, scopes, in_flight)
            if routing.held_by_capacity:
                self.rely("A-CAPACITY-RULE")
            scale_set = routing.scale_set
            if scale_set is None:
                continue
            self.rely("A-JOB-MATCHING")
            in_flight[scale_set.id] = in_flight.get(scale_set.id, 0) + 1
            job.scale_set_id = scale_set.id
            job.scale_set_assign_time = now
            if self.settings.job_delivery is JobDelivery.ACQUIRE:
                job.state = JobState.AVAILABLE
                self._emit(job, JobEventKind.AVAILABLE)
            else:
                job.state = JobState.ASSIGNED
                self._emit(job, JobEventKind.ASSIGNED)

    def _emit(self, job: Job, kind: JobEventKind) -> None:
        """Queue a job event on the active session of the job's scale set (dropped when the
        scale set has no session: the next session learns the state from its statistics)."""
        if job.scale_set_id is None:
            return
        session_id = self._session_by_scale_set.get(job.scale_set_id)
        trace = EventTrace(kind, job.id, self.now(), session_id)
        self.event_traces[(job.id, kind)] = trace
        if session_id is None:
            trace.dropped_at, trace.dropped_why = trace.emitted_at, EventDrop.NO_SESSION
            self.rely("A-SESSION-IDLE-EXPIRY")
            return
        self.sessions[session_id].pending.append(job_event(job, kind))

    def _finish_job(self, job: Job, runner: Runner | None, result: str) -> None:
        job.state = JobState.COMPLETED
        job.result = "canceled" if job.cancel_requested else result
        job.finish_time = self.now()
        self._emit(job, JobEventKind.COMPLETED)
        if runner is not None:
            runner.job_request_id = None
            if self.settings.ephemeral_auto_remove and runner.registered:
                self._unregister(runner, "ephemeral-job-finished")
        self._assign_queued_jobs()

    # ------------------------------------------------------------ runner side (assumed API)

    def open_runner_session(self, credential: str) -> tuple[Runner, RunnerSession]:
        """A runner process connects with the credential from its JIT config."""
        runner = self._runner_for_credential(credential)
        if not runner.registered:
            runner.session_rejections.append("registration-deleted")
            runner.last_rejection_at = self.now()
            self._changed()
            raise ActionsError(
                404, errors.AGENT_NOT_FOUND, f"Registration {runner.id} was not found."
            )
        if runner.session is not None:
            runner.session_rejections.append("conflict")
            runner.last_rejection_at = self.now()
            self._changed()
            raise ActionsError(409, errors.RUNNER_SESSION_CONFLICT, "Error: Conflict")
        now = self.now()
        runner.session = RunnerSession(id=str(uuid.uuid4()), created_at=now, last_seen=now)
        self.touch_runner(runner.session)
        self._changed()
        return runner, runner.session

    def refuse_deprecated_version(self, version: str) -> None:
        """A runner's message poll with a version below ``minimum_runner_version`` is refused,
        403 with the runner's own words (I-RUNNER-DEPRECATED)."""
        minimum = self.minimum_runner_version
        if minimum is not None and version_below(version, minimum):
            raise ActionsError(
                403,
                errors.RUNNER_VERSION_DEPRECATED,
                f"Runner version v{version} is deprecated and cannot receive messages.",
            )

    def _runner_for_credential(self, credential: str) -> Runner:
        runner_id = self._runner_by_credential.get(credential_digest(credential))
        if runner_id is None:
            raise PlainError(401, "")
        return self.runners[runner_id]

    def runner_in_session(self, credential: str, session_id: str) -> Runner:
        """The runner behind a credential, checked to hold the named live session."""
        runner = self._runner_for_credential(credential)
        if not runner.registered:
            raise ActionsError(
                404, errors.AGENT_NOT_FOUND, f"Registration {runner.id} was not found."
            )
        if runner.session is None or runner.session.id != session_id:
            raise ActionsError(
                404, errors.SESSION_NOT_FOUND, f"The runner session {session_id} is not valid."
            )
        self.touch_runner(runner.session)
        return runner

    def close_runner_session(self, credential: str, session_id: str) -> None:
        """A runner leaves. A job it was handed but never reported started (the answer to its
        poll may not have reached it) goes back to the scale set for another runner."""
        runner = self.runner_in_session(credential, session_id)
        runner.session = None
        held = self.jobs.get(runner.job_request_id) if runner.job_request_id else None
        if held is not None and held.state is JobState.DISPATCHED:
            self.rely("A-JOB-REASSIGNED")
            held.state = JobState.ASSIGNED
            held.runner_id, held.runner_name, held.runner_assign_time = None, "", None
            runner.job_request_id = None
        self._changed()

    def dispatch_job(self, runner: Runner) -> Job | None:
        """The job for a connected runner: the one it holds, else the oldest assigned job of
        its scale set (an ephemeral runner takes one job in its life)."""
        if runner.job_request_id is not None:
            return self.jobs[runner.job_request_id]
        if runner.jobs_taken > 0 or not runner.registered or runner.session is None:
            return None  # nobody would run a job handed to a removed or departed runner
        waiting = [
            j
            for j in self.jobs.values()
            if j.scale_set_id == runner.scale_set_id
            and j.state is JobState.ASSIGNED
            and not j.cancel_requested
        ]
        if not waiting:
            return None
        job = min(waiting, key=lambda j: j.id)
        job.state = JobState.DISPATCHED
        job.runner_id, job.runner_name = runner.id, runner.name
        job.runner_assign_time = self.now()
        runner.job_request_id = job.id
        runner.jobs_taken += 1
        self._changed()
        return job

    def _held_job(self, runner: Runner, request_id: int) -> Job:
        if runner.job_request_id != request_id:
            raise ActionsError(
                404, errors.JOB_NOT_FOUND, f"Job {request_id} is not assigned to this runner."
            )
        return self.jobs[request_id]

    def job_started(self, runner: Runner, request_id: int) -> Job:
        job = self._held_job(runner, request_id)
        if job.state is JobState.DISPATCHED:
            job.state = JobState.RUNNING
            job.start_time = self.now()
            self._emit(job, JobEventKind.STARTED)
            self._changed()
        return job

    def job_completed(self, runner: Runner, request_id: int, result: str) -> Job:
        job = self._held_job(runner, request_id)
        self._finish_job(job, runner, result or "success")
        self._changed()
        return job

    # ------------------------------------------------------------------------------- sweep

    def sweep(self, *, strict: bool = False) -> None:
        """Apply the timeouts the real service applies by itself: lost runner connections
        (their jobs fail) and idle listener sessions. Unless ``strict``, something is timed out
        only after it has also been silent for ``liveness_grace_real_seconds`` of real time."""
        now, real_now = self.now(), self._monotonic()
        last_now, last_real = self._last_sweep
        if (
            not strict
            and 0 <= now - last_now < SWEEP_THROTTLE_SECONDS
            and real_now - last_real < SWEEP_THROTTLE_SECONDS
        ):
            return  # too little time has passed, on either clock, for anything to time out
        self._last_sweep = (now, real_now)
        grace = 0.0 if strict else self.settings.liveness_grace_real_seconds
        changed = False
        for runner in self.runners.values():
            connection = runner.session
            if connection is None or connection.active_polls > 0:
                continue
            if now - connection.last_seen <= self.settings.runner_session_timeout_seconds:
                continue
            if real_now - connection.last_seen_real < grace:
                continue
            runner.session = None
            changed = True
            self.rely("A-RUNNER-LOST")
            if runner.job_request_id is not None:
                self._finish_job(self.jobs[runner.job_request_id], runner, "failed")
        for session in list(self.sessions.values()):
            if session.active_polls > 0:
                continue
            if now - session.last_activity <= self.settings.session_idle_timeout_seconds:
                continue
            if real_now - session.last_activity_real < grace:
                continue
            self._drop_session(session, EventDrop.SESSION_EXPIRED)
            self.rely("A-SESSION-IDLE-EXPIRY")
            changed = True
        if changed:
            self._changed()
