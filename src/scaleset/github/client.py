"""ActionsClient: every Actions-service endpoint scaleset uses, plus the REST runners list.

One client per configure URL and credential set. Admin calls refresh the admin token first
(`auth.py`); message-queue calls use a session's queue token instead. Success codes are exact
(200 / 202 / 204 as the protocol lists them); anything else becomes a typed exception from
`errors.py`. For the session-holding wrapper with the one-shot token refresh, see `session.py`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2
from pydantic import BaseModel, SecretStr

from scaleset.api.config_url import GitHubConfigUrl, parse_config_url
from scaleset.clock import Clock, SystemClock
from scaleset.github.auth import ActionsAuth
from scaleset.github.credentials import Credentials
from scaleset.github.engine import Call, RequestEngine
from scaleset.github.error_parsing import Service, error_from_reply
from scaleset.github.errors import (
    InvalidRequest,
    ResponseError,
    RunnerGroupNotFound,
    UnexpectedResponse,
)
from scaleset.github.limiter import RequestLimiter
from scaleset.github.messages import RunnerScaleSetMessage, decode_message
from scaleset.github.metrics import GitHubApiMetrics, default_metrics
from scaleset.github.models import (
    DEFAULT_LABEL_TYPE,
    AcquireJobsResult,
    ActionsModel,
    GitHubRunner,
    GitHubRunnerPage,
    JitRunnerConfig,
    Label,
    RawMessage,
    RunnerGroup,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetSession,
)
from scaleset.github.proxy import ProxyConfig
from scaleset.github.reply import Reply, decode_reply
from scaleset.github.retry import RetryMode, RetryPolicy
from scaleset.github.tls import tls_context
from scaleset.github.transport import (
    DEFAULT_MAX_CONNECTIONS,
    MAX_BODY_BYTES,
    CallKind,
    Timeouts,
    build_http_client,
)
from scaleset.github.user_agent import SystemInfo, user_agent

API_VERSION = "6.0-preview"
SCALE_SETS = "_apis/runtime/runnerscalesets"
RUNNERS = "_apis/distributedtask/pools/0/agents"
RUNNER_GROUPS = "_apis/runtime/runnergroups/"
MAX_CAPACITY_HEADER = "X-ScaleSetMaxCapacity"
REST_PAGE_SIZE = 100
REST_MAX_PAGES = 1000

_Model = TypeVar("_Model", bound=BaseModel)
_Item = TypeVar("_Item")


class _Count(ActionsModel, Generic[_Item]):
    """`{"count": N, "value": [...]}` list envelope."""

    count: int = 0
    value: tuple[_Item, ...] = ()


class ActionsClient:
    """Client of the GitHub Actions scale-set API for one configure URL and credential set.

    Time and I/O seams are constructor arguments: `clock` (a `scaleset.clock.Clock`: wall time
    for token expiry, monotonic time for call budgets, its sleep for retry waits), `environ`
    (proxy variables, GITHUB_ACTIONS_FORCE_GHES), `transport` (an httpx2 transport, e.g. for
    fault injection), `metrics` (its own Prometheus registry in tests). `max_body_bytes`
    bounds every answer's body (`transport.MAX_BODY_BYTES`).
    `proxy=None` reads the proxy from the environment; pass `ProxyConfig()` for none.
    """

    def __init__(
        self,
        config_url: str | GitHubConfigUrl,
        credentials: Credentials,
        *,
        system_info: SystemInfo | None = None,
        proxy: ProxyConfig | None = None,
        root_ca_pem: str | None = None,
        verify_tls: bool = True,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        limiter: RequestLimiter | None = None,
        metrics: GitHubApiMetrics | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_body_bytes: int = MAX_BODY_BYTES,
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = (
            config_url
            if isinstance(config_url, GitHubConfigUrl)
            else parse_config_url(config_url, environ=environ)
        )
        self.credentials = credentials
        self.clock: Clock = clock or SystemClock()
        self.proxy = proxy if proxy is not None else ProxyConfig.from_environ(environ)
        self._system_info = system_info or SystemInfo()
        http = build_http_client(
            self.proxy,
            tls_context(root_ca_pem, verify=verify_tls),
            max_connections=max_connections,
            transport=transport,
        )
        self.engine = RequestEngine(
            http,
            user_agent=user_agent(self._system_info),
            timeouts=timeouts or Timeouts(),
            retry=retry or RetryPolicy(),
            metrics=metrics or default_metrics(),
            limiter=limiter,
            clock=self.clock,
            max_body_bytes=max_body_bytes,
        )
        self.auth = ActionsAuth(self.config, credentials, self.engine, self.clock)

    # --- lifecycle and identity ---------------------------------------------------------

    async def aclose(self) -> None:
        await self.engine.http.aclose()

    async def __aenter__(self) -> ActionsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"ActionsClient({self.config.url!r}, {self.credentials.kind})"

    @property
    def system_info(self) -> SystemInfo:
        return self._system_info

    def set_system_info(self, info: SystemInfo) -> None:
        """Change the User-Agent, e.g. once the scale set id is known."""
        self._system_info = info
        self.engine.user_agent = user_agent(info)

    # --- scale sets (#1–#5) -------------------------------------------------------------

    async def get_runner_scale_set(self, runner_group_id: int, name: str) -> RunnerScaleSet | None:
        """The scale set `name` in the group, or None (#1)."""
        reply = await self._admin_call(
            "GET",
            SCALE_SETS,
            SCALE_SETS,
            query={"runnerGroupId": str(runner_group_id), "name": name},
        )
        found = self._single(reply, _Count[RunnerScaleSet], "runner scale sets", name)
        return found

    async def get_runner_scale_set_by_id(self, scale_set_id: int) -> RunnerScaleSet | None:
        """The scale set, or None when the service answers `null` (#2)."""
        reply = await self._admin_call(
            "GET", f"{SCALE_SETS}/{scale_set_id}", f"{SCALE_SETS}/{{id}}"
        )
        return self._decode_optional(reply, RunnerScaleSet, "runner scale set")

    async def create_runner_scale_set(self, scale_set: RunnerScaleSet) -> RunnerScaleSet:
        """Create a scale set (#3); labels default to the name, label types to "System".

        Repeated after a lost response (§2.6): if the lost attempt created the set, the repeat
        fails with 409 (scale set exists) — look it up by name (#1) before creating again.
        """
        labels = scale_set.labels
        if not labels:
            if not scale_set.name:
                raise InvalidRequest("runner scale set must have a name or at least one label")
            labels = (Label(name=scale_set.name, type=DEFAULT_LABEL_TYPE),)
        body = scale_set.model_copy(update={"labels": _typed_labels(labels)}).to_request_body()
        reply = await self._admin_call("POST", SCALE_SETS, SCALE_SETS, body=body)
        return decode_reply(reply, RunnerScaleSet, "created runner scale set")

    async def update_runner_scale_set(
        self, scale_set_id: int, update: RunnerScaleSet
    ) -> RunnerScaleSet:
        """PATCH the non-empty fields of `update` (e.g. only `name` or `runner_group_id`) (#4)."""
        body = update.model_copy(update={"labels": _typed_labels(update.labels)}).to_request_body()
        reply = await self._admin_call(
            "PATCH", f"{SCALE_SETS}/{scale_set_id}", f"{SCALE_SETS}/{{id}}", body=body
        )
        return decode_reply(reply, RunnerScaleSet, "updated runner scale set")

    async def delete_runner_scale_set(self, scale_set_id: int) -> None:
        """Delete the scale set (#5); 204."""
        await self._admin_call(
            "DELETE", f"{SCALE_SETS}/{scale_set_id}", f"{SCALE_SETS}/{{id}}", success=204
        )

    # --- runner groups (#6) --------------------------------------------------------------

    async def get_runner_group_by_name(self, name: str) -> RunnerGroup:
        """The runner group called `name`; RunnerGroupNotFound when there is none."""
        reply = await self._admin_call(
            "GET", RUNNER_GROUPS, RUNNER_GROUPS, query={"groupName": name}
        )
        group = self._single(reply, _Count[RunnerGroup], "runner groups", name)
        if group is None:
            raise RunnerGroupNotFound(name)
        return group

    # --- runners (#7–#10) ---------------------------------------------------------------

    async def generate_jit_runner_config(
        self, scale_set_id: int, name: str, work_folder: str = ""
    ) -> JitRunnerConfig:
        """Register runner `name` and get its JIT config (#7); RunnerExists if the name is taken.

        Not repeated after the request may have reached the service and its answer was lost
        (a read timeout, a cut connection): ResponseLost. The lost attempt may have registered
        the runner, whose config nobody received; callers recover as from AgentExists (look the
        name up, remove it if it is in this scale set, generate again), which also removes that
        orphan. A request that certainly never left, and 5xx/429 answers, are retried.
        """
        reply = await self._admin_call(
            "POST",
            f"{SCALE_SETS}/{scale_set_id}/generatejitconfig",
            f"{SCALE_SETS}/{{id}}/generatejitconfig",
            body={"name": name, "workFolder": work_folder},
            retry_mode=RetryMode.UNSENT_ONLY,
        )
        return decode_reply(reply, JitRunnerConfig, "JIT runner config")

    async def get_runner(self, runner_id: int) -> RunnerReference | None:
        """The runner (#8); RunnerNotFound when the service does not know the id."""
        reply = await self._admin_call("GET", f"{RUNNERS}/{runner_id}", f"{RUNNERS}/{{id}}")
        return self._decode_optional(reply, RunnerReference, "runner")

    async def get_runner_by_name(self, name: str) -> RunnerReference | None:
        """The runner called `name`, or None (#9)."""
        reply = await self._admin_call("GET", RUNNERS, RUNNERS, query={"agentName": name})
        return self._single(reply, _Count[RunnerReference], "runners", name)

    async def remove_runner(self, runner_id: int) -> None:
        """Remove the runner's registration (#10); JobStillRunning while it runs a job.

        Repeated after a lost response (§2.6): if the lost attempt removed the runner, the
        repeat raises RunnerNotFound — read it as "already removed".
        """
        await self._admin_call("DELETE", f"{RUNNERS}/{runner_id}", f"{RUNNERS}/{{id}}", success=204)

    # --- message sessions (#11–#13) -----------------------------------------------------

    async def create_message_session(
        self, scale_set_id: int, owner_name: str
    ) -> RunnerScaleSetSession:
        """Open the scale set's message session (#11); SessionConflict if one is active.

        Not repeated after a lost response (ResponseLost): a blind repeat would meet the
        session the first attempt may have created.
        """
        reply = await self._admin_call(
            "POST",
            f"{SCALE_SETS}/{scale_set_id}/sessions",
            f"{SCALE_SETS}/{{id}}/sessions",
            body={"ownerName": owner_name},
            retry_mode=RetryMode.UNSENT_ONLY,
        )
        return decode_reply(reply, RunnerScaleSetSession, "message session")

    async def refresh_message_session(
        self, scale_set_id: int, session_id: uuid.UUID
    ) -> RunnerScaleSetSession:
        """Renew the session's queue token (#12); the answer is a complete session."""
        reply = await self._admin_call(
            "PATCH",
            f"{SCALE_SETS}/{scale_set_id}/sessions/{session_id}",
            f"{SCALE_SETS}/{{id}}/sessions/{{sessionId}}",
        )
        return decode_reply(reply, RunnerScaleSetSession, "refreshed message session")

    async def delete_message_session(self, scale_set_id: int, session_id: uuid.UUID) -> None:
        """Close the session (#13); 204. Repeated after a lost response (§2.6): if the lost
        attempt closed it, the repeat raises SessionNotFound — the session is gone."""
        await self._admin_call(
            "DELETE",
            f"{SCALE_SETS}/{scale_set_id}/sessions/{session_id}",
            f"{SCALE_SETS}/{{id}}/sessions/{{sessionId}}",
            success=204,
        )

    # --- message queue (#14–#16) --------------------------------------------------------

    async def get_message(
        self, session: RunnerScaleSetSession, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        """Long-poll the queue (#14): a message, or None when the poll ended empty (202).

        MessageQueueTokenExpired on 401; the caller refreshes the session (see session.py).
        """
        if max_capacity < 0:
            raise InvalidRequest("max capacity must not be negative")
        query = {"lastMessageId": str(last_message_id)} if last_message_id > 0 else {}
        reply = await self.engine.send(
            Call(
                "GET",
                _with_query(session.message_queue_url, query),
                "{messageQueueUrl}",
                CallKind.LONG_POLL,
                headers={
                    "Accept": f"application/json; api-version={API_VERSION}",
                    "Authorization": _bearer(session.message_queue_access_token),
                    MAX_CAPACITY_HEADER: str(max_capacity),
                },
                limited=False,
            )
        )
        if reply.status == 202:
            return None
        if reply.status != 200:
            raise self._queue_error(reply)
        return decode_message(decode_reply(reply, RawMessage, "message"))

    async def delete_message(self, session: RunnerScaleSetSession, message_id: int) -> None:
        """Acknowledge a message (#15); exactly 204, anything else is an error."""
        parts = urlsplit(session.message_queue_url)
        url = urlunsplit(parts._replace(path=f"{parts.path}/{message_id}"))
        reply = await self.engine.send(
            Call(
                "DELETE",
                url,
                "{messageQueueUrl}/{messageId}",
                CallKind.MESSAGE_QUEUE,
                headers={
                    "Content-Type": "application/json",
                    "Authorization": _bearer(session.message_queue_access_token),
                },
                limited=False,
            )
        )
        if reply.status != 204:
            raise self._queue_error(reply)

    async def acquire_jobs(
        self, scale_set_id: int, queue_token: SecretStr, request_ids: Sequence[int]
    ) -> tuple[int, ...]:
        """Acquire `JobAvailable` requests (#16) with the queue token; returns acquired ids."""
        admin = await self.auth.admin()
        reply = await self.engine.send(
            Call(
                "POST",
                self._actions_url(admin.url, f"{SCALE_SETS}/{scale_set_id}/acquirejobs", {}),
                f"{SCALE_SETS}/{{id}}/acquirejobs",
                CallKind.MESSAGE_QUEUE,
                headers={"Content-Type": "application/json", "Authorization": _bearer(queue_token)},
                content=json.dumps(list(request_ids)).encode(),
                limited=False,
            )
        )
        if reply.status != 200:
            raise self._queue_error(reply)
        return decode_reply(reply, AcquireJobsResult, "acquire jobs result").value

    # --- GitHub REST ------------------------------------------------------------------

    async def list_runners(self, *, page_size: int = REST_PAGE_SIZE) -> tuple[GitHubRunner, ...]:
        """Every self-hosted runner of the org / repo / enterprise (all pages).

        Complete or an error: raises UnexpectedResponse when the pages hold fewer runners than
        the last `total_count` announced, so a caller never acts on a partial list.
        """
        token = await self.auth.github_token()
        endpoint = self.config.scope_template + "/actions/runners"
        seen: dict[int, GitHubRunner] = {}
        total = 0
        for page_number in range(1, REST_MAX_PAGES + 1):
            url = (
                self.config.api_url(self.config.runners_path)
                + "?"
                + urlencode({"per_page": page_size, "page": page_number})
            )
            reply = await self.engine.send(
                Call(
                    "GET",
                    url,
                    endpoint,
                    CallKind.GITHUB_API,
                    headers={
                        "Accept": "application/vnd.github+json",
                        "Authorization": _bearer(token),
                        "X-GitHub-Api-Version": "2022-11-28",
                    },
                )
            )
            if reply.status != 200:
                if reply.status == 401:
                    self.auth.invalidate_github_token()
                raise error_from_reply(reply, Service.GITHUB_API, context="failed to list runners")
            page = decode_reply(reply, GitHubRunnerPage, "runner list page")
            total = page.total_count
            for runner in page.runners:
                seen[runner.id] = runner
            if not page.runners or len(seen) >= total:
                break
        if len(seen) < total:
            raise UnexpectedResponse(
                reply.method,
                reply.url,
                reply.status,
                reply.reason,
                f"runner list incomplete: {len(seen)} of {total} runners",
                github_request_id=reply.github_request_id,
            )
        return tuple(seen.values())

    # --- plumbing ------------------------------------------------------------------------

    async def _admin_call(
        self,
        method: str,
        path: str,
        endpoint: str,
        *,
        query: Mapping[str, str] | None = None,
        body: object = None,
        success: int | tuple[int, ...] = 200,
        retry_mode: RetryMode = RetryMode.STANDARD,
    ) -> Reply:
        admin = await self.auth.admin()
        reply = await self.engine.send(
            Call(
                method,
                self._actions_url(admin.url, path, query or {}),
                endpoint,
                CallKind.ADMIN,
                headers={
                    "Content-Type": "application/json",
                    "Authorization": _bearer(admin.token),
                },
                content=None if body is None else json.dumps(body).encode(),
                retry_mode=retry_mode,
            )
        )
        expected = (success,) if isinstance(success, int) else success
        if reply.status not in expected:
            if reply.status == 401:
                self.auth.invalidate()
            raise error_from_reply(
                reply, Service.ACTIONS, context=f"unexpected status code {reply.status}"
            )
        return reply

    @staticmethod
    def _actions_url(base: str, path: str, query: Mapping[str, str]) -> str:
        """Tenant URL + path (duplicate slashes collapsed), caller query kept, api-version added,
        keys sorted (§1.6)."""
        parts = urlsplit(base)
        joined = "/".join(segment for segment in (parts.path + "/" + path).split("/") if segment)
        if path.endswith("/"):
            joined += "/"
        merged = dict(parse_qsl(parts.query))
        merged.update(query)
        merged.setdefault("api-version", API_VERSION)
        return urlunsplit(
            (parts.scheme, parts.netloc, "/" + joined, urlencode(sorted(merged.items())), "")
        )

    @staticmethod
    def _queue_error(reply: Reply) -> ResponseError:
        return error_from_reply(
            reply,
            Service.ACTIONS,
            message_queue=True,
            context=f"unexpected status code {reply.status}",
        )

    def _decode_optional(self, reply: Reply, model: type[_Model], what: str) -> _Model | None:
        if reply.body.strip() == b"null":
            return None
        return decode_reply(reply, model, what)

    def _single(
        self, reply: Reply, envelope: type[_Count[_Item]], what: str, name: str
    ) -> _Item | None:
        listing = decode_reply(reply, envelope, what)
        if listing.count == 0:
            return None
        if listing.count == 1 and len(listing.value) == 1:
            return listing.value[0]
        raise UnexpectedResponse(
            reply.method,
            reply.url,
            reply.status,
            reply.reason,
            f"multiple {what} found with name {name!r}"
            if listing.count > 1
            else f"{what}: count {listing.count} but {len(listing.value)} values",
            activity_id=reply.activity_id,
        )


def _typed_labels(labels: Sequence[Label]) -> tuple[Label, ...]:
    return tuple(
        label if label.type else label.model_copy(update={"type": DEFAULT_LABEL_TYPE})
        for label in labels
    )


def _bearer(token: SecretStr) -> str:
    return f"Bearer {token.get_secret_value()}"


def _with_query(url: str, extra: Mapping[str, str]) -> str:
    if not extra:
        return url
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update(extra)
    return urlunsplit(parts._replace(query=urlencode(query)))
