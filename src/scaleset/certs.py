"""Short-lived X.509 for loopback HTTPS: a self-signed CA and serving certificates it issues.

Both the dev-tools PKI for the real test kube-apiserver and the embedded API server's TLS build
the same two certificates with ``cryptography``; this module is the one place that does it.
Keys are ECDSA P-256, signatures SHA-256, and every certificate is valid from five minutes
before ``now`` (clock skew) to ``now + validity``.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class CertifiedKey:
    """A certificate and its private key: a CA that signs, or a leaf that serves."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def new_certificate_authority(
    common_name: str, now: datetime.datetime, validity: datetime.timedelta
) -> CertifiedKey:
    """A fresh self-signed CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return CertifiedKey(key=key, cert=cert)


def issue_serving_certificate(
    ca: CertifiedKey,
    common_name: str,
    *,
    dns_names: Iterable[str],
    ip_addresses: Iterable[str],
    now: datetime.datetime,
    validity: datetime.timedelta,
) -> CertifiedKey:
    """A server-auth leaf for the names (DNS names first, then addresses, in the given order)."""
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    alt_names.extend(x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return CertifiedKey(key=key, cert=cert)


def certificate_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def private_key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    """Unencrypted PKCS#8 PEM: write it owner-only, never log it."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
