"""Every exception the GitHub / Actions client raises, in one tree.

```
GitHubError                      base of everything below
├── InvalidCredentials           PAT / GitHub App credentials unusable, e.g. a bad PEM (ValueError)
├── InvalidRequest               rejected before sending, e.g. negative capacity (ValueError)
├── RunnerGroupNotFound          runner-group lookup by name found nothing
├── TransportFailure             no usable HTTP response was obtained
│   ├── RetriesExhausted         retryable failures (5xx, 429, network) hit the retry bound;
│   │   │                        carries the last status and (redacted) body
│   │   └── DeadlineExceeded     ... or the call's time budget: the next wait would outlast it
│   ├── TlsVerificationFailed    the server certificate is not trusted (never retried)
│   ├── ResponseTooLarge         the answer is larger than any real one (`max_body_bytes`):
│   │                            refused unread or cut off at the limit (never retried)
│   └── ResponseLost             the request may have been processed but the answer was lost,
│                                and the call is not safe to repeat (message-session creation,
│                                JIT config generation)
└── ResponseError                the server answered, but not with the expected success
    ├── UnexpectedResponse       a success status whose body breaks the contract (undecodable,
    │                            "multiple found", admin token without `exp`, ...)
    ├── GitHubApiError           GitHub REST API (token endpoints, runner-registration, runner list)
    └── ActionsServiceError      Actions service; carries the .NET `typeName` and `message`
        ├── RunnerExists               typeName contains AgentExistsException
        ├── RunnerNotFound             typeName contains AgentNotFoundException
        ├── JobStillRunning            typeName contains JobStillRunningException
        ├── SessionConflict            typeName contains RunnerScaleSetSessionConflictException
        ├── SessionNotFound            typeName contains RunnerScaleSetSessionExpiredException
        │                              or RunnerScaleSetSessionNotFoundException
        ├── ScaleSetNotFound           typeName contains RunnerScaleSetNotFoundException
        └── MessageQueueTokenExpired   401 on a message-queue call (GET/DELETE message, acquire)
```

Classification keys on the exception type name sent by the service, never on the status code
alone: 409 means both SessionConflict and RunnerExists. The one status-keyed case is
MessageQueueTokenExpired, which the protocol signals by 401 on message-queue calls only.

A configure URL that is not an enterprise, org or repository URL raises
`scaleset.api.config_url.InvalidConfigUrl` (a ValueError; re-exported here), the one error of
the one parser that CRD validation, the listener and this client share.

No exception text ever contains a credential: messages carry the method, URL, status line,
correlation ids and the body of *error* responses only (bodies of success responses, which may
hold tokens or JIT configs, are never quoted; error bodies are quoted with credentials masked).
"""

from __future__ import annotations

from scaleset.api.config_url import InvalidConfigUrl

__all__ = ["InvalidConfigUrl"]  # re-exported: the one config-URL error (scaleset.api)


class GitHubError(Exception):
    """Base class of every error raised by `scaleset.github`."""


class InvalidCredentials(GitHubError, ValueError):
    """Credentials are incomplete or unusable (the secret values are never quoted)."""


class InvalidRequest(GitHubError, ValueError):
    """The caller's arguments were rejected before any request was sent."""


class RunnerGroupNotFound(GitHubError):
    """No runner group has the requested name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no runner group found with name {name!r}")
        self.name = name


class TransportFailure(GitHubError):
    """The call produced no usable HTTP response."""

    def __init__(self, method: str, url: str, detail: str) -> None:
        super().__init__(f"request {method} {url} failed: {detail}")
        self.method = method
        self.url = url
        self.detail = detail


class RetriesExhausted(TransportFailure):
    """Every attempt failed with a retryable outcome; `last_status` is None for network errors,
    `body` is the last answer's body (truncated, credentials masked; empty if there was none)."""

    def __init__(
        self,
        method: str,
        url: str,
        attempts: int,
        last_status: int | None,
        last_error: str,
        *,
        body: str = "",
    ) -> None:
        detail = f"giving up after {attempts} attempt(s): {last_error}"
        if body:
            detail += f": {body}"
        super().__init__(method, url, detail)
        self.attempts = attempts
        self.last_status = last_status
        self.body = body


class DeadlineExceeded(RetriesExhausted):
    """The call's time budget (per kind of call) would run out during the next retry wait, a
    Retry-After included, so the call gave up early; `last_status` / `last_error` describe the
    last attempt (status None for a network error)."""

    def __init__(
        self,
        method: str,
        url: str,
        *,
        kind: str,
        budget: float,
        attempts: int,
        last_status: int | None,
        last_error: str,
        wait: float,
        left: float,
        body: str = "",
    ) -> None:
        reason = (
            f"the {budget:g} s budget of {kind} calls ran out"
            if wait == 0
            else f"a {wait:g} s wait would outlast the {budget:g} s budget of {kind} calls "
            f"({max(left, 0.0):.3g} s left)"
        )
        super().__init__(method, url, attempts, last_status, f"{reason}; {last_error}", body=body)
        self.kind = kind
        self.budget = budget
        self.last_error = last_error
        self.wait = wait


class TlsVerificationFailed(TransportFailure):
    """The server's certificate chain is not trusted by the configured root CAs."""


class ResponseTooLarge(TransportFailure):
    """The answer announced or sent more than `limit` body bytes: far more than any real
    answer, so a misbehaving server or proxy. The body is dropped unread past the limit, and the
    call is not repeated (the same server would send it again)."""

    def __init__(self, method: str, url: str, status: int, limit: int, announced: int | None):
        size = (
            f"announced {announced} bytes"
            if announced is not None
            else f"sent more than {limit} bytes"
        )
        super().__init__(
            method,
            url,
            f"the answer (status {status}) {size}, larger than the {limit} byte limit; "
            "not read, not retried",
        )
        self.status = status
        self.limit = limit
        self.announced = announced


class ResponseLost(TransportFailure):
    """The request may have reached the server but its answer was lost; not safe to repeat."""


class ResponseError(GitHubError):
    """The server answered with something other than the expected success."""

    def __init__(
        self,
        method: str,
        url: str,
        status: int,
        reason: str,
        detail: str,
        *,
        activity_id: str | None = None,
        github_request_id: str | None = None,
        body: str = "",
    ) -> None:
        ids = ""
        if activity_id:
            ids += f", activity_id={activity_id!r}"
        if github_request_id:
            ids += f", github_request_id={github_request_id!r}"
        super().__init__(
            f'request {method} {url} failed (status="{status} {reason}"{ids}): {detail}'
        )
        self.method = method
        self.url = url
        self.status = status
        self.reason = reason
        self.detail = detail
        self.activity_id = activity_id
        self.github_request_id = github_request_id
        self.body = body


class UnexpectedResponse(ResponseError):
    """A success status whose body does not satisfy the contract."""


class GitHubApiError(ResponseError):
    """The GitHub REST API (api.github.com or GHES /api/v3) rejected the call."""


class ActionsServiceError(ResponseError):
    """The Actions service rejected the call; `type_name` is the service's exception name."""

    def __init__(
        self,
        method: str,
        url: str,
        status: int,
        reason: str,
        detail: str,
        *,
        type_name: str | None = None,
        message: str | None = None,
        activity_id: str | None = None,
        github_request_id: str | None = None,
        body: str = "",
    ) -> None:
        super().__init__(
            method,
            url,
            status,
            reason,
            detail,
            activity_id=activity_id,
            github_request_id=github_request_id,
            body=body,
        )
        self.type_name = type_name
        self.message = message


class RunnerExists(ActionsServiceError):
    """A runner with that name is already registered (AgentExistsException)."""


class RunnerNotFound(ActionsServiceError):
    """No runner has that id (AgentNotFoundException)."""


class JobStillRunning(ActionsServiceError):
    """The runner is executing a job and cannot be removed yet (JobStillRunningException)."""


class SessionConflict(ActionsServiceError):
    """The scale set already has an active message session."""


class SessionNotFound(ActionsServiceError):
    """The message session is unknown or expired."""


class ScaleSetNotFound(ActionsServiceError):
    """The runner scale set does not exist."""


class MessageQueueTokenExpired(ActionsServiceError):
    """The message-queue access token was rejected (401); refresh the session and retry once."""


# Exception type names (substring match on `typeName`), most specific first.
ACTIONS_EXCEPTION_TYPES: tuple[tuple[str, type[ActionsServiceError]], ...] = (
    ("AgentExistsException", RunnerExists),
    ("AgentNotFoundException", RunnerNotFound),
    ("JobStillRunningException", JobStillRunning),
    ("RunnerScaleSetSessionConflictException", SessionConflict),
    ("RunnerScaleSetSessionExpiredException", SessionNotFound),
    ("RunnerScaleSetSessionNotFoundException", SessionNotFound),
    ("RunnerScaleSetNotFoundException", ScaleSetNotFound),
)
