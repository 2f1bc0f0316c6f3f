"""GitHub-side credentials of the fake: PATs, GitHub Apps, and every token it issues (spec §1).

``GitHubAuthority`` knows which PATs and Apps exist, verifies App JWTs (RS256, ``iss``,
``iat``/``exp``) against the App's registered public key, and issues installation tokens,
registration tokens and the Actions admin JWT (RS256, signed by the fake's own key, with ``exp``).
Lifetimes follow the injected clock. It remembers every secret it handed out or accepted, so a
test can assert that none of them leaked into logs or errors.
"""

from __future__ import annotations

import functools
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from scaleset.clock import Clock
from scaleset.embedded.actions.errors import ActionsError, GitHubApiError
from scaleset.embedded.actions.model import Scope

ADMIN_TOKEN_ISSUER = "fake-actions-service"  # noqa: S105 (a JWT claim, not a secret)
ADMIN_TOKEN_AUDIENCE = "actions-scale-set-admin"  # noqa: S105 (a JWT claim)
APP_JWT_MAX_LIFETIME_SECONDS = 600.0
"""GitHub refuses App JWTs whose ``exp`` is more than 10 minutes in the future."""
APP_JWT_CLOCK_DRIFT_SECONDS = 60.0
"""Allowance for a client clock ahead of ours (``iat`` in the future)."""


def generate_rsa_private_key_pem(key_size: int = 2048) -> str:
    """A new RSA private key as PKCS#8 PEM (what GitHub hands out for an App is PKCS#1; both
    are accepted by PyJWT and by the spec's clients)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=key_size)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@functools.cache
def _admin_signing_key() -> rsa.RSAPrivateKey:
    """The key the fake signs admin tokens with (one per process: key generation is slow and
    the key protects nothing real)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass(frozen=True)
class GitHubApp:
    """A registered GitHub App installation. ``private_key_pem`` is what the client signs with."""

    app_id: str
    installation_id: int
    client_id: str | None
    private_key_pem: str = field(repr=False)
    scopes: tuple[Scope, ...] | None = None
    """Scopes the installation may act on; ``None`` = any."""


@dataclass(frozen=True)
class _IssuedToken:
    scopes: tuple[Scope, ...] | None
    expires_at: float


@dataclass(frozen=True)
class AdminTokenClaims:
    tenant_id: int
    expires_at: float
    issued_at: float


class GitHubAuthority:
    """Credential registry and token issuer of the fake GitHub."""

    def __init__(
        self,
        clock: Clock,
        *,
        admin_token_ttl_seconds: float = 3600.0,
        registration_token_ttl_seconds: float = 3600.0,
        installation_token_ttl_seconds: float = 3600.0,
    ) -> None:
        self._clock = clock
        self.admin_token_ttl_seconds = admin_token_ttl_seconds
        self.registration_token_ttl_seconds = registration_token_ttl_seconds
        self.installation_token_ttl_seconds = installation_token_ttl_seconds
        self._pats: dict[str, tuple[Scope, ...] | None] = {}
        self._apps: dict[int, GitHubApp] = {}
        self._installation_tokens: dict[str, _IssuedToken] = {}
        self._registration_tokens: dict[str, _IssuedToken] = {}
        self._admin_generation = 0
        self._secrets: list[str] = []
        self.relied_on: set[str] = set()
        self.admin_tokens_issued = 0
        self.registration_tokens_issued = 0
        self.installation_tokens_issued = 0

    # ------------------------------------------------------------------------ registration

    def add_pat(self, token: str, scopes: tuple[Scope, ...] | None = None) -> None:
        if not token:
            raise ValueError("a PAT cannot be empty")
        self._pats[token] = scopes
        self.remember_secret(token)

    def add_app(
        self,
        app_id: str,
        installation_id: int,
        private_key_pem: str | None,
        *,
        client_id: str | None,
        scopes: tuple[Scope, ...] | None,
    ) -> GitHubApp:
        pem = private_key_pem or generate_rsa_private_key_pem()
        try:
            key = serialization.load_pem_private_key(pem.encode(), password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            raise ValueError("the App private key is not an unencrypted PEM key") from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("the App private key is not an RSA key")
        app = GitHubApp(str(app_id), installation_id, client_id, pem, scopes)
        self._apps[installation_id] = app
        self.remember_secret(pem)
        return app

    def remember_secret(self, secret: str) -> None:
        self._secrets.append(secret)

    def issued_secrets(self) -> list[str]:
        """Every credential and token the fake knows or issued (for leak checks)."""
        return list(self._secrets)

    # ----------------------------------------------------------------------- GitHub tokens

    def installation_token(self, installation_id: int, app_jwt: str) -> tuple[str, float]:
        """Verify an App JWT for an installation and issue an installation access token."""
        app = self._apps.get(installation_id)
        if app is None:
            raise GitHubApiError(404, "Not Found")
        public_key = serialization.load_pem_private_key(
            app.private_key_pem.encode(), password=None
        ).public_key()
        try:
            claims: dict[str, Any] = jwt.decode(
                app_jwt,
                key=public_key,  # type: ignore[arg-type]
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError:
            raise GitHubApiError(401, "A JSON web token could not be decoded") from None
        issuer = str(claims.get("iss", ""))
        if issuer not in {app.app_id, app.client_id}:
            raise GitHubApiError(401, "'Issuer' claim ('iss') must be an Integer")
        now = self._clock.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int | float) or not isinstance(exp, int | float):
            raise GitHubApiError(401, "'Issued at' and 'Expiration time' claims are required")
        if iat > now + APP_JWT_CLOCK_DRIFT_SECONDS:
            raise GitHubApiError(401, "'Issued at' claim ('iat') must be an Integer in the past")
        if exp <= now:
            raise GitHubApiError(401, "'Expiration time' claim ('exp') is too far in the past")
        if exp > now + APP_JWT_MAX_LIFETIME_SECONDS + 1:
            raise GitHubApiError(401, "'Expiration time' claim ('exp') is too far in the future")
        token = "ghs_" + secrets.token_urlsafe(27)
        expires_at = now + self.installation_token_ttl_seconds
        self._installation_tokens[token] = _IssuedToken(app.scopes, expires_at)
        self.remember_secret(token)
        self.installation_tokens_issued += 1
        return token, expires_at

    def authorize_github(self, authorization: str | None, scope: Scope) -> None:
        """Check a GitHub REST ``Authorization`` header (``Bearer`` or ``token``) for a scope."""
        token = _credential(authorization, ("bearer", "token"))
        if token is None:
            raise GitHubApiError(401, "Requires authentication")
        if token in self._pats:
            allowed = self._pats[token]
        else:
            issued = self._installation_tokens.get(token)
            if issued is None or self._clock.time() >= issued.expires_at:
                raise GitHubApiError(401, "Bad credentials")
            allowed = issued.scopes
        self.relied_on.add("A-CREDENTIAL-SCOPES")
        if allowed is not None and not any(s.covers(scope) for s in allowed):
            raise GitHubApiError(403, "Resource not accessible by integration")

    def registration_token(self, scope: Scope) -> tuple[str, float]:
        token = "AREG" + secrets.token_hex(13).upper()
        expires_at = self._clock.time() + self.registration_token_ttl_seconds
        self._registration_tokens[token] = _IssuedToken((scope,), expires_at)
        self.remember_secret(token)
        self.registration_tokens_issued += 1
        return token, expires_at

    def check_registration_token(self, authorization: str | None, scope: Scope) -> None:
        """Check ``RemoteAuth <registration token>`` for the config URL's scope."""
        token = _credential(authorization, ("remoteauth",))
        issued = None if token is None else self._registration_tokens.get(token)
        if issued is None or self._clock.time() >= issued.expires_at:
            raise GitHubApiError(401, "Bad credentials")
        if issued.scopes is None or not any(s.key == scope.key for s in issued.scopes):
            raise GitHubApiError(403, "The registration token does not match the config URL")

    # ------------------------------------------------------------------------ admin tokens

    def admin_token(self, tenant_id: int) -> str:
        """An RS256 JWT for the Actions service with ``exp`` (spec §1.5)."""
        now = self._clock.time()
        claims = {
            "iss": ADMIN_TOKEN_ISSUER,
            "aud": ADMIN_TOKEN_AUDIENCE,
            "sub": f"tenant:{tenant_id}",
            "tid": tenant_id,
            "jti": str(uuid.uuid4()),
            "iat": int(now),
            "nbf": int(now),
            "exp": int(now + self.admin_token_ttl_seconds),
            "gen": self._admin_generation,
        }
        token = jwt.encode(claims, _admin_signing_key(), algorithm="RS256")
        self.remember_secret(token)
        self.admin_tokens_issued += 1
        return token

    def expire_admin_tokens(self) -> None:
        """Reject every admin token issued up to now (as if they had all expired)."""
        self._admin_generation += 1

    def check_admin_token(self, authorization: str | None, tenant_id: int) -> AdminTokenClaims:
        token = _credential(authorization, ("bearer",))
        if token is None:
            raise ActionsError(401, "System.UnauthorizedAccessException", "Unauthorized")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=_admin_signing_key().public_key(),
                algorithms=["RS256"],
                audience=ADMIN_TOKEN_AUDIENCE,
                issuer=ADMIN_TOKEN_ISSUER,
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError:
            raise ActionsError(401, "System.UnauthorizedAccessException", "Unauthorized") from None
        now = self._clock.time()
        expires_at, issued_at = float(claims["exp"]), float(claims["iat"])
        if now >= expires_at or claims.get("gen") != self._admin_generation:
            raise ActionsError(
                401, "System.UnauthorizedAccessException", "The access token has expired."
            )
        if claims.get("tid") != tenant_id:
            raise ActionsError(
                401, "System.UnauthorizedAccessException", "The token is for another tenant."
            )
        return AdminTokenClaims(tenant_id, expires_at, issued_at)


def _credential(authorization: str | None, schemes: tuple[str, ...]) -> str | None:
    """The credential of an ``Authorization`` header if its scheme is one of ``schemes``."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() not in schemes or not value:
        return None
    return value
