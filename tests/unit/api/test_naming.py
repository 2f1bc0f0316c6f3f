"""Object names match ARC's: FNV-1a-32 + Kubernetes SafeEncodeString, checked against published
FNV test vectors, a second FNV implementation and names seen on real ARC installations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleset.api import keys, naming
from scaleset.api.config_url import InvalidConfigUrl


def fnv1a_32_by_shifts(data: bytes) -> int:
    """FNV-1a with the prime multiplication spelled as shifts and adds (16777619 = 2^24 + 2^8 +
    0x93), the formulation of the FNV reference code — an independent second implementation."""
    h = 2166136261
    for byte in data:
        h ^= byte
        h = (h + (h << 1) + (h << 4) + (h << 7) + (h << 8) + (h << 24)) % 2**32
    return h


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"", 0x811C9DC5),
        (b"a", 0xE40C292C),
        (b"foobar", 0xBF9CF968),
    ],
)
def test_published_fnv1a_32_vectors(text: bytes, expected: int) -> None:
    assert naming.fnv1a_32(text) == expected


@given(st.binary(max_size=64))
def test_fnv1a_32_agrees_with_the_shift_formulation(data: bytes) -> None:
    assert naming.fnv1a_32(data) == fnv1a_32_by_shifts(data)


def test_safe_encode_maps_digits_through_the_alphabet() -> None:
    # '0' is code 48, 48 % 27 = 21 -> alphabet[21] = '4'; '6' is 54 % 27 = 0 -> 'b'.
    assert naming.safe_encode("0123456789") == "456789bcdf"


def test_h8_of_the_empty_string() -> None:
    # 0x811c9dc5 = 2166136261; digits 2,1,6,6,1,3,6,2,6,1 map to 6,5,b,b,5,7,b,6,b,5.
    assert naming.fnv_hash_string("") == "65bb57b6b5"
    assert naming.h8("") == "65bb57b6"


def test_name_seen_on_real_arc_installations() -> None:
    # ARC before 0.13.1 named listeners <ARS>-<h8(namespace)>-listener; GitHub's ARC quickstart
    # shows "arc-runner-set-754b578d-listener" for runner namespace "arc-runners".
    assert naming.legacy_listener_name("arc-runner-set", "arc-runners") == (
        "arc-runner-set-754b578d-listener"
    )
    assert naming.ephemeral_runner_set_proxy_secret_name("arc-runner-set", "arc-runners") == (
        "arc-runner-set-754b578d-runner-proxy"
    )


def expected_suffix(text: str) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digits = str(fnv1a_32_by_shifts(text.encode("utf-8")))
    return "".join(alphabet[ord(d) % 27] for d in digits)[:8]


@pytest.mark.parametrize(
    ("ars", "namespace", "group", "url"),
    [
        ("arc-runner-set", "arc-runners", "", "https://github.com/octo-org"),
        ("k8s-mode", "ci", "builders", "https://ghes.example.com/octo-org/octo-repo"),
        ("ünïcode", "ns", "grüppe", "https://github.com/enterprises/ë"),
    ],
)
def test_listener_name_hashes_namespace_group_and_url(
    ars: str, namespace: str, group: str, url: str
) -> None:
    name = naming.listener_name(ars, namespace, group, url)
    assert name == f"{ars}-{expected_suffix(f'{namespace}@{group}@{url}')}-listener"
    assert naming.listener_config_secret_name(name) == f"{name}-config"
    assert naming.listener_proxy_secret_name(name) == f"{name}-proxy"


def test_listener_name_changes_with_each_input() -> None:
    base = naming.listener_name("set", "ns", "", "https://github.com/o")
    assert naming.listener_name("set", "ns2", "", "https://github.com/o") != base
    assert naming.listener_name("set", "ns", "g", "https://github.com/o") != base
    assert naming.listener_name("set", "ns", "", "https://github.com/o2") != base
    assert len(base) == len("set") + len("--listener") + 8


def test_simple_names() -> None:
    assert naming.ephemeral_runner_set_name("arc-runner-set") == "arc-runner-set"
    assert naming.ephemeral_runner_generate_name("arc-runner-set") == "arc-runner-set-runner-"
    assert naming.runner_pod_name("r-1") == naming.jit_secret_name("r-1") == "r-1"


def test_github_url_labels() -> None:
    assert naming.github_url_labels("https://github.com/octo-org/octo-repo") == {
        keys.ORGANIZATION_LABEL: "octo-org",
        keys.REPOSITORY_LABEL: "octo-repo",
    }
    assert naming.github_url_labels("https://github.com/Enterprises/corp/") == {
        keys.ENTERPRISE_LABEL: "corp"
    }
    long_name = "o" * 70
    assert naming.github_url_labels(f"https://github.com/{long_name}") == {
        keys.ORGANIZATION_LABEL: "o" * 58 + "-trim"
    }
    assert naming.url_label_value("_.org-") == "org"
    with pytest.raises(InvalidConfigUrl):
        naming.github_url_labels("https://github.com")
