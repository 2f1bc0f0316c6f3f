"""Typed wire models of the Actions service and the GitHub REST API.

Actions JSON is camelCase (`RunnerSetting` has a capital R, `encodedJITConfig` is spelled as
on the wire); GitHub REST JSON is snake_case. Tokens and JIT configs are `SecretStr`, and every
model hides its input in validation errors, so neither a repr nor a failed decode shows them.
Go's zero timestamp `0001-01-01T00:00:00Z` is read as "unset" (None).

JSON `null` is read as Go reads it: the field keeps its zero value (a `null` member is treated
as absent, so the field gets its default: "", 0, False, (), None; a `null` array element becomes
"", 0 or an all-default object). Only the few fields without which an object cannot be acted on
have no default (ids we act on, tokens, URLs, the message id to acknowledge): absent or null,
they fail the decode with the field named, rather than letting us act on id 0 or an empty token.
"""

from __future__ import annotations

import functools
import types
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    model_validator,
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


def _element_zero(annotation: Any) -> object:
    """Go's zero value for an element of a `tuple[X, ...]` field, or None when X has none."""
    if get_origin(annotation) is not tuple:
        return None
    element = get_args(annotation)[0]
    if get_origin(element) in (Union, types.UnionType):
        return None  # an optional element: null is a value
    if element is str:
        return ""
    if element is int:
        return 0
    if isinstance(element, type) and issubclass(element, BaseModel):
        return {}
    return None


class WireModel(BaseModel):
    """Base of every wire model: JSON `null` is read as Go reads it (see the module docs)."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_the_zero_value(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        zeros = _element_zeros(cls)
        cleaned: dict[Any, Any] = {}
        for key, value in data.items():
            if value is None:
                continue
            zero = zeros.get(key)
            if zero is not None and isinstance(value, list):
                value = [zero if item is None else item for item in value]
            cleaned[key] = value
        return cleaned


@functools.cache
def _element_zeros(model: type[BaseModel]) -> dict[str, object]:
    """Input key (name and aliases) -> zero value of the elements of the model's array fields."""
    zeros: dict[str, object] = {}
    for name, info in model.model_fields.items():
        zero = _element_zero(info.annotation)
        if zero is None:
            continue
        keys = {name, info.alias or "", to_camel(name)}
        if isinstance(info.validation_alias, AliasChoices):
            keys.update(c for c in info.validation_alias.choices if isinstance(c, str))
        elif isinstance(info.validation_alias, str):
            keys.add(info.validation_alias)
        zeros.update(dict.fromkeys(keys - {""}, zero))
    return zeros


class ActionsModel(WireModel):
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


class GitHubModel(WireModel):
    """Base of GitHub REST objects: snake_case on the wire, unknown keys ignored."""

    model_config = ConfigDict(hide_input_in_errors=True, extra="ignore", frozen=True)


# --- scale sets, groups, runners -------------------------------------------------------------


class Label(ActionsModel):
    name: str = ""
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
    name: str = ""
    size: int = 0
    is_default_group: bool = False


class RunnerReference(ActionsModel):
    """A registered runner ("agent") as the Actions service knows it."""

    id: int
    name: str = ""
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
    name: str = ""
    type: str = ""


class GitHubRunner(GitHubModel):
    """A self-hosted runner from the public REST runners list of an org/repo/enterprise."""

    id: int
    name: str = ""
    os: str = ""
    status: str = ""
    busy: bool = False
    ephemeral: bool | None = None
    runner_group_id: int | None = None
    labels: tuple[GitHubRunnerLabel, ...] = ()


class GitHubRunnerPage(GitHubModel):
    total_count: int
    runners: tuple[GitHubRunner, ...] = ()
