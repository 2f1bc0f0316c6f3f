"""Authentication against the fake: PAT and App, admin token refresh rules (§1, §7 auth list)."""

from __future__ import annotations

import asyncio
import functools
import json

import pytest
from pydantic import SecretStr
from tests.integration.github.harness import Harness
from tests.plugins.secret_guard import SecretRegistry, register_secret

from scaleset.embedded.actions import generate_rsa_private_key_pem
from scaleset.github import (
    ActionsClient,
    ActionsServiceError,
    GitHubApiError,
    GitHubApp,
    PersonalAccessToken,
    SystemInfo,
)

REGISTRATION_FLOW = ("registration-token", "runner-registration")


def auth_calls(harness: Harness) -> list[str]:
    """The GitHub-side auth requests the fake saw, in order."""
    names = []
    for record in harness.fake.control.requests:
        for marker in ("access_tokens", *REGISTRATION_FLOW):
            if record.path.endswith(marker):
                names.append(marker)
    return names


async def test_new_client_authenticates_before_its_first_actions_call(harness: Harness) -> None:
    client = harness.client()
    assert client.auth.current is None
    assert await client.get_runner_scale_set(1, "missing") is None
    paths = [(r.method, r.path, r.status) for r in harness.fake.control.requests]
    assert paths == [
        ("POST", "/api/v3/orgs/acme/actions/runners/registration-token", 201),
        ("POST", "/api/v3/actions/runner-registration", 201),
        (
            "GET",
            f"/tenant/{harness.fake.control.tenant_id(harness.org_url)}"
            "/_apis/runtime/runnerscalesets",
            200,
        ),
    ]
    admin = client.auth.current
    assert admin is not None
    assert admin.url == harness.fake.tenant_url_for(harness.org_url)
    assert admin.expires_at == harness.clock.time() + 3600


async def test_actions_requests_carry_headers_query_and_user_agent(harness: Harness) -> None:
    client = harness.client(system_info=SystemInfo(subsystem="ghalistener", scale_set_id=0))
    await client.get_runner_scale_set(1, "arc set")
    listing = harness.fake.control.requests_to("runnerscalesets", "GET")[0]
    assert dict(listing.query) == {
        "runnerGroupId": "1",
        "name": "arc set",
        "api-version": "6.0-preview",
    }
    assert listing.content_type == "application/json"
    agent = json.loads(listing.user_agent)
    assert (agent["kind"], agent["subsystem"], agent["scale_set_id"]) == (
        "scaleset",
        "ghalistener",
        0,
    )
    registration = harness.fake.control.requests_to("runner-registration")[0]
    assert json.loads(registration.user_agent)["kind"] == "scaleset"

    client.set_system_info(SystemInfo(subsystem="ghalistener", scale_set_id=42))
    await client.get_runner_scale_set(1, "arc set")
    latest = harness.fake.control.requests_to("runnerscalesets", "GET")[-1]
    assert json.loads(latest.user_agent)["scale_set_id"] == 42


@pytest.mark.parametrize("use_client_id", [False, True])
async def test_github_app_authentication(
    harness: Harness, use_client_id: bool, secret_guard: SecretRegistry
) -> None:
    app = harness.fake.add_github_app(app_id=123, installation_id=456, client_id="Iv1.fakeclient")
    credentials = GitHubApp(
        app_id="Iv1.fakeclient" if use_client_id else "123",
        installation_id=456,
        private_key=SecretStr(app.private_key_pem),
    )
    client = harness.client(credentials=credentials)
    assert await client.get_runner_scale_set(1, "none") is None
    assert auth_calls(harness) == ["access_tokens", *REGISTRATION_FLOW]
    assert harness.fake.authority.installation_tokens_issued == 1
    secret_guard.assert_clean(client, credentials, client.auth.current)


async def test_unknown_pat_is_refused_with_the_server_message(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    token = secret_guard.register("ghp_notKnownToTheFake_0000")
    client = harness.client(credentials=PersonalAccessToken(token=SecretStr(token)))
    with pytest.raises(GitHubApiError) as caught:
        await client.get_runner_scale_set(1, "x")
    assert caught.value.status == 401
    assert "Bad credentials" in str(caught.value)
    assert caught.value.github_request_id
    secret_guard.assert_clean(caught.value)


async def test_app_installation_unknown(harness: Harness) -> None:
    app = harness.fake.add_github_app(app_id=1, installation_id=2)
    client = harness.client(
        credentials=GitHubApp(
            app_id="1", installation_id=999, private_key=SecretStr(app.private_key_pem)
        )
    )
    with pytest.raises(GitHubApiError, match="installation token") as caught:
        await client.get_runner_scale_set(1, "x")
    assert caught.value.status == 404


async def test_valid_admin_token_is_reused(harness: Harness) -> None:
    client = harness.client()
    await client.get_runner_scale_set(1, "a")
    harness.clock.advance(3600 - 61)
    await client.get_runner_scale_set(1, "b")
    assert auth_calls(harness) == list(REGISTRATION_FLOW)


async def test_admin_token_expiring_within_60_seconds_is_refreshed(harness: Harness) -> None:
    client = harness.client()
    await client.get_runner_scale_set(1, "a")
    first = client.auth.current
    assert first is not None
    harness.clock.advance(3600 - 59)
    await client.get_runner_scale_set(1, "b")
    second = client.auth.current
    assert second is not None
    assert auth_calls(harness) == [*REGISTRATION_FLOW, *REGISTRATION_FLOW]
    assert second.token.get_secret_value() != first.token.get_secret_value()
    assert second.expires_at == harness.clock.time() + 3600


async def test_app_credentials_refresh_with_a_fresh_installation_token(harness: Harness) -> None:
    app = harness.fake.add_github_app(app_id=5, installation_id=6)
    client = harness.client(
        credentials=GitHubApp(
            app_id="5", installation_id=6, private_key=SecretStr(app.private_key_pem)
        )
    )
    await client.get_runner_scale_set(1, "a")
    harness.clock.advance(3600)
    await client.get_runner_scale_set(1, "a")
    assert auth_calls(harness) == ["access_tokens", *REGISTRATION_FLOW] * 2


async def test_refresh_failure_surfaces_the_body_and_keeps_the_old_token(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    client = harness.client()
    await client.get_runner_scale_set(1, "a")
    before = client.auth.current
    assert before is not None
    harness.clock.advance(3600 - 30)
    rule = harness.fake.control.faults.fail_next(
        None, 401, body="registration refused", path_contains="registration-token"
    )
    with pytest.raises(GitHubApiError) as caught:
        await client.get_runner_scale_set(1, "a")
    assert caught.value.status == 401
    assert "registration refused" in str(caught.value)
    secret_guard.assert_clean(caught.value)
    assert client.auth.current is before  # URL, token and expiry kept

    harness.fake.control.faults.remove(rule)
    await client.get_runner_scale_set(1, "a")
    after = client.auth.current
    assert after is not None
    assert after is not before
    assert after.expires_at > before.expires_at


async def test_runner_registration_401s_are_retried_until_success(harness: Harness) -> None:
    client = harness.client()
    harness.fake.control.faults.fail_next(4, 401, path_contains="runner-registration")
    await client.get_runner_scale_set(1, "a")
    assert harness.requests("runner-registration") == [401, 401, 401, 401, 201]
    assert harness.sleeps == [1, 2, 4, 8]
    admin = client.auth.current
    assert admin is not None
    assert admin.url == harness.fake.tenant_url_for(harness.org_url)


async def test_runner_registration_403_forever_gives_the_last_body(harness: Harness) -> None:
    client = harness.client()
    harness.fake.control.faults.fail_next(
        None, 403, body="still forbidden", path_contains="runner-registration"
    )
    with pytest.raises(GitHubApiError, match="still forbidden") as caught:
        await client.get_runner_scale_set(1, "a")
    assert caught.value.status == 403
    assert harness.requests("runner-registration") == [403] * 5


async def test_one_refresh_at_a_time(harness: Harness) -> None:
    client = harness.client()
    harness.fake.control.faults.add_latency(0.05, 1, path_contains="runner-registration")
    results = await asyncio.gather(*(client.get_runner_scale_set(1, f"s{i}") for i in range(8)))
    assert results == [None] * 8
    assert auth_calls(harness) == list(REGISTRATION_FLOW)


async def test_rejected_admin_token_is_replaced_on_the_next_call(harness: Harness) -> None:
    client = harness.client()
    await client.get_runner_scale_set(1, "a")
    harness.fake.control.expire_admin_tokens()
    with pytest.raises(ActionsServiceError) as caught:
        await client.get_runner_scale_set(1, "a")
    assert caught.value.status == 401
    assert caught.value.type_name == "System.UnauthorizedAccessException"
    await client.get_runner_scale_set(1, "a")
    assert auth_calls(harness) == [*REGISTRATION_FLOW, *REGISTRATION_FLOW]


@pytest.mark.parametrize(
    ("config", "token_path"),
    [
        (("acme", "app"), "/api/v3/repos/acme/app/actions/runners/registration-token"),
        (("enterprises", "big"), "/api/v3/enterprises/big/actions/runners/registration-token"),
    ],
)
async def test_repository_and_enterprise_scopes(
    harness: Harness, config: tuple[str, str], token_path: str
) -> None:
    url = (
        harness.fake.enterprise_config_url(config[1])
        if config[0] == "enterprises"
        else harness.fake.config_url(*config)
    )
    client = harness.client(url)
    assert await client.get_runner_scale_set(1, "x") is None
    assert harness.fake.control.requests[0].path == token_path
    admin = client.auth.current
    assert admin is not None
    assert admin.url == harness.fake.tenant_url_for(url)


@functools.cache
def app_key_pem() -> str:
    """One App key for these tests (generating a 2048-bit key costs about a second)."""
    return register_secret(generate_rsa_private_key_pem())


def app_client(harness: Harness) -> ActionsClient:
    app = harness.fake.add_github_app(app_id=77, installation_id=88, private_key_pem=app_key_pem())
    return harness.client(
        credentials=GitHubApp(
            app_id="77", installation_id=88, private_key=SecretStr(app.private_key_pem)
        )
    )


async def test_the_app_installation_token_is_minted_once_for_many_calls(harness: Harness) -> None:
    """Cached until near its expiry (ARC mints one per call): N calls, 1 mint."""
    client = app_client(harness)
    await client.get_runner_scale_set(1, "a")  # admin token: installation + registration
    for _ in range(5):
        await client.list_runners()  # GitHub REST with the installation token
    client.auth.invalidate()
    await client.get_runner_scale_set(1, "b")  # a new admin token, same installation token
    assert harness.fake.authority.installation_tokens_issued == 1
    assert auth_calls(harness) == ["access_tokens", *REGISTRATION_FLOW, *REGISTRATION_FLOW]
    assert len(harness.fake.control.requests_to("/actions/runners", "GET")) == 5


async def test_the_installation_token_is_minted_anew_near_its_expiry(harness: Harness) -> None:
    client = app_client(harness)
    await client.list_runners()
    harness.clock.advance(3600 - 301)  # 301 s left: still used
    await client.list_runners()
    assert harness.fake.authority.installation_tokens_issued == 1
    harness.clock.advance(2)  # 299 s left: too close to its expiry
    await client.list_runners()
    assert harness.fake.authority.installation_tokens_issued == 2


async def test_a_rejected_installation_token_is_minted_anew(harness: Harness) -> None:
    client = app_client(harness)
    await client.list_runners()
    harness.fake.control.faults.fail_next(
        1, 401, body='{"message": "Bad credentials"}', method="GET", path_contains="/runners"
    )
    with pytest.raises(GitHubApiError, match="Bad credentials"):
        await client.list_runners()
    await client.list_runners()
    assert harness.fake.authority.installation_tokens_issued == 2


async def test_concurrent_callers_share_one_installation_token_mint(harness: Harness) -> None:
    client = app_client(harness)
    harness.fake.control.faults.add_latency(0.05, 1, path_contains="access_tokens")
    await asyncio.gather(*(client.list_runners() for _ in range(6)))
    assert harness.fake.authority.installation_tokens_issued == 1
