"""Generated credentials: a CA that signs a loopback serving cert, private files mode 0600, a
static token file with the admin in system:masters."""

from __future__ import annotations

import datetime
import ipaddress
import stat
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from scaleset.devtools.pki import ADMIN_GROUP, generate_pki

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def test_serving_certificate_is_signed_by_the_ca_for_loopback(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path / "pki", now=NOW)

    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    serving = x509.load_pem_x509_certificate(pki.serving_cert.read_bytes())

    ca_key = ca.public_key()
    assert isinstance(ca_key, ec.EllipticCurvePublicKey)
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert serving.not_valid_before_utc < NOW < serving.not_valid_after_utc


def test_private_files_are_owner_only(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path / "pki", now=NOW)

    for path in (pki.serving_key, pki.sa_private_key, pki.admin_token, pki.token_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_token_file_puts_the_admin_token_in_system_masters(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path / "pki", now=NOW)

    token = pki.admin_token.read_text()
    line = pki.token_file.read_text().strip()
    assert line.startswith(f"{token},")
    assert line.endswith(f'"{ADMIN_GROUP}"')
    assert len(token) >= 32


def test_each_generation_makes_a_new_token(tmp_path: Path) -> None:
    first = generate_pki(tmp_path / "a", now=NOW).admin_token.read_text()
    second = generate_pki(tmp_path / "b", now=NOW).admin_token.read_text()

    assert first != second


def test_repr_of_paths_carries_no_secret(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path / "pki", now=NOW)

    assert pki.admin_token.read_text() not in repr(pki)
