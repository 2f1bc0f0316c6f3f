"""Back-off for the retry loops, and the probe servers' Go-style bind addresses."""

from __future__ import annotations

import random

import pytest

from scaleset.backoff import Backoff
from scaleset.runtime.probes import parse_bind_address


def test_backoff_grows_to_a_cap_and_resets() -> None:
    backoff = Backoff(1.0, 8.0, jitter=0.0, rng=random.Random(0))
    assert [backoff.next() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    backoff.reset()
    assert backoff.next() == 1.0


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (":8080", ("0.0.0.0", 8080)),  # noqa: S104 - Go semantics of ":port"
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9000", ("::1", 9000)),
        ("0", None),
        ("", None),
        (None, None),
    ],
)
def test_bind_addresses_use_go_syntax(
    address: str | None, expected: tuple[str, int] | None
) -> None:
    assert parse_bind_address(address) == expected


@pytest.mark.parametrize("address", ["8080x", "localhost", ":99999"])
def test_bad_bind_addresses_are_rejected(address: str) -> None:
    with pytest.raises(ValueError, match="bind address"):
        parse_bind_address(address)
