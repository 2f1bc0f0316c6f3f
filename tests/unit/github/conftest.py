"""Fixtures for the client's unit tests: RSA keys for GitHub App credentials."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.plugins.secret_guard import register_secret


@pytest.fixture(scope="session")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="session")
def pkcs1_pem(rsa_key: rsa.RSAPrivateKey) -> str:
    pem = rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    return register_secret(pem)


@pytest.fixture(scope="session")
def pkcs8_pem(rsa_key: rsa.RSAPrivateKey) -> str:
    pem = rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return register_secret(pem)
