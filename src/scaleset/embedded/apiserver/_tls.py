"""A throwaway certificate authority and serving certificate for HTTPS on loopback.

kubectl sends bearer tokens only to HTTPS servers, so the standalone server serves TLS with a
certificate made at start (ECDSA P-256, valid one day) whose CA goes into the kubeconfig. A plain
HTTP server still has a cluster CA to publish in ``kube-root-ca.crt``. Validity is real time
(TLS peers check it against theirs), not the server's clock.
"""

from __future__ import annotations

import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scaleset.certs import (
    certificate_pem,
    issue_serving_certificate,
    new_certificate_authority,
    private_key_pem,
)

VALIDITY = timedelta(days=1)


@dataclass(frozen=True)
class ServingCertificate:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory(prefix="scaleset-tls-") as tmp:
            cert = Path(tmp) / "tls.crt"
            key = Path(tmp) / "tls.key"
            cert.write_bytes(self.cert_pem + self.ca_pem)
            key.write_bytes(self.key_pem)
            key.chmod(0o600)
            context.load_cert_chain(cert, key)
        return context


def make_cluster_ca() -> bytes:
    """A CA certificate (PEM) for a server that serves plain HTTP: what kube-root-ca.crt holds."""
    ca = new_certificate_authority("scaleset-embedded-ca", datetime.now(UTC), VALIDITY)
    return certificate_pem(ca.cert)


def make_serving_certificate(host: str) -> ServingCertificate:
    """A new CA and a certificate for ``host``, localhost and the loopback addresses."""
    now = datetime.now(UTC)
    ca = new_certificate_authority("scaleset-embedded-ca", now, VALIDITY)
    dns_names = ["localhost"]
    addresses = {"127.0.0.1", "::1"}
    try:
        ipaddress.ip_address(host)
        addresses.add(host)
    except ValueError:
        dns_names.append(host)
    serving = issue_serving_certificate(
        ca,
        "scaleset-embedded-apiserver",
        dns_names=dns_names,
        ip_addresses=sorted(addresses),
        now=now,
        validity=VALIDITY,
    )
    return ServingCertificate(
        ca_pem=certificate_pem(ca.cert),
        cert_pem=certificate_pem(serving.cert),
        key_pem=private_key_pem(serving.key),
    )
