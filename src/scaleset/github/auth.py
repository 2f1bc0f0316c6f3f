"""From GitHub credentials to the Actions service URL and admin token.

App only: a JWT buys an installation token (201), which is kept until fewer than 5 minutes of
its `expires_at` remain (or GitHub rejects it with 401) and minted by one caller at a time.
Then a registration token for the config URL's scope (201), then `/actions/runner-registration`
(any 2xx, retried also on 401/403) gives the Actions service URL and an admin JWT whose `exp` is
read without verification. The admin token is refreshed when fewer than 60 s remain, by one
caller at a time; when a refresh fails the previous URL, token and expiry are kept and the
error propagates.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import jwt
from pydantic import SecretStr

from scaleset.api.config_url import GitHubConfigUrl
from scaleset.clock import Clock
from scaleset.github.credentials import Credentials, GitHubApp, app_jwt
from scaleset.github.engine import Call, RequestEngine
from scaleset.github.error_parsing import Service, error_from_reply
from scaleset.github.errors import GitHubApiError, UnexpectedResponse
from scaleset.github.models import AdminConnection, RegistrationToken
from scaleset.github.reply import Reply, decode_reply
from scaleset.github.retry import RetryMode
from scaleset.github.transport import CallKind
from scaleset.logs import get_logger

log = get_logger(__name__)

REFRESH_MARGIN_SECONDS = 60.0
INSTALLATION_TOKEN_MARGIN_SECONDS = 300.0
"""An App installation token is minted anew once fewer than this many seconds of it remain:
more than any call that uses it can last (its budget)."""


@dataclass(frozen=True)
class ActionsServiceAdmin:
    """Where the Actions service is and the admin token valid there until `expires_at`."""

    url: str
    token: SecretStr
    expires_at: float  # epoch seconds

    def expiring(self, now: float) -> bool:
        return now + REFRESH_MARGIN_SECONDS > self.expires_at


class ActionsAuth:
    """Obtains and caches the admin connection for one configure URL and credential set."""

    def __init__(
        self,
        config: GitHubConfigUrl,
        credentials: Credentials,
        engine: RequestEngine,
        clock: Clock,
    ) -> None:
        self.config = config
        self.credentials = credentials
        self._engine = engine
        self._clock = clock
        self._admin: ActionsServiceAdmin | None = None
        self._stale = False
        self._lock = asyncio.Lock()
        self._installation: RegistrationToken | None = None
        self._installation_lock = asyncio.Lock()

    @property
    def current(self) -> ActionsServiceAdmin | None:
        """The cached admin connection, without refreshing."""
        return self._admin

    def invalidate(self) -> None:
        """Force a refresh before the next admin call (the service rejected the token)."""
        self._stale = True

    async def admin(self) -> ActionsServiceAdmin:
        """A connection whose token is valid for at least 60 more seconds."""
        current = self._admin
        if current is not None and not self._stale and not current.expiring(self._clock.time()):
            return current
        async with self._lock:
            current = self._admin
            if current is not None and not self._stale and not current.expiring(self._clock.time()):
                return current
            log.info("refreshing the Actions admin token", config_url=self.config.url)
            fresh = await self._register()
            self._admin = fresh
            self._stale = False
            return fresh

    async def github_token(self) -> SecretStr:
        """The token for GitHub REST calls: the PAT, or the App's installation token (cached
        until it nears its expiry)."""
        if isinstance(self.credentials, GitHubApp):
            return (await self._cached_installation_token(self.credentials)).token
        return self.credentials.token

    def invalidate_github_token(self) -> None:
        """GitHub rejected the installation token (401): mint a new one next time."""
        self._installation = None

    def _usable_installation_token(self) -> RegistrationToken | None:
        token = self._installation
        if token is None or token.expires_at is None:
            return None
        left = token.expires_at.timestamp() - self._clock.time()
        return token if left > INSTALLATION_TOKEN_MARGIN_SECONDS else None

    async def _cached_installation_token(self, app: GitHubApp) -> RegistrationToken:
        cached = self._usable_installation_token()
        if cached is not None:
            return cached
        async with self._installation_lock:
            cached = self._usable_installation_token()
            if cached is not None:
                return cached
            fresh = await self.installation_token(app)
            self._installation = fresh  # without expires_at it is used for this call only
            return fresh

    async def installation_token(self, app: GitHubApp) -> RegistrationToken:
        """Mint an installation token (uncached; `github_token` caches)."""
        path = f"/app/installations/{app.installation_id}/access_tokens"
        reply = await self._engine.send(
            Call(
                "POST",
                self.config.api_url(path),
                "/app/installations/{id}/access_tokens",
                CallKind.GITHUB_API,
                headers={
                    "Content-Type": "application/vnd.github+json",
                    "Authorization": f"Bearer {app_jwt(app, self._clock.time())}",
                },
            )
        )
        if reply.status != 201:
            raise error_from_reply(
                reply, Service.GITHUB_API, context="failed to get an App installation token"
            )
        return decode_reply(reply, RegistrationToken, "installation token")

    async def registration_token(self) -> RegistrationToken:
        try:
            return await self._registration_token()
        except GitHubApiError as error:
            if error.status == 401:
                self.invalidate_github_token()
            raise

    async def _registration_token(self) -> RegistrationToken:
        token = await self.github_token()
        reply = await self._engine.send(
            Call(
                "POST",
                self.config.api_url(self.config.registration_token_path),
                self.config.scope_template + "/actions/runners/registration-token",
                CallKind.GITHUB_API,
                headers={
                    "Content-Type": "application/vnd.github.v3+json",
                    "Authorization": f"Bearer {token.get_secret_value()}",
                },
                content=b"",
            )
        )
        if reply.status != 201:
            raise error_from_reply(
                reply, Service.GITHUB_API, context="failed to get a runner registration token"
            )
        return decode_reply(reply, RegistrationToken, "registration token")

    async def _register(self) -> ActionsServiceAdmin:
        registration = await self.registration_token()
        body = json.dumps({"url": self.config.url, "runner_event": "register"}) + "\n"
        reply = await self._engine.send(
            Call(
                "POST",
                self.config.api_url("/actions/runner-registration"),
                "/actions/runner-registration",
                CallKind.GITHUB_API,
                headers={
                    "Content-Type": "application/json",
                    "Authorization": f"RemoteAuth {registration.token.get_secret_value()}",
                },
                content=body.encode(),
                retry_mode=RetryMode.REGISTRATION,
            )
        )
        if not 200 <= reply.status < 300:
            raise error_from_reply(
                reply, Service.GITHUB_API, context="failed to get the Actions service connection"
            )
        connection = decode_reply(reply, AdminConnection, "Actions service connection")
        token = connection.token.get_secret_value()
        if not token:
            raise UnexpectedResponse(
                reply.method, reply.url, reply.status, reply.reason, "the admin token is empty"
            )
        return ActionsServiceAdmin(
            url=connection.url, token=connection.token, expires_at=_expiry(token, reply)
        )


def _expiry(token: str, reply: Reply) -> float:
    """The admin JWT's `exp`, read without verifying the signature."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as error:
        raise UnexpectedResponse(
            reply.method,
            reply.url,
            reply.status,
            reply.reason,
            f"the admin token is not a readable JWT ({type(error).__name__})",
        ) from None
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise UnexpectedResponse(
            reply.method, reply.url, reply.status, reply.reason, "the admin token has no exp claim"
        )
    return float(exp)
