"""Credentials for the test kube-apiserver: a CA, a loopback serving certificate, a
service-account signing key pair and an admin bearer token, all generated per state directory.

Private keys and the token file are written mode 0600 and never printed.
"""

from __future__ import annotations

import datetime
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from scaleset.certs import (
    certificate_pem,
    issue_serving_certificate,
    new_certificate_authority,
    private_key_pem,
)

ADMIN_USER = "scaleset-admin"
ADMIN_GROUP = "system:masters"
SERVING_DNS_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Pki:
    """Paths of the generated credential files in ``<state>/pki``."""

    root: Path

    @property
    def ca_cert(self) -> Path:
        return self.root / "ca.crt"

    @property
    def serving_cert(self) -> Path:
        return self.root / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.root / "apiserver.key"

    @property
    def sa_private_key(self) -> Path:
        return self.root / "sa.key"

    @property
    def sa_public_key(self) -> Path:
        return self.root / "sa.pub"

    @property
    def token_file(self) -> Path:
        return self.root / "tokens.csv"

    @property
    def admin_token(self) -> Path:
        return self.root / "admin.token"


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def generate_pki(root: Path, now: datetime.datetime | None = None) -> Pki:
    """Create a fresh CA, serving certificate, service-account key pair and admin token."""
    now = now or datetime.datetime.now(datetime.UTC)
    pki = Pki(root)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)

    ca = new_certificate_authority("scaleset-test-ca", now, VALIDITY)
    serving = issue_serving_certificate(
        ca,
        "kube-apiserver",
        dns_names=SERVING_DNS_NAMES,
        ip_addresses=["127.0.0.1"],
        now=now,
        validity=VALIDITY,
    )

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    pki.ca_cert.write_bytes(certificate_pem(ca.cert))
    pki.serving_cert.write_bytes(certificate_pem(serving.cert))
    _write_private(pki.serving_key, private_key_pem(serving.key))
    _write_private(pki.sa_private_key, private_key_pem(sa_key))
    pki.sa_public_key.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    token = secrets.token_urlsafe(32)
    _write_private(pki.admin_token, token.encode())
    _write_private(pki.token_file, f'{token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n'.encode())
    return pki
