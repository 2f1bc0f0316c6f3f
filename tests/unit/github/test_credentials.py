"""Credentials: the App JWT's claims, PEM formats, and secrets kept out of reprs and errors."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr, ValidationError
from tests.plugins.secret_guard import SecretRegistry

from scaleset.github.credentials import GitHubApp, PersonalAccessToken, app_jwt

NOW = 1_750_000_000.0


@pytest.mark.parametrize("pem_fixture", ["pkcs1_pem", "pkcs8_pem"])
def test_app_jwt_claims_and_signature(
    pem_fixture: str, request: pytest.FixtureRequest, rsa_key: rsa.RSAPrivateKey
) -> None:
    pem: str = request.getfixturevalue(pem_fixture)
    app = GitHubApp(app_id="Iv1.abc123", installation_id=42, private_key=SecretStr(pem))
    token = app_jwt(app, NOW)
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    claims = jwt.decode(
        token, rsa_key.public_key(), algorithms=["RS256"], options={"verify_exp": False}
    )
    assert claims == {"iat": int(NOW) - 60, "exp": int(NOW) - 60 + 540, "iss": "Iv1.abc123"}


def test_numeric_app_id_goes_into_iss_verbatim(pkcs8_pem: str) -> None:
    app = GitHubApp(app_id="12345", installation_id=1, private_key=SecretStr(pkcs8_pem))
    claims = jwt.decode(app_jwt(app, NOW), options={"verify_signature": False})
    assert claims["iss"] == "12345"


def test_reprs_hide_secrets(pkcs8_pem: str, secret_guard: SecretRegistry) -> None:
    pat = PersonalAccessToken(token=SecretStr(secret_guard.register("ghp_reprsecret0001")))
    app = GitHubApp(app_id="1", installation_id=2, private_key=SecretStr(pkcs8_pem))
    secret_guard.assert_clean(pat, app, pat.model_dump(), app.model_dump())


def test_bad_private_key_error_does_not_echo_the_key(secret_guard: SecretRegistry) -> None:
    not_a_key = secret_guard.register("-----BEGIN RSA PRIVATE KEY-----\nnot-base64-secret\n")
    with pytest.raises(ValidationError) as caught:
        GitHubApp(app_id="1", installation_id=2, private_key=SecretStr(not_a_key))
    assert "not a valid PEM RSA key" in str(caught.value)
    secret_guard.assert_clean(caught.value)


def test_validation_errors_hide_the_token(secret_guard: SecretRegistry) -> None:
    token = secret_guard.register("ghp_validationsecret")
    with pytest.raises(ValidationError) as caught:
        PersonalAccessToken.model_validate({"token": token, "kind": "not-a-kind"})
    secret_guard.assert_clean(caught.value)


def test_empty_token_and_incomplete_app_are_rejected(pkcs8_pem: str) -> None:
    with pytest.raises(ValidationError, match="empty"):
        PersonalAccessToken(token=SecretStr("  "))
    with pytest.raises(ValidationError):
        GitHubApp(app_id="", installation_id=1, private_key=SecretStr(pkcs8_pem))
    with pytest.raises(ValidationError):
        GitHubApp(app_id="1", installation_id=0, private_key=SecretStr(pkcs8_pem))


def test_identity_is_stable_and_does_not_contain_the_secret(pkcs8_pem: str) -> None:
    first = PersonalAccessToken(token=SecretStr("ghp_identity_secret_1"))
    again = PersonalAccessToken(token=SecretStr("ghp_identity_secret_1"))
    other = PersonalAccessToken(token=SecretStr("ghp_identity_secret_2"))
    assert first.identity() == again.identity() != other.identity()
    assert "ghp_identity_secret_1" not in first.identity()
    app = GitHubApp(app_id="7", installation_id=8, private_key=SecretStr(pkcs8_pem))
    assert app.identity().startswith("app:7:8:")
    assert pkcs8_pem not in app.identity()
