"""Client primitives: the token bucket (client QPS) and token-file auth that follows rotation."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from scaleset.clock import ManualClock
from scaleset.kube.auth import TokenFileAuth
from scaleset.kube.errors import KubeConfigError
from scaleset.kube.ratelimit import TokenBucket


def test_token_bucket_bursts_then_refills_at_rate() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate=10.0, burst=3, clock=clock)
    assert [bucket.try_take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.try_take() == pytest.approx(0.1)
    clock.advance(0.1)
    assert bucket.try_take() == 0.0
    clock.advance(100.0)
    assert bucket.available() == pytest.approx(3.0)  # never above burst


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
