"""The fake's control API (``/_fake/*``: ground truth, faults, credentials) is for whoever
started the fake: it wants the fake's own control token, never a GitHub credential."""

from __future__ import annotations

import httpx2
import pytest

from scaleset.embedded.actions import FakeGitHub

PAT = "ghp_controlAuthTestToken0123456789"


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/_fake/state"), ("POST", "/_fake/pats"), ("POST", "/_fake/faults")],
)
async def test_the_control_api_wants_the_control_token(method: str, path: str) -> None:
    async with FakeGitHub() as fake, httpx2.AsyncClient(base_url=fake.base_url) as http:
        fake.add_pat(PAT)
        anonymous = await http.request(method, path, json={})
        with_a_pat = await http.request(
            method, path, json={}, headers={"Authorization": f"Bearer {PAT}"}
        )
        assert (anonymous.status_code, with_a_pat.status_code) == (401, 401)
        assert "control token" in anonymous.json()["error"]
        allowed = await http.get(
            "/_fake/state", headers={"Authorization": f"Bearer {fake.control_token}"}
        )
        assert allowed.status_code == 200


async def test_each_fake_has_its_own_control_token() -> None:
    async with FakeGitHub() as one, FakeGitHub() as two:
        assert one.control_token != two.control_token
        assert len(one.control_token) >= 32
