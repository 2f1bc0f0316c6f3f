"""``FakeGitHub``: the fake GitHub + Actions scale-set service as a running aiohttp server.

It assembles the parts (state machine, credentials, faults, the four HTTP surfaces and the
control endpoint) behind one catch-all route. For every request the dispatcher normalises the
path, applies the service's timeouts, applies faults (latency, injected statuses), routes,
turns domain errors into their wire shapes, adds the correlation header of the surface
(``ActivityId`` or ``X-GitHub-Request-Id``) and the optional byte-order mark, and logs the request
without credentials.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import secrets
import socket
import ssl
import uuid
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType

from aiohttp import web

from scaleset.clock import Clock, SystemClock
from scaleset.embedded.actions import errors
from scaleset.embedded.actions.auth import GitHubApp, GitHubAuthority
from scaleset.embedded.actions.context import FakeContext, Pulse, RequestRecord
from scaleset.embedded.actions.control import FakeControl
from scaleset.embedded.actions.errors import ActionsError, FakeHttpError, GitHubApiError
from scaleset.embedded.actions.faults import FaultInjector, Surface, with_nulls
from scaleset.embedded.actions.http_actions import ActionsApi
from scaleset.embedded.actions.http_broker import BrokerApi
from scaleset.embedded.actions.http_control import ControlApi, ControlError
from scaleset.embedded.actions.http_github import GitHubApi
from scaleset.embedded.actions.model import Scope, parse_config_url, parse_scope_path
from scaleset.embedded.actions.routing import (
    BadRequestBody,
    Call,
    Reply,
    Resolved,
    Router,
    normalise_path,
    surface_of_path,
)
from scaleset.embedded.actions.service import ActionsService, ServiceSettings
from scaleset.embedded.actions.wire import actions_error_json, github_error_json
from scaleset.logs import get_logger

log = get_logger(__name__)

BOM = b"\xef\xbb\xbf"
_ASSUMED_ERROR_NAMES = {
    errors.AGENT_EXISTS: "A-EXCEPTION-NAMES",
    errors.AGENT_NOT_FOUND: "A-EXCEPTION-NAMES",
    errors.JOB_STILL_RUNNING: "A-EXCEPTION-NAMES",
    errors.SCALE_SET_NOT_FOUND: "A-SCALE-SET-ERRORS",
    errors.SCALE_SET_EXISTS: "A-SCALE-SET-ERRORS",
    errors.RUNNER_GROUP_NOT_FOUND: "A-SCALE-SET-ERRORS",
    errors.VERSION_NOT_SPECIFIED: "A-API-VERSION-ERRORS",
    errors.VERSION_NOT_SUPPORTED: "A-API-VERSION-ERRORS",
}
JSON_TYPE = "application/json; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class FakeSettings(ServiceSettings):
    """Every lifetime and switch of the fake (seconds of the injected clock)."""

    admin_token_ttl_seconds: float = 3600.0
    registration_token_ttl_seconds: float = 3600.0
    installation_token_ttl_seconds: float = 3600.0


_live_fakes: weakref.WeakSet[FakeGitHub] = weakref.WeakSet()
_stop_sinks: list[Callable[[list[str]], None]] = []


def secrets_of_live_fakes() -> list[str]:
    """Every credential, token and JIT config of every fake alive in this process — a test
    hook, for the test suite's secret guard (tests that never registered their fake's secrets,
    the demo's included, are checked too)."""
    return [secret for fake in list(_live_fakes) for secret in fake.control.issued_secrets()]


def subscribe_stopped_fake_secrets(sink: Callable[[list[str]], None]) -> Callable[[], None]:
    """Hand each fake's secrets to ``sink`` when it stops (a fake may be gone by the time a
    test is checked); returns the unsubscribe call."""
    _stop_sinks.append(sink)

    def unsubscribe() -> None:
        if sink in _stop_sinks:
            _stop_sinks.remove(sink)

    return unsubscribe


def _scopes(scopes: Iterable[str] | None) -> tuple[Scope, ...] | None:
    if scopes is None:
        return None
    return tuple(parse_scope_path(s) for s in scopes)


class FakeGitHub:
    """The fake GitHub (REST, GHES-style) + Actions scale-set service, over real HTTP(S).

    Use as ``async with FakeGitHub(...) as fake:``; ``port=0`` picks a free port. The control
    API (``/_fake/*``) wants ``Authorization: Bearer <control_token>`` (random per fake unless
    given): a GitHub credential never opens it. With
    ``message_queue_host`` the message queue is served apart from the tenant API, as github.com
    does (a broker host): on its own port, announced in ``messageQueueUrl`` under that host name
    (which must resolve to ``host``'s address, e.g. ``localhost`` for ``127.0.0.1``; with TLS,
    one the certificate covers); queue paths are then refused (404) on the API origin and
    everything else on the queue origin. Token and
    session lifetimes and timestamps follow ``clock`` (a ``scaleset.clock.Clock``: its wall time;
    default the system clock). A message poll with nothing to deliver is
    held ``poll_hold_seconds`` (real seconds) and answered 202, but returns as soon as a message
    exists.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        clock: Clock | None = None,
        ssl_context: ssl.SSLContext | None = None,
        poll_hold_seconds: float = 50.0,
        runner_poll_hold_seconds: float | None = None,
        settings: FakeSettings | None = None,
        message_queue_host: str | None = None,
        control_token: str | None = None,
    ) -> None:
        self.settings = settings or FakeSettings()
        self.control_token = control_token or secrets.token_urlsafe(32)
        """The bearer token the control API (``/_fake/*``) wants: random per fake unless given."""
        self._host = host
        self._port = port
        self._message_queue_host = message_queue_host
        self._message_queue_port = 0
        self._ssl_context = ssl_context
        clock = clock or SystemClock()
        pulse = Pulse()
        self._context = FakeContext(
            clock=clock,
            service=ActionsService(clock, self.settings, on_change=pulse.fire),
            authority=GitHubAuthority(
                clock,
                admin_token_ttl_seconds=self.settings.admin_token_ttl_seconds,
                registration_token_ttl_seconds=self.settings.registration_token_ttl_seconds,
                installation_token_ttl_seconds=self.settings.installation_token_ttl_seconds,
            ),
            faults=FaultInjector(),
            pulse=pulse,
            poll_hold_seconds=poll_hold_seconds,
            runner_poll_hold_seconds=(
                poll_hold_seconds if runner_poll_hold_seconds is None else runner_poll_hold_seconds
            ),
        )
        self.control = FakeControl(self._context)
        self._router = Router()
        GitHubApi(self._context).register(self._router)
        ActionsApi(self._context).register(self._router)
        BrokerApi(self._context).register(self._router)
        ControlApi(
            self.control,
            self.add_pat,
            lambda app_id, installation_id, pem, client_id: self.add_github_app(
                app_id, installation_id, pem, client_id=client_id
            ),
        ).register(self._router)
        self._runner: web.AppRunner | None = None
        _live_fakes.add(self)

    # ----------------------------------------------------------------------- lifecycle

    def _bind(self, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, port))
        return sock

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the fake GitHub is already running")
        sock = self._bind(self._port)
        port = sock.getsockname()[1]
        self._port = port  # a restart comes back on the same port
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.SockSite(runner, sock, ssl_context=self._ssl_context)
        await site.start()
        scheme = "https" if self._ssl_context is not None else "http"
        if self._message_queue_host is not None:
            queue_sock = self._bind(self._message_queue_port)
            self._message_queue_port = queue_sock.getsockname()[1]  # kept across restarts
            await web.SockSite(runner, queue_sock, ssl_context=self._ssl_context).start()
            queue_host = self._message_queue_host
            queue_host = f"[{queue_host}]" if ":" in queue_host else queue_host
            self._context.message_queue_base_url = (
                f"{scheme}://{queue_host}:{self._message_queue_port}"
            )
        self._context.pulse.closed = False
        self._runner = runner
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._context.base_url = f"{scheme}://{host}:{port}"

    async def stop(self) -> None:
        """Stop serving (connections are closed, held polls answered). State is kept: a later
        ``start()`` serves the same state on the same port, which simulates a GitHub outage."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._context.pulse.close()
        await runner.cleanup()
        if _stop_sinks:
            issued = self.control.issued_secrets()
            for sink in list(_stop_sinks):
                sink(issued)

    async def __aenter__(self) -> FakeGitHub:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # -------------------------------------------------------------------------- URLs

    @property
    def base_url(self) -> str:
        """``http(s)://host:port`` (no trailing slash); set once started."""
        if not self._context.base_url:
            raise RuntimeError("the fake GitHub is not running")
        return self._context.base_url

    @property
    def message_queue_base_url(self) -> str:
        """The origin of ``messageQueueUrl`` (``base_url`` unless served apart)."""
        return self._context.message_queue_base_url or self.base_url

    @property
    def api_url(self) -> str:
        """The GitHub REST base (``<base>/api/v3``)."""
        return self.base_url + "/api/v3"

    def config_url(self, owner: str, repository: str | None = None) -> str:
        """A githubConfigUrl for an organization, or for a repository when given."""
        return f"{self.base_url}/{owner}" + (f"/{repository}" if repository else "")

    def enterprise_config_url(self, enterprise: str) -> str:
        return f"{self.base_url}/enterprises/{enterprise}"

    # -------------------------------------------------------------------- credentials

    def add_pat(self, token: str, *, scopes: Iterable[str] | None = None) -> None:
        """Accept a personal access token — for every scope, or only the given scope paths
        (``"acme"``, ``"acme/app"``, ``"enterprises/ent"``; an org covers its repos)."""
        self._context.authority.add_pat(token, _scopes(scopes))

    def add_github_app(
        self,
        app_id: str | int,
        installation_id: int,
        private_key_pem: str | None = None,
        *,
        client_id: str | None = None,
        scopes: Iterable[str] | None = None,
    ) -> GitHubApp:
        """Register a GitHub App installation. Without ``private_key_pem`` a key is generated;
        the returned ``GitHubApp.private_key_pem`` is what the client must sign with."""
        return self._context.authority.add_app(
            str(app_id),
            installation_id,
            private_key_pem,
            client_id=client_id,
            scopes=_scopes(scopes),
        )

    def tenant_url_for(self, config_url: str) -> str:
        """The Actions-service URL runner-registration returns for a config URL."""
        tenant = self._context.service.tenant_for_scope(parse_config_url(config_url))
        return self._context.tenant_url(tenant.id)

    @property
    def authority(self) -> GitHubAuthority:
        return self._context.authority

    @property
    def service(self) -> ActionsService:
        return self._context.service

    # ---------------------------------------------------------------------- dispatch

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = normalise_path(request.path)
        method = request.method.upper()
        resolved = self._router.resolve(method, path)
        if isinstance(resolved, Resolved):
            surface = resolved.surface
        elif isinstance(resolved, Surface):
            surface = resolved
        else:
            surface = surface_of_path(path)
        if surface is Surface.CONTROL and not self._control_allowed(request):
            reply = self._error_reply(
                surface, 401, "the control API needs Authorization: Bearer <the control token>"
            )
            self._record(request, method, path, surface, reply.status)
            return self._render(reply, surface)
        if self._wrong_origin(request, surface):
            self._context.service.rely("A-MQ-ORIGIN-ONLY")
            reply = self._error_reply(surface, 404, "Not Found")
            self._record(request, method, path, surface, reply.status)
            return self._render(reply, surface)
        try:
            reply = await self._answer(request, method, path, surface, resolved)
        except ConnectionResetError:
            # The client went away before its request body was read (e.g. it timed out during
            # injected latency): the request was never handled. Not a server error.
            log.info("fake GitHub: client went away before its request was read", path=path)
            self._record(request, method, path, surface, 0)
            raise asyncio.CancelledError from None
        self._note_reliance(surface, method, path, reply)
        nulls = self._context.faults.take_null_fields(surface, method, path)
        if nulls and reply.body is not None:
            reply = dataclasses.replace(reply, body=with_nulls(reply.body, nulls))
        unsent: int | None = None
        if not reply.disconnect and self._context.faults.take_drop_response(surface, method, path):
            unsent = reply.status
            reply = Reply(0, disconnect=True)
            log.info(
                "fake GitHub: dropping a handled request's answer (injected fault)",
                method=method,
                path=path,
                unsent_status=unsent,
            )
        self._record(request, method, path, surface, reply.status, unsent)
        late = (
            0.0
            if reply.disconnect
            else self._context.faults.take_answer_delay(surface, method, path)
        )
        if late > 0:
            log.info("fake GitHub: holding a handled request's answer (injected fault)", path=path)
            await asyncio.sleep(late)
        if reply.disconnect:
            if request.transport is not None:
                request.transport.abort()
            # aiohttp treats a cancelled handler as a client that went away: it logs that at
            # DEBUG and closes the connection without writing anything.
            raise asyncio.CancelledError
        return self._render(reply, surface)

    def _control_allowed(self, request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            token.strip().encode(), self.control_token.encode()
        )

    def _wrong_origin(self, request: web.Request, surface: Surface) -> bool:
        """With the queue served apart: a queue request on the API origin, or anything but a
        queue request on the queue origin (the control API answers everywhere)."""
        if self._message_queue_host is None or surface is Surface.CONTROL:
            return False
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        on_queue_origin = isinstance(sockname, tuple) and sockname[1] == self._message_queue_port
        return on_queue_origin != (surface is Surface.MESSAGE_QUEUE)

    async def _answer(
        self,
        request: web.Request,
        method: str,
        path: str,
        surface: Surface,
        resolved: Resolved | Surface | None,
    ) -> Reply:
        ctx = self._context
        try:
            ctx.service.sweep()
            delay = ctx.faults.take_latency(surface, method, path)
            if delay > 0:
                await asyncio.sleep(delay)
            rule = ctx.faults.take_status(surface, method, path)
            retry_after = None if rule is None else rule.retry_after
            if rule is None:
                throttled = ctx.faults.take_throttled(surface, method, path, ctx.clock.monotonic())
                if throttled is not None:
                    rule, retry_after = throttled
            if rule is not None:
                headers = dict(rule.headers)
                if retry_after is not None:
                    headers["Retry-After"] = retry_after
                return Reply(
                    rule.status,
                    text=rule.body or None,
                    content_type=rule.content_type,
                    headers=headers,
                )
            if isinstance(resolved, Resolved):
                return await resolved.handler(Call(request, surface, path, resolved.params))
            if isinstance(resolved, Surface):
                return self._error_reply(surface, 405, "Method Not Allowed")
            return self._error_reply(surface, 404, "Not Found")
        except BadRequestBody as error:
            return self._error_reply(surface, 400, str(error))
        except FakeHttpError as error:
            return self._http_error_reply(error)

    def _error_reply(self, surface: Surface, status: int, message: str) -> Reply:
        if surface is Surface.GITHUB:
            return self._http_error_reply(GitHubApiError(status, message))
        if surface is Surface.CONTROL:
            return self._http_error_reply(ControlError(status, message))
        if surface is Surface.MESSAGE_QUEUE and status == 404:
            return Reply.empty(404)
        type_name = errors.INVALID_ARGUMENT if status == 400 else errors.RESOURCE_NOT_FOUND
        return self._http_error_reply(ActionsError(status, type_name, message))

    @staticmethod
    def _http_error_reply(error: FakeHttpError) -> Reply:
        if isinstance(error, ActionsError):
            return Reply.of(error.status, actions_error_json(error))
        if isinstance(error, GitHubApiError):
            return Reply.of(error.status, github_error_json(error))
        if isinstance(error, ControlError):
            return Reply.of(error.status, {"error": error.message})
        return Reply(error.status, text=error.message or None)

    def _render(self, reply: Reply, surface: Surface) -> web.Response:
        headers = dict(reply.headers)
        if surface is Surface.GITHUB:
            headers["X-GitHub-Request-Id"] = uuid.uuid4().hex[:20].upper()
        elif surface is not Surface.CONTROL:
            headers["ActivityId"] = str(uuid.uuid4())
        if reply.body is not None:
            payload = json.dumps(reply.body).encode()
            headers["Content-Type"] = JSON_TYPE
        elif reply.text:
            payload = reply.text.encode()
            headers["Content-Type"] = reply.content_type or TEXT_TYPE
        else:
            payload = b""
        if payload and self._context.faults.bom(surface):
            payload = BOM + payload
        return web.Response(status=reply.status, body=payload or None, headers=headers)

    def _note_reliance(self, surface: Surface, method: str, path: str, reply: Reply) -> None:
        """Which ledger assumptions this answer depended on (for the demo's report)."""
        rely = self._context.service.rely
        if isinstance(reply.body, dict) and reply.body.get("typeName") in _ASSUMED_ERROR_NAMES:
            rely(_ASSUMED_ERROR_NAMES[reply.body["typeName"]])
        if surface is Surface.BROKER:
            rely("A-RUNNER-PROTOCOL")
        elif surface is Surface.MESSAGE_QUEUE:
            rely("A-MQ-URL")
            if reply.status == 401:
                rely("A-MQ-TOKEN-ROTATION")
            elif reply.status == 400:
                rely("A-CAPACITY-RULE")
            elif method == "GET" and reply.status == 200:
                rely("A-STATISTICS-AT-DELIVERY")
        elif surface is Surface.ACTIONS and reply.status == 200:
            if method == "PATCH" and "/sessions/" in path:
                rely("A-MQ-TOKEN-ROTATION")
            elif path.endswith("/generatejitconfig"):
                rely("A-RUNNER-CREDENTIAL")
        elif surface is Surface.GITHUB and method == "GET" and path.endswith("/actions/runners"):
            rely("A-REST-RUNNER-FIELDS")

    def _record(
        self,
        request: web.Request,
        method: str,
        path: str,
        surface: Surface,
        status: int,
        unsent_status: int | None = None,
    ) -> None:
        headers = request.headers
        self._context.requests.append(
            RequestRecord(
                at=self._context.clock.time(),
                surface=surface,
                method=method,
                path=path,
                query=tuple(request.query.items()),
                status=status,
                user_agent=headers.get("User-Agent", ""),
                max_capacity=headers.get("X-ScaleSetMaxCapacity"),
                content_type=headers.get("Content-Type"),
                accept=headers.get("Accept"),
                unsent_status=unsent_status,
            )
        )
