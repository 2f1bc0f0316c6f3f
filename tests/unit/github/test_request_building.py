"""Request building that needs no server: Actions URLs (§1.6), User-Agent (§1.7), reprs."""

from __future__ import annotations

import json

import httpx2
import pytest
from tests.plugins.secret_guard import SecretRegistry

from scaleset.github.client import ActionsClient
from scaleset.github.engine import Call
from scaleset.github.reply import Reply
from scaleset.github.transport import CallKind
from scaleset.github.user_agent import SystemInfo, user_agent


@pytest.mark.parametrize(
    ("base", "path", "query", "expected"),
    [
        (
            "https://fake/tenant/123/",
            "_apis/runtime/runnerscalesets/1",
            {},
            "https://fake/tenant/123/_apis/runtime/runnerscalesets/1?api-version=6.0-preview",
        ),
        (
            "https://fake/tenant/123",
            "/_apis/runtime/runnerscalesets",
            {"runnerGroupId": "1", "name": "my set"},
            "https://fake/tenant/123/_apis/runtime/runnerscalesets"
            "?api-version=6.0-preview&name=my+set&runnerGroupId=1",
        ),
        (
            "https://fake//tenant//123//",
            "_apis/runtime/runnergroups/",
            {"groupName": "g"},
            "https://fake/tenant/123/_apis/runtime/runnergroups/?api-version=6.0-preview&groupName=g",
        ),
        (
            "https://fake/tenant/1/",
            "_apis/x",
            {"api-version": "7.0"},
            "https://fake/tenant/1/_apis/x?api-version=7.0",
        ),
        (
            "https://fake/tenant/1/?tenantKey=abc",
            "_apis/x",
            {},
            "https://fake/tenant/1/_apis/x?api-version=6.0-preview&tenantKey=abc",
        ),
    ],
)
def test_actions_url(base: str, path: str, query: dict[str, str], expected: str) -> None:
    assert ActionsClient._actions_url(base, path, query) == expected


def test_user_agent_is_a_json_object_of_kind_scaleset() -> None:
    agent = json.loads(
        user_agent(
            SystemInfo(
                system="actions-runner-controller",
                version="1.2.3",
                commit_sha="abc",
                scale_set_id=7,
                subsystem="ghalistener",
            )
        )
    )
    assert agent["kind"] == "scaleset"
    assert (agent["system"], agent["version"], agent["scale_set_id"], agent["subsystem"]) == (
        "actions-runner-controller",
        "1.2.3",
        7,
        "ghalistener",
    )
    assert set(agent) == {
        "system",
        "version",
        "commit_sha",
        "scale_set_id",
        "subsystem",
        "build_version",
        "build_commit_sha",
        "kind",
    }


def test_call_and_reply_reprs_leave_out_credentials_and_bodies(
    secret_guard: SecretRegistry,
) -> None:
    token = secret_guard.register("admin-token-for-repr")
    call = Call(
        "GET",
        "https://fake/x",
        "x",
        CallKind.ADMIN,
        headers={"Authorization": f"Bearer {token}"},
        content=token.encode(),
    )
    reply = Reply(
        "GET", "https://fake/x", 200, "OK", httpx2.Headers(), f'{{"token":"{token}"}}'.encode()
    )
    secret_guard.assert_clean(call, reply)
