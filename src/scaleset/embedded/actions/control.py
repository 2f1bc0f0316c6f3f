"""Driving the fake like GitHub does, and reading its ground truth.

``FakeControl`` is the Python control API (``fake.control``); the HTTP control endpoint under
``/_fake`` calls the same methods. It queues and cancels jobs, expires sessions and tokens,
deletes registrations, injects faults, and returns ``GroundTruth`` snapshots: the runners, jobs
and sessions as the service really has them — what tests assert on and what the demo measures
zombies against (never the controller's own view).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scaleset.embedded.actions.context import FakeContext, RequestRecord
from scaleset.embedded.actions.faults import DropMode, FaultInjector
from scaleset.embedded.actions.ledger import LedgerEntry, assumptions
from scaleset.embedded.actions.model import (
    EventDrop,
    EventTrace,
    Job,
    JobEventKind,
    JobState,
    Label,
    parse_config_url,
)
from scaleset.embedded.actions.rules import Statistics
from scaleset.embedded.actions.wire import statistics_json


@dataclass(frozen=True)
class ScaleSetTruth:
    id: int
    tenant_id: int
    name: str
    runner_group_id: int
    labels: tuple[str, ...]
    max_capacity: int | None
    statistics: Statistics
    """Always computed fresh (the stale-statistics fault does not apply here)."""


@dataclass(frozen=True)
class RunnerTruth:
    id: int
    name: str
    tenant_id: int
    scale_set_id: int
    registered: bool
    removed_reason: str
    busy: bool
    job_request_id: int | None
    connected: bool
    """A runner process holds a live session on the broker."""
    polling: bool
    """A poll of that session for a job is being held open."""
    jobs_taken: int
    session_rejections: tuple[str, ...]
    """Refused runner-session attempts in order: ``conflict`` (another live session of this
    registration) or ``registration-deleted`` — the footprints of a reused JIT config."""
    last_rejection_at: float | None


@dataclass(frozen=True)
class JobTruth:
    request_id: int
    job_id: str
    state: JobState
    labels: tuple[str, ...]
    owner: str
    repository: str
    scale_set_id: int | None
    runner_id: int | None
    runner_name: str
    result: str | None
    cancel_requested: bool
    queue_time: float
    scale_set_assign_time: float | None
    runner_assign_time: float | None
    start_time: float | None
    finish_time: float | None


@dataclass(frozen=True)
class SessionTruth:
    session_id: str
    scale_set_id: int
    owner_name: str
    mq_token_expires_at: float
    last_activity: float
    polling: bool
    polls: int
    pending_events: int
    undelivered_or_unacked_messages: int
    deleted_messages: int


@dataclass(frozen=True)
class JobEventTruth:
    """What became of one job event (``FakeControl.job_event``): queued at ``emitted_at`` on
    session ``session_id`` (``None``: the scale set had none), first carried by a poll at
    ``delivered_at``, its message acknowledged at ``acked_at``, or dropped unacknowledged at
    ``dropped_at`` for ``dropped_why``. Service wall-clock times."""

    kind: JobEventKind
    request_id: int
    emitted_at: float
    session_id: str | None
    delivered_at: float | None
    acked_at: float | None
    dropped_at: float | None
    dropped_why: EventDrop | None

    @property
    def dropped_by_github(self) -> bool:
        """GitHub dropped it before any listener got it: no session to queue it on, or the
        session expired with it still queued (not a drop the listener asked for)."""
        return self.delivered_at is None and self.dropped_why in (
            EventDrop.NO_SESSION,
            EventDrop.SESSION_EXPIRED,
        )

    @classmethod
    def of(cls, trace: EventTrace) -> JobEventTruth:
        return cls(
            trace.kind,
            trace.request_id,
            trace.emitted_at,
            trace.session_id,
            trace.delivered_at,
            trace.acked_at,
            trace.dropped_at,
            trace.dropped_why,
        )


@dataclass(frozen=True)
class GroundTruth:
    """A consistent snapshot of the fake service's state at ``at`` (clock time)."""

    at: float
    scale_sets: tuple[ScaleSetTruth, ...]
    runners: tuple[RunnerTruth, ...]
    jobs: tuple[JobTruth, ...]
    sessions: tuple[SessionTruth, ...]

    def runner(self, runner_id: int) -> RunnerTruth:
        return next(r for r in self.runners if r.id == runner_id)

    def job(self, request_id: int) -> JobTruth:
        return next(j for j in self.jobs if j.request_id == request_id)

    def scale_set(self, scale_set_id: int) -> ScaleSetTruth:
        return next(s for s in self.scale_sets if s.id == scale_set_id)

    def session_of(self, scale_set_id: int) -> SessionTruth | None:
        return next((s for s in self.sessions if s.scale_set_id == scale_set_id), None)

    def jobs_in(self, *states: JobState) -> list[JobTruth]:
        return [j for j in self.jobs if j.state in states]

    def registered_runners(self, scale_set_id: int | None = None) -> list[RunnerTruth]:
        return [
            r
            for r in self.runners
            if r.registered and (scale_set_id is None or r.scale_set_id == scale_set_id)
        ]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for scale_set, truth in zip(data["scale_sets"], self.scale_sets, strict=True):
            scale_set["statistics"] = statistics_json(truth.statistics)
        return data


@dataclass(frozen=True)
class JitRunner:
    """A runner registered through the control API, with its encoded JIT config."""

    id: int
    name: str
    scale_set_id: int
    encoded_jit_config: str

    def __repr__(self) -> str:
        return (
            f"JitRunner(id={self.id}, name={self.name!r}, scale_set_id={self.scale_set_id}, "
            "encoded_jit_config=<hidden>)"
        )

    def env(self) -> dict[str, str]:
        """The runner container environment ARC would give this runner."""
        return {
            "ACTIONS_RUNNER_INPUT_JITCONFIG": self.encoded_jit_config,
            "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE": "1",
            "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT": "scaleset-simulated-runner",
        }


class FakeControl:
    """The control API of one running fake (``FakeGitHub.control``)."""

    def __init__(self, context: FakeContext) -> None:
        self._ctx = context

    @property
    def faults(self) -> FaultInjector:
        """Fault rules: ``fail_next``, ``rate_limit``, ``unavailable``, ``add_latency``,
        ``drop_polls``, ``drop_responses``, ``set_bom``, ``remove``, ``clear``."""
        return self._ctx.faults

    # ------------------------------------------------------------------ set-up shortcuts

    def tenant_id(self, config_url: str) -> int:
        """The Actions tenant of a config URL (created if needed)."""
        return self._ctx.service.tenant_for_scope(parse_config_url(config_url)).id

    def add_runner_group(self, config_url: str, name: str) -> int:
        return self._ctx.service.add_runner_group(self.tenant_id(config_url), name).id

    def create_scale_set(
        self,
        config_url: str,
        name: str,
        *,
        runner_group_id: int = 1,
        labels: Sequence[str] | None = None,
    ) -> int:
        """Create a scale set directly (as if a controller had); labels default to its name."""
        return self._ctx.service.create_scale_set(
            self.tenant_id(config_url),
            name=name,
            runner_group_id=runner_group_id,
            labels=[Label(label, "System") for label in labels or [name]],
            runner_setting={"disableUpdate": True},
        ).id

    def generate_jit_config(self, scale_set_id: int, name: str, work_folder: str = "") -> JitRunner:
        """Register a runner and get its JIT config, as generatejitconfig would."""
        scale_set = self._ctx.service.scale_sets.get(scale_set_id)
        if scale_set is None:
            raise KeyError(f"no scale set {scale_set_id}")
        runner, encoded = self._ctx.issue_jit_config(
            scale_set.tenant_id, scale_set_id, name, work_folder
        )
        return JitRunner(runner.id, runner.name, scale_set_id, encoded)

    # ------------------------------------------------------------------------------ jobs

    def queue_job(
        self,
        labels: Iterable[str],
        *,
        owner: str = "acme",
        repository: str = "app",
        enterprise: str | None = None,
        duration_seconds: float = 0.0,
        result: str = "success",
        display_name: str = "build",
        workflow_ref: str | None = None,
        event_name: str = "push",
    ) -> int:
        """Queue a workflow job with ``runs-on`` labels; returns its runnerRequestId. It goes
        to the scale set whose labels contain all of them, in a scope holding the repository."""
        job = self._ctx.service.queue_job(
            labels,
            owner=owner,
            repository=repository,
            enterprise=enterprise,
            duration_seconds=duration_seconds,
            result=result,
            display_name=display_name,
            workflow_ref=workflow_ref,
            event_name=event_name,
        )
        return job.id

    def cancel_job(self, request_id: int) -> bool:
        return self._ctx.service.cancel_job(request_id)

    # ------------------------------------------------------------- sessions and tokens

    def expire_session(self, scale_set_id: int) -> bool:
        """End the scale set's listener session as the service would on a timeout."""
        return self._ctx.service.expire_session(scale_set_id)

    def expire_message_queue_token(self, scale_set_id: int) -> bool:
        """Make the session's message-queue token expire now (next queue call: 401)."""
        return self._ctx.service.expire_mq_token(scale_set_id)

    def expire_admin_tokens(self) -> None:
        """Every admin JWT issued so far is refused with 401 from now on."""
        self._ctx.authority.expire_admin_tokens()

    def delete_runner(self, runner_id: int, *, force: bool = False) -> None:
        """Delete a runner registration (as from GitHub's UI). A busy runner needs ``force``
        (its job then fails)."""
        runner = self._ctx.service.runners.get(runner_id)
        if runner is None:
            raise KeyError(f"no runner {runner_id}")
        self._ctx.service.remove_runner(
            runner.tenant_id, runner_id, force=force, reason="deleted-by-control"
        )

    def deprecate_runner_versions_below(self, version: str | None) -> None:
        """From now on GitHub refuses runners older than ``version`` as deprecated (their
        message poll gets 403, ARC #4601); ``None`` accepts every version again."""
        self._ctx.service.minimum_runner_version = version

    def set_stale_statistics(self, stale: bool) -> None:
        """While on, statistics in sessions and messages stay as they were when first asked."""
        self._ctx.service.freeze_statistics(stale)

    def drop_polls(self, times: int | None = 1, mode: DropMode = DropMode.EMPTY) -> int:
        return self._ctx.faults.drop_polls(times, mode)

    def sweep(self) -> None:
        """Apply the service's timeouts now, on the injected clock alone (no real-time grace):
        runner connections silent too long are lost (their jobs fail), idle sessions expire."""
        self._ctx.service.sweep(strict=True)

    # --------------------------------------------------------------------- ground truth

    def statistics(self, scale_set_id: int) -> Statistics:
        """What a message would carry now (honours the stale-statistics fault)."""
        return self._ctx.service.statistics(scale_set_id)

    def snapshot(self) -> GroundTruth:
        service = self._ctx.service
        service.sweep()
        return GroundTruth(
            at=service.now(),
            scale_sets=tuple(
                ScaleSetTruth(
                    id=s.id,
                    tenant_id=s.tenant_id,
                    name=s.name,
                    runner_group_id=s.runner_group_id,
                    labels=tuple(label.name for label in s.labels),
                    max_capacity=s.max_capacity,
                    statistics=service.fresh_statistics(s.id),
                )
                for s in sorted(service.scale_sets.values(), key=lambda s: s.id)
            ),
            runners=tuple(
                RunnerTruth(
                    id=r.id,
                    name=r.name,
                    tenant_id=r.tenant_id,
                    scale_set_id=r.scale_set_id,
                    registered=r.registered,
                    removed_reason=r.removed_reason,
                    busy=r.busy,
                    job_request_id=r.job_request_id,
                    connected=r.session is not None,
                    polling=r.session is not None and r.session.active_polls > 0,
                    jobs_taken=r.jobs_taken,
                    session_rejections=tuple(r.session_rejections),
                    last_rejection_at=r.last_rejection_at,
                )
                for r in sorted(service.runners.values(), key=lambda r: r.id)
            ),
            jobs=tuple(_job_truth(j) for j in sorted(service.jobs.values(), key=lambda j: j.id)),
            sessions=tuple(
                SessionTruth(
                    session_id=s.id,
                    scale_set_id=s.scale_set_id,
                    owner_name=s.owner_name,
                    mq_token_expires_at=s.mq_token_expires_at,
                    last_activity=s.last_activity,
                    polling=s.active_polls > 0,
                    polls=s.polls,
                    pending_events=len(s.pending),
                    undelivered_or_unacked_messages=len(s.messages),
                    deleted_messages=s.deleted_messages,
                )
                for s in service.sessions.values()
            ),
        )

    def job_event(self, request_id: int, kind: JobEventKind) -> JobEventTruth | None:
        """What became of the latest ``kind`` event of job ``request_id`` (``None``: none
        happened)."""
        trace = self._ctx.service.event_traces.get((request_id, kind))
        return None if trace is None else JobEventTruth.of(trace)

    async def wait_for(
        self,
        condition: Callable[[GroundTruth], bool],
        *,
        within: float = 10.0,
        what: str = "condition",
    ) -> GroundTruth:
        """Wait (bounded, in real seconds) until ``condition`` holds on a fresh snapshot;
        wakes on every state change rather than polling on a timer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            truth = self.snapshot()
            if condition(truth):
                return truth
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"fake GitHub: {what} did not hold within {within} s")
            await self._ctx.pulse.wait(min(remaining, 0.5))

    @property
    def requests(self) -> list[RequestRecord]:
        """Every request answered so far (method, path, query, status; no credentials)."""
        return list(self._ctx.requests)

    def requests_to(self, path_contains: str, method: str | None = None) -> list[RequestRecord]:
        return [
            r
            for r in self._ctx.requests
            if path_contains in r.path and (method is None or r.method == method.upper())
        ]

    def clear_requests(self) -> None:
        self._ctx.requests.clear()

    def issued_secrets(self) -> list[str]:
        """Every credential, token, private key and JIT config the fake knows or issued —
        for tests that assert none of them appears in logs or error text."""
        return self._ctx.authority.issued_secrets() + list(self._ctx.service.issued_mq_tokens)

    def assumptions_relied_on(self) -> list[LedgerEntry]:
        """The ledger's assumptions that this fake's answers have depended on so far, in ledger
        order — what ``scaleset demo`` prints so its results are read with them in mind."""
        used = self._ctx.service.relied_on | self._ctx.authority.relied_on
        return [entry for entry in assumptions() if entry.key in used]


def _job_truth(job: Job) -> JobTruth:
    return JobTruth(
        request_id=job.id,
        job_id=job.job_id,
        state=job.state,
        labels=job.labels,
        owner=job.owner,
        repository=job.repository,
        scale_set_id=job.scale_set_id,
        runner_id=job.runner_id,
        runner_name=job.runner_name,
        result=job.result,
        cancel_requested=job.cancel_requested,
        queue_time=job.queue_time,
        scale_set_assign_time=job.scale_set_assign_time,
        runner_assign_time=job.runner_assign_time,
        start_time=job.start_time,
        finish_time=job.finish_time,
    )
