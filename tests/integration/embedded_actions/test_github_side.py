"""GitHub REST side of the fake: credentials, token endpoints, runner-registration (spec §1)."""

from __future__ import annotations

import httpx2
import jwt
import pytest
from tests.integration.embedded_actions.wire_client import PAT, ScaleSetClient, app_jwt

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, generate_rsa_private_key_pem


@pytest.mark.parametrize(
    ("scope", "path"),
    [
        ("acme", "/orgs/acme"),
        ("acme/app", "/repos/acme/app"),
        ("enterprises/ent", "/enterprises/ent"),
    ],
)
async def test_registration_token_for_every_scope(
    fake: FakeGitHub, http: httpx2.AsyncClient, scope: str, path: str
) -> None:
    response = await http.post(
        f"{fake.api_url}{path}/actions/runners/registration-token",
        headers={"Authorization": f"Bearer {PAT}"},
    )
    assert response.status_code == 201
    body = response.json()
    assert body["token"]
    assert body["expires_at"].endswith("Z")
    assert response.headers["X-GitHub-Request-Id"]
    client = await ScaleSetClient.register(http, fake, f"{fake.base_url}/{scope}")
    assert client.tenant_url.startswith(fake.base_url + "/tenant/")
    assert client.tenant_url.endswith("/")


async def test_token_scheme_is_accepted_like_bearer(
    fake: FakeGitHub, http: httpx2.AsyncClient
) -> None:
    response = await http.post(
        f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
        headers={"Authorization": f"token {PAT}"},
    )
    assert response.status_code == 201


@pytest.mark.parametrize("authorization", [None, "Bearer ghp_unknown", "Basic abc"])
async def test_unknown_credentials_are_401(
    fake: FakeGitHub, http: httpx2.AsyncClient, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = await http.post(
        f"{fake.api_url}/orgs/acme/actions/runners/registration-token", headers=headers
    )
    assert response.status_code == 401
    assert "message" in response.json()


async def test_a_scoped_pat_only_covers_its_scope(
    fake: FakeGitHub, http: httpx2.AsyncClient
) -> None:
    fake.add_pat("ghp_scoped", scopes=["acme"])
    url = fake.api_url + "/{}/actions/runners/registration-token"
    headers = {"Authorization": "Bearer ghp_scoped"}
    assert (await http.post(url.format("orgs/acme"), headers=headers)).status_code == 201
    assert (await http.post(url.format("repos/acme/app"), headers=headers)).status_code == 201
    assert (await http.post(url.format("orgs/other"), headers=headers)).status_code == 403


async def test_runner_registration_answers_tenant_url_and_admin_jwt_with_exp(
    fake: FakeGitHub, clock: ManualClock, http: httpx2.AsyncClient
) -> None:
    client = await ScaleSetClient.register(http, fake, fake.config_url("acme") + "/")
    claims = jwt.decode(client.admin_token, options={"verify_signature": False})
    assert claims["exp"] == int(clock.time() + fake.settings.admin_token_ttl_seconds)
    assert jwt.get_unverified_header(client.admin_token)["alg"] == "RS256"


async def test_runner_registration_refuses_bad_or_foreign_registration_tokens(
    fake: FakeGitHub, http: httpx2.AsyncClient
) -> None:
    reg = await http.post(
        f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
        headers={"Authorization": f"Bearer {PAT}"},
    )
    token = reg.json()["token"]
    url = f"{fake.api_url}/actions/runner-registration"
    wrong = await http.post(
        url,
        headers={"Authorization": "RemoteAuth nope"},
        json={"url": fake.config_url("acme"), "runner_event": "register"},
    )
    assert wrong.status_code == 401
    foreign = await http.post(
        url,
        headers={"Authorization": f"RemoteAuth {token}"},
        json={"url": fake.config_url("other"), "runner_event": "register"},
    )
    assert foreign.status_code == 403
    invalid = await http.post(
        url,
        headers={"Authorization": f"RemoteAuth {token}"},
        json={"url": fake.base_url + "/a/b/c", "runner_event": "register"},
    )
    assert invalid.status_code == 400


async def test_registration_token_expires_after_an_hour(
    fake: FakeGitHub, clock: ManualClock, http: httpx2.AsyncClient
) -> None:
    reg = await http.post(
        f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
        headers={"Authorization": f"Bearer {PAT}"},
    )
    clock.advance(3601)
    response = await http.post(
        f"{fake.api_url}/actions/runner-registration",
        headers={"Authorization": f"RemoteAuth {reg.json()['token']}"},
        json={"url": fake.config_url("acme"), "runner_event": "register"},
    )
    assert response.status_code == 401


async def test_admin_token_expires_with_the_clock(org: ScaleSetClient, clock: ManualClock) -> None:
    assert (
        await org.admin("GET", "_apis/runtime/runnergroups/", params={"groupName": "Default"})
    ).status_code == 200
    clock.advance(org.fake.settings.admin_token_ttl_seconds)
    expired = await org.admin("GET", "_apis/runtime/runnergroups/", params={"groupName": "Default"})
    assert expired.status_code == 401
    assert "UnauthorizedAccess" in expired.json()["typeName"]


async def test_expire_admin_tokens_revokes_every_issued_token(
    org: ScaleSetClient, http: httpx2.AsyncClient
) -> None:
    org.fake.control.expire_admin_tokens()
    assert (await org.admin("GET", "_apis/runtime/runnergroups/")).status_code == 401
    fresh = await ScaleSetClient.register(http, org.fake, org.config_url)
    assert (await fresh.admin("GET", "_apis/runtime/runnergroups/")).status_code == 200


async def test_admin_token_of_one_tenant_is_refused_by_another(
    fake: FakeGitHub, http: httpx2.AsyncClient
) -> None:
    acme = await ScaleSetClient.register(http, fake, fake.config_url("acme"))
    other = await ScaleSetClient.register(http, fake, fake.config_url("other"))
    response = await http.get(
        other.tenant_url + "_apis/runtime/runnergroups/",
        params={"api-version": "6.0-preview"},
        headers={"Authorization": f"Bearer {acme.admin_token}"},
    )
    assert response.status_code == 401


class TestGitHubApp:
    async def test_installation_token_then_registration(
        self, fake: FakeGitHub, clock: ManualClock, http: httpx2.AsyncClient
    ) -> None:
        app = fake.add_github_app(app_id="123", installation_id=456)
        token = await http.post(
            f"{fake.api_url}/app/installations/456/access_tokens",
            headers={
                "Authorization": f"Bearer {app_jwt(app.private_key_pem, '123', clock.time())}"
            },
        )
        assert token.status_code == 201
        installation_token = token.json()["token"]
        reg = await http.post(
            f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
            headers={"Authorization": f"Bearer {installation_token}"},
        )
        assert reg.status_code == 201
        clock.advance(fake.settings.installation_token_ttl_seconds)
        late = await http.post(
            f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
            headers={"Authorization": f"Bearer {installation_token}"},
        )
        assert late.status_code == 401

    async def test_client_id_is_accepted_as_issuer_and_a_given_key_is_used(
        self, fake: FakeGitHub, clock: ManualClock, http: httpx2.AsyncClient
    ) -> None:
        pem = generate_rsa_private_key_pem()
        fake.add_github_app(app_id=7, installation_id=8, private_key_pem=pem, client_id="Iv1.abc")
        response = await http.post(
            f"{fake.api_url}/app/installations/8/access_tokens",
            headers={"Authorization": f"Bearer {app_jwt(pem, 'Iv1.abc', clock.time())}"},
        )
        assert response.status_code == 201

    @pytest.mark.parametrize(
        ("issuer", "iat_skew", "lifetime", "signed_by_app"),
        [
            ("999", 60, 540, True),  # unknown issuer
            ("123", 60, 540, False),  # signed with another key
            ("123", 1000, 540, True),  # expired
            ("123", -120, 540, True),  # issued in the future
            ("123", 0, 1200, True),  # exp too far ahead
        ],
    )
    async def test_bad_app_jwts_are_401(
        self,
        fake: FakeGitHub,
        clock: ManualClock,
        http: httpx2.AsyncClient,
        issuer: str,
        iat_skew: float,
        lifetime: float,
        signed_by_app: bool,
    ) -> None:
        app = fake.add_github_app(app_id="123", installation_id=456)
        key = app.private_key_pem if signed_by_app else generate_rsa_private_key_pem()
        token = app_jwt(key, issuer, clock.time(), iat_skew=iat_skew, lifetime=lifetime)
        response = await http.post(
            f"{fake.api_url}/app/installations/456/access_tokens",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 401

    async def test_unknown_installation_is_404(
        self, fake: FakeGitHub, clock: ManualClock, http: httpx2.AsyncClient
    ) -> None:
        app = fake.add_github_app(app_id="123", installation_id=456)
        response = await http.post(
            f"{fake.api_url}/app/installations/999/access_tokens",
            headers={
                "Authorization": f"Bearer {app_jwt(app.private_key_pem, '123', clock.time())}"
            },
        )
        assert response.status_code == 404

    def test_private_key_is_not_in_repr(self, fake: FakeGitHub) -> None:
        app = fake.add_github_app(app_id="123", installation_id=456)
        assert "PRIVATE KEY" not in repr(app)
