"""Loopback X.509: the CA signs leaves only, the leaf serves exactly the names asked for, and
both are valid from five minutes before ``now`` to ``now + validity``."""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from scaleset.certs import (
    certificate_pem,
    issue_serving_certificate,
    new_certificate_authority,
    private_key_pem,
)

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def test_ca_is_self_signed_and_signs_leaves_only() -> None:
    ca = new_certificate_authority("test-ca", NOW, DAY)

    ca.cert.verify_directly_issued_by(ca.cert)
    constraints = ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca is True
    assert constraints.path_length == 0
    assert ca.cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign


def test_serving_certificate_names_order_and_window() -> None:
    ca = new_certificate_authority("test-ca", NOW, DAY)

    leaf = issue_serving_certificate(
        ca,
        "server",
        dns_names=["localhost", "b"],
        ip_addresses=["127.0.0.1", "::1"],
        now=NOW,
        validity=DAY,
    )

    leaf.cert.verify_directly_issued_by(ca.cert)
    names = leaf.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(n.value) for n in names] == ["localhost", "b", "127.0.0.1", "::1"]
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert not leaf.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = leaf.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert leaf.cert.not_valid_before_utc == NOW - datetime.timedelta(minutes=5)
    assert leaf.cert.not_valid_after_utc == NOW + DAY


def test_pem_encodings() -> None:
    ca = new_certificate_authority("test-ca", NOW, DAY)

    assert certificate_pem(ca.cert).startswith(b"-----BEGIN CERTIFICATE-----")
    assert private_key_pem(ca.key).startswith(b"-----BEGIN PRIVATE KEY-----")
