"""GitHub Actions scale-set client: auth, Actions-service endpoints, sessions, wire models.

The public surface is re-exported here (the configure URL type, its parser and its error come
from `scaleset.api.config_url`, shared with CRD validation and the listener); modules:
`credentials` (PAT / GitHub App, App JWT), `auth` (admin token), `client` (endpoints), `session`
(message session with token refresh), `messages` (message decoding), `models` (wire types),
`errors` (exception tree), `retry`, `proxy`, `tls`, `transport`, `limiter`, `metrics`.
"""

from scaleset.api.config_url import GitHubConfigUrl, InvalidConfigUrl, Scope, parse_config_url
from scaleset.github.auth import ActionsServiceAdmin
from scaleset.github.client import ActionsClient
from scaleset.github.credentials import Credentials, GitHubApp, PersonalAccessToken
from scaleset.github.errors import (
    ActionsServiceError,
    DeadlineExceeded,
    GitHubApiError,
    GitHubError,
    InvalidCredentials,
    InvalidRequest,
    JobStillRunning,
    MessageQueueTokenExpired,
    ResponseError,
    ResponseLost,
    RetriesExhausted,
    RunnerExists,
    RunnerGroupNotFound,
    RunnerNotFound,
    ScaleSetNotFound,
    SessionConflict,
    SessionNotFound,
    TlsVerificationFailed,
    TransportFailure,
    UnexpectedResponse,
)
from scaleset.github.limiter import CredentialLimiters, RequestLimiter
from scaleset.github.messages import RunnerScaleSetMessage
from scaleset.github.metrics import GitHubApiMetrics
from scaleset.github.models import (
    GitHubRunner,
    JitRunnerConfig,
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobMessage,
    JobStarted,
    Label,
    RunnerGroup,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetSession,
    RunnerScaleSetStatistic,
    RunnerSetting,
)
from scaleset.github.proxy import ProxyConfig, ProxyServer
from scaleset.github.retry import RetryPolicy
from scaleset.github.session import MessageSessionClient
from scaleset.github.transport import CallKind, Timeouts
from scaleset.github.user_agent import SystemInfo

__all__ = [
    "ActionsClient",
    "ActionsServiceAdmin",
    "ActionsServiceError",
    "CallKind",
    "CredentialLimiters",
    "Credentials",
    "DeadlineExceeded",
    "GitHubApiError",
    "GitHubApiMetrics",
    "GitHubApp",
    "GitHubConfigUrl",
    "GitHubError",
    "GitHubRunner",
    "InvalidConfigUrl",
    "InvalidCredentials",
    "InvalidRequest",
    "JitRunnerConfig",
    "JobAssigned",
    "JobAvailable",
    "JobCompleted",
    "JobMessage",
    "JobStarted",
    "JobStillRunning",
    "Label",
    "MessageQueueTokenExpired",
    "MessageSessionClient",
    "PersonalAccessToken",
    "ProxyConfig",
    "ProxyServer",
    "RequestLimiter",
    "ResponseError",
    "ResponseLost",
    "RetriesExhausted",
    "RetryPolicy",
    "RunnerExists",
    "RunnerGroup",
    "RunnerGroupNotFound",
    "RunnerNotFound",
    "RunnerReference",
    "RunnerScaleSet",
    "RunnerScaleSetMessage",
    "RunnerScaleSetSession",
    "RunnerScaleSetStatistic",
    "RunnerSetting",
    "ScaleSetNotFound",
    "Scope",
    "SessionConflict",
    "SessionNotFound",
    "SystemInfo",
    "Timeouts",
    "TlsVerificationFailed",
    "TransportFailure",
    "UnexpectedResponse",
    "parse_config_url",
]
