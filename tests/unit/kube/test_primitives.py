"""Small primitives: manual clock, token bucket, back-off, bind addresses, token-file auth."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import httpx2
import pytest

from scaleset.clock import ManualClock, run_with_deadline
from scaleset.kube.auth import TokenFileAuth
from scaleset.kube.errors import KubeConfigError
from scaleset.kube.ratelimit import TokenBucket
from scaleset.runtime.backoff import Backoff
from scaleset.runtime.probes import parse_bind_address


async def test_manual_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = ManualClock()
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.ensure_future(sleeper(n, s)) for n, s in (("b", 2.0), ("a", 1.0))]
    await asyncio.sleep(0)
    assert clock.sleepers == 2
    clock.advance(1.5)
    await asyncio.sleep(0)
    assert woke == ["a"]
    clock.advance(0.5)
    await asyncio.gather(*tasks)
    assert woke == ["a", "b"]
    assert (clock.now() - ManualClock().now()).total_seconds() == 2.0


async def test_run_with_deadline_times_out_on_the_injected_clock() -> None:
    clock = ManualClock()
    never = asyncio.Event()
    attempt = asyncio.ensure_future(run_with_deadline(clock, 5.0, never.wait()))
    for _ in range(5):
        await asyncio.sleep(0)
    assert clock.sleepers == 1
    clock.advance(5.0)
    with pytest.raises(TimeoutError):
        await attempt


def test_token_bucket_bursts_then_refills_at_rate() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate=10.0, burst=3, clock=clock)
    assert [bucket.try_take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.try_take() == pytest.approx(0.1)
    clock.advance(0.1)
    assert bucket.try_take() == 0.0
    clock.advance(100.0)
    assert bucket.available() == pytest.approx(3.0)  # never above burst


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


async def test_token_file_is_reread_periodically_and_after_401(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    clock = ManualClock()
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        header = request.headers["Authorization"]
        seen.append(header)
        return httpx2.Response(401 if header.endswith("expired") else 200)

    auth = TokenFileAuth(token_file, refresh_seconds=60.0, clock=clock)
    async with httpx2.AsyncClient(
        base_url="http://127.0.0.1", transport=httpx2.MockTransport(answer), auth=auth
    ) as http:
        await http.get("/a")
        token_file.write_text("second-token")  # the kubelet rotated it
        await http.get("/b")  # cached for up to a minute
        clock.advance(60.0)
        await http.get("/c")
        token_file.write_text("expired")
        clock.advance(60.0)
        token_file.write_text("expired")
        response = await http.get("/d")
        token_file.write_text("third-token")
        clock.advance(1.0)
        await http.get("/e")  # the 401 below forces a re-read before the minute is up
    assert seen[:3] == ["Bearer first-token", "Bearer first-token", "Bearer second-token"]
    assert response.status_code == 401  # same expired token after re-read: no endless retry
    assert "token" not in repr(auth).replace("TokenFileAuth", "").replace(str(token_file), "")


async def test_token_file_401_rereads_a_rotated_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("old")
    clock = ManualClock()

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200 if request.headers["Authorization"] == "Bearer new" else 401)

    auth = TokenFileAuth(token_file, clock=clock)
    async with httpx2.AsyncClient(
        base_url="http://127.0.0.1", transport=httpx2.MockTransport(answer), auth=auth
    ) as http:
        assert (await http.get("/")).status_code == 401
        token_file.write_text("new")
        assert (await http.get("/")).status_code == 200  # 401 with "old", re-read, retried


def test_missing_token_file_is_a_config_error(tmp_path: Path) -> None:
    auth = TokenFileAuth(tmp_path / "absent")
    request = httpx2.Request("GET", "http://127.0.0.1/")
    with pytest.raises(KubeConfigError, match="token file"):
        next(auth.auth_flow(request))
