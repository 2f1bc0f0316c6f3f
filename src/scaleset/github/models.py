"""Typed wire models of the Actions service and the GitHub REST API (protocol §2.4, §4.5).

Actions JSON is camelCase (`RunnerSetting` has a capital R, `encodedJITConfig` is spelled as
on the wire); GitHub REST JSON is snake_case. Tokens and JIT configs are `SecretStr`, and every
model hides its input in validation errors, so neither a repr nor a failed decode shows them.
Go's zero timestamp `0001-01-01T00:00:00Z` is read as "unset" (None).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
)
from pydantic.alias_generators import to_camel

DEFAULT_LABEL_TYPE = "System"
JOB_MESSAGES_TYPE = "RunnerScaleSetJobMessages"


def _unset_zero_time(value: object) -> object:
    if isinstance(value, str) and value.startswith("0001-01-01"):
        return None
    if isinstance(value, datetime) and value.year == 1:
        return None
    return value


Timestamp = Annotated[datetime | None, BeforeValidator(_unset_zero_time)]


class ActionsModel(BaseModel):
    """Base of Actions-service objects: camelCase on the wire, unknown keys ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        hide_input_in_errors=True,
        extra="ignore",
        frozen=True,
    )


class GitHubModel(BaseModel):
    """Base of GitHub REST objects: snake_case on the wire, unknown keys ignored."""

    model_config = ConfigDict(hide_input_in_errors=True, extra="ignore", frozen=True)


# --- scale sets, groups, runners -------------------------------------------------------------


class Label(ActionsModel):
    name: str
    type: str = ""


class RunnerSetting(ActionsModel):
    disable_update: bool = False


class RunnerScaleSetStatistic(ActionsModel):
    """Job and runner counters of a scale set; `total_assigned_jobs` is the scaling signal."""

    total_available_jobs: int = 0
    total_acquired_jobs: int = 0
    total_assigned_jobs: int = 0
    total_running_jobs: int = 0
    total_registered_runners: int = 0
    total_busy_runners: int = 0
    total_idle_runners: int = 0


class RunnerScaleSet(ActionsModel):
    """A runner scale set; also the request body of create (#3) and update (#4)."""

    id: int = 0
    name: str = ""
    runner_group_id: int = 0
    runner_group_name: str = ""
    labels: tuple[Label, ...] = ()
    runner_setting: RunnerSetting = Field(
        default_factory=RunnerSetting,
        validation_alias=AliasChoices("RunnerSetting", "runnerSetting", "runner_setting"),
        serialization_alias="RunnerSetting",
    )
    created_on: Timestamp = None
    runner_jit_config_url: str = ""
    statistics: RunnerScaleSetStatistic | None = None

    def to_request_body(self) -> dict[str, object]:
        """The JSON body Go would send: empty fields omitted, `RunnerSetting` always present."""
        body = self.model_dump(
            mode="json",
            by_alias=True,
            exclude_defaults=True,
            exclude={"runner_setting", "created_on", "statistics"},
        )
        body["RunnerSetting"] = self.runner_setting.model_dump(
            mode="json", by_alias=True, exclude_defaults=True
        )
        return body


class RunnerGroup(ActionsModel):
    id: int
    name: str
    size: int = 0
    is_default_group: bool = False


class RunnerReference(ActionsModel):
    """A registered runner ("agent") as the Actions service knows it."""

    id: int
    name: str
    runner_scale_set_id: int = 0


class JitRunnerConfig(ActionsModel):
    """Answer of generatejitconfig: the new runner and its opaque, secret JIT config."""

    runner: RunnerReference
    encoded_jit_config: SecretStr = Field(
        validation_alias=AliasChoices("encodedJITConfig", "encoded_jit_config")
    )


class AcquireJobsResult(ActionsModel):
    count: int = 0
    value: tuple[int, ...] = ()


# --- sessions and messages ----------------------------------------------------------------


class RunnerScaleSetSession(ActionsModel):
    """A message session: its queue URL and queue token (secret), plus initial statistics."""

    session_id: uuid.UUID
    owner_name: str = ""
    runner_scale_set: RunnerScaleSet | None = None
    message_queue_url: str
    message_queue_access_token: SecretStr
    statistics: RunnerScaleSetStatistic | None = None


class RawMessage(ActionsModel):
    """The outer long-poll message; `body` is a JSON array encoded as a string."""

    message_id: int
    message_type: str = ""
    body: str | None = ""
    statistics: RunnerScaleSetStatistic | None = None


class JobMessageBase(ActionsModel):
    """Fields common to every job message in a message body (§4.5)."""

    runner_request_id: int = 0
    repository_name: str = ""
    owner_name: str = ""
    job_id: str = ""
    job_workflow_ref: str = ""
    job_display_name: str = ""
    workflow_run_id: int = 0
    event_name: str = ""
    request_labels: tuple[str, ...] = ()
    queue_time: Timestamp = None
    scale_set_assign_time: Timestamp = None
    runner_assign_time: Timestamp = None
    finish_time: Timestamp = None


class JobAvailable(JobMessageBase):
    message_type: Literal["JobAvailable"] = "JobAvailable"
    acquire_job_url: str = ""


class JobAssigned(JobMessageBase):
    message_type: Literal["JobAssigned"] = "JobAssigned"


class JobStarted(JobMessageBase):
    message_type: Literal["JobStarted"] = "JobStarted"
    runner_id: int = 0
    runner_name: str = ""


class JobCompleted(JobMessageBase):
    message_type: Literal["JobCompleted"] = "JobCompleted"
    result: str = ""
    runner_id: int = 0
    runner_name: str = ""


JobMessage = JobAvailable | JobAssigned | JobStarted | JobCompleted


# --- GitHub REST --------------------------------------------------------------------------


class RegistrationToken(GitHubModel):
    """A runner registration token or an App installation token (both `{token, expires_at}`)."""

    token: SecretStr
    expires_at: datetime | None = None


class AdminConnection(GitHubModel):
    """Answer of /actions/runner-registration: the Actions service URL and its admin JWT."""

    url: Annotated[str, Field(min_length=1)]
    token: SecretStr


class GitHubRunnerLabel(GitHubModel):
    id: int | None = None
    name: str
    type: str = ""


class GitHubRunner(GitHubModel):
    """A self-hosted runner from the public REST runners list of an org/repo/enterprise."""

    id: int
    name: str
    os: str = ""
    status: str = ""
    busy: bool = False
    ephemeral: bool | None = None
    runner_group_id: int | None = None
    labels: tuple[GitHubRunnerLabel, ...] = ()


class GitHubRunnerPage(GitHubModel):
    total_count: int
    runners: tuple[GitHubRunner, ...] = ()
