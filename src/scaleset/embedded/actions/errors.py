"""Errors the fake answers with, one class per wire shape.

    FakeHttpError                 any refusal; carries the HTTP status
    ├── ActionsError              Actions service: JSON {"typeName", "message", ...} (spec §2.1)
    ├── GitHubApiError            GitHub REST: JSON {"message", "documentation_url"}
    └── PlainError                text/plain body, or no body at all (e.g. the MQ-token 401)

Exception type names are the ones listed in the protocol spec (§2.1, §2.2) or, where the spec has
none, marked as assumptions in the fidelity ledger. Messages never contain a credential.
"""

from __future__ import annotations

ACTIONS_PREFIX = "GitHub.Actions.Runtime.WebApi."
TASK_PREFIX = "GitHub.DistributedTask.WebApi."
VSS_PREFIX = "Microsoft.VisualStudio.Services.WebApi."

AGENT_EXISTS = TASK_PREFIX + "TaskAgentExistsException"
AGENT_NOT_FOUND = TASK_PREFIX + "TaskAgentNotFoundException"
JOB_STILL_RUNNING = TASK_PREFIX + "JobStillRunningException"
RUNNER_SESSION_CONFLICT = TASK_PREFIX + "TaskAgentSessionConflictException"
SCALE_SET_NOT_FOUND = ACTIONS_PREFIX + "RunnerScaleSetNotFoundException"
SCALE_SET_EXISTS = ACTIONS_PREFIX + "RunnerScaleSetExistsException"
SESSION_CONFLICT = ACTIONS_PREFIX + "RunnerScaleSetSessionConflictException"
SESSION_EXPIRED = ACTIONS_PREFIX + "RunnerScaleSetSessionExpiredException"
SESSION_NOT_FOUND = ACTIONS_PREFIX + "RunnerScaleSetSessionNotFoundException"
RUNNER_GROUP_NOT_FOUND = TASK_PREFIX + "TaskAgentPoolNotFoundException"
JOB_NOT_FOUND = TASK_PREFIX + "TaskOrchestrationJobNotFoundException"
INVALID_ARGUMENT = "System.ArgumentException"
UNAUTHORIZED = "System.UnauthorizedAccessException"
VERSION_NOT_SPECIFIED = VSS_PREFIX + "VssVersionNotSpecifiedException"
VERSION_NOT_SUPPORTED = VSS_PREFIX + "VssVersionNotSupportedException"
RESOURCE_NOT_FOUND = VSS_PREFIX + "VssResourceNotFoundException"
RUNNER_VERSION_DEPRECATED = TASK_PREFIX + "AccessDeniedException"
"""The broker refusing a deprecated runner version (ledger I-RUNNER-DEPRECATED; the type name
is the fake's, A-RUNNER-PROTOCOL)."""


class FakeHttpError(Exception):
    """A request the fake refuses; ``status`` is the HTTP status it answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ActionsError(FakeHttpError):
    """An Actions-service exception, sent as ``{"typeName": ..., "message": ...}``."""

    def __init__(self, status: int, type_name: str, message: str) -> None:
        super().__init__(status, message)
        self.type_name = type_name


class GitHubApiError(FakeHttpError):
    """A GitHub REST error, sent as ``{"message": ..., "documentation_url": ...}``."""


class PlainError(FakeHttpError):
    """An error with a ``text/plain`` body, or with no body when ``message`` is empty."""
