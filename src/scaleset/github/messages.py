"""Decode a long-poll message and its double-encoded job batch (protocol §4.2, §4.5).

The outer message must decode (the caller needs `messageId` to acknowledge it). Inside, the
`body` string holds a JSON array of job messages: unknown job types and malformed entries are
logged (type names and positions only, never payloads) and skipped, never raised. An outer
`messageType` other than RunnerScaleSetJobMessages is logged and yields a message with no jobs,
so the listener can acknowledge it and carry on (the Go listener exits instead).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TypeVar

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
    """A decoded message: id (to acknowledge), statistics, and its job messages in order."""

    message_id: int
    message_type: str
    statistics: RunnerScaleSetStatistic | None
    jobs: tuple[JobMessage, ...] = ()
    skipped: int = 0

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
    jobs, skipped = decode_job_batch(raw.body or "", message_id=raw.message_id)
    return RunnerScaleSetMessage(
        raw.message_id, raw.message_type, raw.statistics, tuple(jobs), skipped
    )


def decode_job_batch(body: str, *, message_id: int = 0) -> tuple[list[JobMessage], int]:
    """Decode the JSON array in a message body; returns (jobs, number of entries skipped)."""
    if not body.strip():
        return [], 0
    try:
        entries = json.loads(body)
    except ValueError as error:
        log.warning(
            "message body is not valid JSON; no job read", message_id=message_id, error=str(error)
        )
        return [], 1
    except RecursionError:
        log.warning("message body is nested too deeply; no job read", message_id=message_id)
        return [], 1
    if not isinstance(entries, list):
        log.warning("message body is not a JSON array; no job read", message_id=message_id)
        return [], 1

    jobs: list[JobMessage] = []
    skipped = 0
    for position, entry in enumerate(entries):
        job = _decode_job(entry, message_id=message_id, position=position)
        if job is None:
            skipped += 1
        else:
            jobs.append(job)
    return jobs, skipped


def _decode_job(entry: object, *, message_id: int, position: int) -> JobMessage | None:
    if not isinstance(entry, dict):
        log.warning(
            "skipping a job entry that is not an object", message_id=message_id, entry=position
        )
        return None
    message_type = entry.get("messageType")
    job_type = _JOB_TYPES.get(message_type) if isinstance(message_type, str) else None
    if job_type is None:
        shown = message_type[:100] if isinstance(message_type, str) else type(message_type).__name__
        log.info(
            "skipping a job message of unknown type",
            message_id=message_id,
            entry=position,
            message_type=shown,
        )
        return None
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
        return None


def _of_type(jobs: tuple[JobMessage, ...], job_type: type[_Job]) -> tuple[_Job, ...]:
    return tuple(job for job in jobs if isinstance(job, job_type))
