"""Decode a long-poll message and its double-encoded job batch.

The outer message must decode (the caller needs `messageId` to acknowledge it). Inside, the
`body` string holds a JSON array of job messages. Nothing is raised for a bad batch or entry;
what was skipped is counted in two kinds, because they mean different things (lifecycle.md L8):

- ``unknown``: an entry whose `messageType` is a string we do not know — a new type from GitHub.
  Logged at debug (the type name and position only) and ignored: it must never block the queue.
- ``malformed``: the body is not a JSON array, or an entry is not an object, has no
  `messageType`, or is a known type whose fields do not validate. Logged as a warning (field
  names and positions only, never payloads): something we should read could not be read.

An outer `messageType` other than RunnerScaleSetJobMessages is logged and yields a message with
no jobs, so the listener can decide what to do with it (the Go listener exits instead).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from pydantic import ValidationError

from scaleset.github.models import (
    JOB_MESSAGES_TYPE,
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobMessage,
    JobStarted,
    RawMessage,
    RunnerScaleSetStatistic,
)
from scaleset.logs import get_logger

log = get_logger(__name__)

_JOB_TYPES: dict[str, type[JobMessage]] = {
    "JobAvailable": JobAvailable,
    "JobAssigned": JobAssigned,
    "JobStarted": JobStarted,
    "JobCompleted": JobCompleted,
}

_Job = TypeVar("_Job", JobAvailable, JobAssigned, JobStarted, JobCompleted)


@dataclass(frozen=True)
class RunnerScaleSetMessage:
    """A decoded message: id (to acknowledge), statistics, its job messages in order, and how
    many entries were skipped as of an unknown type or as malformed (module docstring)."""

    message_id: int
    message_type: str
    statistics: RunnerScaleSetStatistic | None
    jobs: tuple[JobMessage, ...] = ()
    unknown: int = 0
    malformed: int = 0

    @property
    def skipped(self) -> int:
        """Entries that yielded no job, of either kind."""
        return self.unknown + self.malformed

    @property
    def job_available(self) -> tuple[JobAvailable, ...]:
        return _of_type(self.jobs, JobAvailable)

    @property
    def job_assigned(self) -> tuple[JobAssigned, ...]:
        return _of_type(self.jobs, JobAssigned)

    @property
    def job_started(self) -> tuple[JobStarted, ...]:
        return _of_type(self.jobs, JobStarted)

    @property
    def job_completed(self) -> tuple[JobCompleted, ...]:
        return _of_type(self.jobs, JobCompleted)


def decode_message(raw: RawMessage) -> RunnerScaleSetMessage:
    """Decode the job batch of `raw`; never raises for a bad batch or a bad entry."""
    if raw.message_type != JOB_MESSAGES_TYPE:
        log.warning(
            "skipping a message of unsupported type",
            message_id=raw.message_id,
            message_type=raw.message_type[:100],
        )
        return RunnerScaleSetMessage(raw.message_id, raw.message_type, raw.statistics)
    batch = decode_job_batch(raw.body or "", message_id=raw.message_id)
    return RunnerScaleSetMessage(
        raw.message_id,
        raw.message_type,
        raw.statistics,
        tuple(batch.jobs),
        batch.unknown,
        batch.malformed,
    )


class JobBatch(NamedTuple):
    """The decoded entries of one body, and how many were skipped, by kind."""

    jobs: list[JobMessage]
    unknown: int = 0
    malformed: int = 0


class _Skipped(enum.Enum):
    """Why an entry yielded no job."""

    UNKNOWN = enum.auto()
    MALFORMED = enum.auto()


def decode_job_batch(body: str, *, message_id: int = 0) -> JobBatch:
    """Decode the JSON array in a message body."""
    if not body.strip():
        return JobBatch([])
    try:
        entries = json.loads(body)
    except ValueError as error:
        log.warning(
            "message body is not valid JSON; no job read", message_id=message_id, error=str(error)
        )
        return JobBatch([], malformed=1)
    except RecursionError:
        log.warning("message body is nested too deeply; no job read", message_id=message_id)
        return JobBatch([], malformed=1)
    if not isinstance(entries, list):
        log.warning("message body is not a JSON array; no job read", message_id=message_id)
        return JobBatch([], malformed=1)

    jobs: list[JobMessage] = []
    unknown = malformed = 0
    for position, entry in enumerate(entries):
        job = _decode_job(entry, message_id=message_id, position=position)
        if job is _Skipped.UNKNOWN:
            unknown += 1
        elif job is _Skipped.MALFORMED:
            malformed += 1
        else:
            jobs.append(job)
    return JobBatch(jobs, unknown, malformed)


def _decode_job(entry: object, *, message_id: int, position: int) -> JobMessage | _Skipped:
    """The job message, or why there is none."""
    if not isinstance(entry, dict):
        log.warning(
            "skipping a job entry that is not an object", message_id=message_id, entry=position
        )
        return _Skipped.MALFORMED
    message_type = entry.get("messageType")
    if not isinstance(message_type, str):
        log.warning(
            "skipping a job entry without a message type",
            message_id=message_id,
            entry=position,
            message_type=type(message_type).__name__,
        )
        return _Skipped.MALFORMED
    job_type = _JOB_TYPES.get(message_type)
    if job_type is None:
        log.debug(
            "ignoring a job message of unknown type",
            message_id=message_id,
            entry=position,
            message_type=message_type[:100],
        )
        return _Skipped.UNKNOWN
    try:
        return job_type.model_validate(entry)
    except ValidationError as error:
        fields = sorted({".".join(str(part) for part in err["loc"]) for err in error.errors()})
        log.warning(
            "skipping a malformed job message",
            message_id=message_id,
            entry=position,
            message_type=message_type,
            bad_fields=", ".join(fields),
        )
        return _Skipped.MALFORMED


def _of_type(jobs: tuple[JobMessage, ...], job_type: type[_Job]) -> tuple[_Job, ...]:
    return tuple(job for job in jobs if isinstance(job, job_type))
