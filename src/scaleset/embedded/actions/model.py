"""The fake service's records: scopes, tenants, runner groups, scale sets, runners, jobs, sessions.

Plain mutable dataclasses owned by ``ActionsService``; nothing here talks HTTP or reads a clock.
Times are Unix seconds (``None`` = not happened yet).
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


class ScopeKind(enum.StrEnum):
    """What a GitHub config URL points at (spec §1.1)."""

    ORGANIZATION = "organization"
    REPOSITORY = "repository"
    ENTERPRISE = "enterprise"


@dataclass(frozen=True)
class Scope:
    """An organization, a repository or an enterprise. Names compare case-insensitively."""

    kind: ScopeKind
    owner: str
    """The organization, the repository owner, or the enterprise slug."""
    repository: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind.value, self.owner.lower(), self.repository.lower())

    @property
    def path(self) -> str:
        """The config-URL path for this scope, without slashes at either end."""
        if self.kind is ScopeKind.ENTERPRISE:
            return f"enterprises/{self.owner}"
        if self.kind is ScopeKind.REPOSITORY:
            return f"{self.owner}/{self.repository}"
        return self.owner

    def covers(self, other: Scope) -> bool:
        """Whether a credential limited to this scope may act on ``other``.

        A scope covers itself, and an organization covers its repositories.
        """
        if self.key == other.key:
            return True
        return (
            self.kind is ScopeKind.ORGANIZATION
            and other.kind is ScopeKind.REPOSITORY
            and self.owner.lower() == other.owner.lower()
        )


def parse_scope_path(path: str) -> Scope:
    """Parse the path of a config URL (``org``, ``owner/repo``, ``enterprises/slug``) per §1.1."""
    parts = [part for part in path.strip("/").split("/")]
    if len(parts) == 1 and parts[0]:
        return Scope(ScopeKind.ORGANIZATION, parts[0])
    if len(parts) == 2 and all(parts):
        if parts[0].lower() == "enterprises":
            return Scope(ScopeKind.ENTERPRISE, parts[1])
        return Scope(ScopeKind.REPOSITORY, parts[0], parts[1])
    raise ValueError("invalid config URL, should point to an enterprise, org, or repository")


def parse_config_url(url: str) -> Scope:
    """Parse a whole config URL (scheme and host are not checked) into its scope."""
    trimmed = url.strip().strip("/")
    if not trimmed:
        raise ValueError("empty config URL")
    return parse_scope_path(urlsplit(trimmed).path)


@dataclass
class Tenant:
    """The Actions-service side of one scope: its runner groups, scale sets and runners."""

    id: int
    scope: Scope


@dataclass
class RunnerGroup:
    id: int
    tenant_id: int
    name: str
    is_default: bool


@dataclass(frozen=True)
class Label:
    name: str
    type: str


@dataclass
class ScaleSet:
    id: int
    tenant_id: int
    name: str
    runner_group_id: int
    labels: list[Label]
    runner_setting: dict[str, Any]
    created_on: float
    max_capacity: int | None = None
    """The last ``X-ScaleSetMaxCapacity`` its listener sent; ``None`` = never told (unlimited)."""


class JobState(enum.StrEnum):
    """Where a job is. ``assigned`` and later count towards the scale set's assigned jobs."""

    QUEUED = "queued"
    """No scale set takes it yet (no label match, or every match is at capacity)."""
    AVAILABLE = "available"
    """Offered to a scale set with JobAvailable; waits for acquirejobs (acquire delivery)."""
    ASSIGNED = "assigned"
    """Assigned to a scale set; waits for one of its runners."""
    DISPATCHED = "dispatched"
    """Handed to a runner that has not reported the start yet (the runner is busy)."""
    RUNNING = "running"
    COMPLETED = "completed"


ACTIVE_JOB_STATES = frozenset({JobState.ASSIGNED, JobState.DISPATCHED, JobState.RUNNING})
BUSY_JOB_STATES = frozenset({JobState.DISPATCHED, JobState.RUNNING})


@dataclass
class Job:
    """One workflow job (a runner request). ``id`` is the ``runnerRequestId``."""

    id: int
    job_id: str
    labels: tuple[str, ...]
    owner: str
    repository: str
    enterprise: str | None
    workflow_ref: str
    display_name: str
    event_name: str
    workflow_run_id: int
    duration_seconds: float
    planned_result: str
    queue_time: float
    state: JobState = JobState.QUEUED
    scale_set_id: int | None = None
    runner_id: int | None = None
    runner_name: str = ""
    acquired: bool = False
    cancel_requested: bool = False
    result: str | None = None
    scale_set_assign_time: float | None = None
    runner_assign_time: float | None = None
    start_time: float | None = None
    finish_time: float | None = None


class JobEventKind(enum.StrEnum):
    AVAILABLE = "JobAvailable"
    ASSIGNED = "JobAssigned"
    STARTED = "JobStarted"
    COMPLETED = "JobCompleted"


@dataclass(frozen=True)
class JobEvent:
    """A job message as it was when the event happened (its fields never change afterwards)."""

    kind: JobEventKind
    runner_request_id: int
    job_id: str
    owner: str
    repository: str
    workflow_ref: str
    display_name: str
    workflow_run_id: int
    event_name: str
    labels: tuple[str, ...]
    scale_set_id: int
    queue_time: float | None
    scale_set_assign_time: float | None
    runner_assign_time: float | None
    finish_time: float | None
    runner_id: int = 0
    runner_name: str = ""
    result: str = ""


class EventDrop(enum.StrEnum):
    """Why the service dropped a job event before its message was acknowledged."""

    NO_SESSION = "no-session"
    """The scale set had no session when the event happened (nobody to queue it for)."""
    SESSION_EXPIRED = "session-expired"
    """The session was expired by the service (idle timeout, or ``expire_session``)."""
    SESSION_DELETED = "session-deleted"
    """The session was deleted by its listener (a DELETE of the session)."""
    SCALE_SET_DELETED = "scale-set-deleted"


@dataclass
class EventTrace:
    """What became of one job event: ground truth kept for the demo's report (when it was
    queued, first delivered in a message, acknowledged, or dropped and why). Times are the
    service clock's wall time."""

    kind: JobEventKind
    request_id: int
    emitted_at: float
    session_id: str | None
    delivered_at: float | None = None
    """When a poll first carried it (the listener may still have lost the response)."""
    acked_at: float | None = None
    """When its message was deleted (the listener acknowledged it)."""
    dropped_at: float | None = None
    dropped_why: EventDrop | None = None


@dataclass(frozen=True)
class Message:
    """One ``RunnerScaleSetJobMessages`` message: up to the batch cap of job events."""

    id: int
    events: tuple[JobEvent, ...]


@dataclass
class ScaleSetSession:
    """A listener's message session on one scale set, with its queue (spec §4)."""

    id: str
    scale_set_id: int
    owner_name: str
    created_at: float
    mq_token: str = field(repr=False)
    mq_token_expires_at: float
    last_activity: float
    last_activity_real: float = 0.0
    """``last_activity`` on the real monotonic clock (see ``liveness_grace_real_seconds``)."""
    pending: deque[JobEvent] = field(default_factory=deque)
    messages: list[Message] = field(default_factory=list)
    """Formed and not yet deleted, in id order."""
    active_polls: int = 0
    polls: int = 0
    deleted_messages: int = 0


@dataclass
class RunnerSession:
    """A runner process's connection to the broker (runner side, assumed protocol)."""

    id: str
    created_at: float
    last_seen: float
    last_seen_real: float = 0.0
    active_polls: int = 0


@dataclass
class Runner:
    """A runner registration ("agent"), created by generatejitconfig."""

    id: int
    tenant_id: int
    scale_set_id: int
    name: str
    work_folder: str
    created_at: float
    credential_digest: str
    job_request_id: int | None = None
    """The job it holds (dispatched or running); ``None`` when idle."""
    jobs_taken: int = 0
    session: RunnerSession | None = None
    removed_at: float | None = None
    removed_reason: str = ""
    session_rejections: list[str] = field(default_factory=list)
    """Why runner-session attempts were refused (``conflict``, ``registration-deleted``)."""
    last_rejection_at: float | None = None

    @property
    def busy(self) -> bool:
        return self.job_request_id is not None

    @property
    def registered(self) -> bool:
        return self.removed_at is None
