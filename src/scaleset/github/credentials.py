"""GitHub credentials (PAT or GitHub App) and the App's RS256 JWT.

Secrets are pydantic `SecretStr`s and the models hide their input in validation errors, so
neither `repr()` nor a failed validation can print a token or a private key.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from scaleset.github.errors import InvalidCredentials

JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 9 * 60


class PersonalAccessToken(BaseModel):
    """A personal access token (classic or fine-grained)."""

    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    kind: Literal["pat"] = "pat"
    token: SecretStr

    @field_validator("token")
    @classmethod
    def _not_empty(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("the token is empty")
        return value

    def identity(self) -> str:
        """A stable, non-reversible key for caching and limiting per credential."""
        return "pat:" + _digest(self.token.get_secret_value())


class GitHubApp(BaseModel):
    """GitHub App credentials: the app id (numeric id or client id), installation, PEM key."""

    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    kind: Literal["app"] = "app"
    app_id: Annotated[str, Field(min_length=1)]
    installation_id: Annotated[int, Field(gt=0)]
    private_key: SecretStr

    @field_validator("private_key")
    @classmethod
    def _rsa_pem(cls, value: SecretStr) -> SecretStr:
        load_rsa_private_key(value)
        return value

    def identity(self) -> str:
        key_digest = _digest(self.private_key.get_secret_value())
        return f"app:{self.app_id}:{self.installation_id}:{key_digest}"


Credentials = PersonalAccessToken | GitHubApp


def load_rsa_private_key(pem: SecretStr) -> RSAPrivateKey:
    """Load a PKCS#1 or PKCS#8 RSA key; the error never includes the key material."""
    try:
        key = load_pem_private_key(pem.get_secret_value().encode(), password=None)
    except (ValueError, TypeError) as error:
        raise InvalidCredentials("the GitHub App private key is not a valid PEM RSA key") from (
            _Redacted(type(error).__name__)
        )
    if not isinstance(key, RSAPrivateKey):
        raise InvalidCredentials("the GitHub App private key must be an RSA key")
    return key


def app_jwt(app: GitHubApp, now: float) -> str:
    """The RS256 JWT that authenticates as the App: iat = now - 60 s, exp = iat + 9 min."""
    issued_at = int(now) - JWT_BACKDATE_SECONDS
    claims = {"iat": issued_at, "exp": issued_at + JWT_LIFETIME_SECONDS, "iss": app.app_id}
    return jwt.encode(claims, load_rsa_private_key(app.private_key), algorithm="RS256")


class _Redacted(Exception):
    """Stands in for a parsing error whose text might quote key material."""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]
