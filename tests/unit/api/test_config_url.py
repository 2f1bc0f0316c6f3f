"""The one githubConfigUrl type: scope, hosted vs GHES, API base and paths (spec §1.1, §7
parsing table), shared by CRD validation, the listener and the GitHub client."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

import scaleset.github
from scaleset.api import config_url
from scaleset.api.config_url import (
    FORCE_GHES_ENV,
    GitHubConfigUrl,
    InvalidConfigUrl,
    Scope,
    parse_config_url,
)
from scaleset.github import ActionsClient, PersonalAccessToken, ProxyConfig

NO_ENV: dict[str, str] = {}


@pytest.mark.parametrize(
    ("url", "scope", "names", "hosted"),
    [
        ("https://github.com/org/repo", Scope.REPOSITORY, ("", "org", "repo"), True),
        ("https://github.com/org/repo/", Scope.REPOSITORY, ("", "org", "repo"), True),
        ("https://github.com/org", Scope.ORGANIZATION, ("", "org", ""), True),
        ("https://github.com/octo-org/", Scope.ORGANIZATION, ("", "octo-org", ""), True),
        ("https://github.com/enterprises/my-ent", Scope.ENTERPRISE, ("my-ent", "", ""), True),
        ("https://github.com/enterprises/my-ent/", Scope.ENTERPRISE, ("my-ent", "", ""), True),
        ("https://github.com/Enterprises/e", Scope.ENTERPRISE, ("e", "", ""), True),
        ("https://github.com/ENTERPRISES/corp", Scope.ENTERPRISE, ("corp", "", ""), True),
        ("https://www.github.com/org", Scope.ORGANIZATION, ("", "org", ""), True),
        ("https://www.github.com/org/", Scope.ORGANIZATION, ("", "org", ""), True),
        ("https://github.localhost/org", Scope.ORGANIZATION, ("", "org", ""), True),
        ("https://my-ghes.com/org", Scope.ORGANIZATION, ("", "org", ""), False),
        ("https://my-ghes.com/org/", Scope.ORGANIZATION, ("", "org", ""), False),
        ("https://my-ghes.ghe.com/org/", Scope.ORGANIZATION, ("", "org", ""), True),
        ("https://GitHub.COM/org", Scope.ORGANIZATION, ("", "org", ""), True),
        ("http://ghes.local:8443/team", Scope.ORGANIZATION, ("", "team", ""), False),
        ("https://github.com/my%20org", Scope.ORGANIZATION, ("", "my org", ""), True),
        ("http://127.0.0.1:8080/acme/widgets", Scope.REPOSITORY, ("", "acme", "widgets"), False),
    ],
)
def test_valid_urls(url: str, scope: Scope, names: tuple[str, str, str], hosted: bool) -> None:
    parsed = parse_config_url(url, environ=NO_ENV)
    assert parsed.scope is scope
    assert (parsed.enterprise, parsed.organization, parsed.repository) == names
    assert parsed.is_hosted is hosted
    assert parsed.url == url.strip("/")


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/",
        "https://github.com",
        "https://github.com/some/random/path",
        "https://github.com/a/b/c",
        "https://github.com/org//repo",
        "github.com/org",
        "ftp://github.com/org",
        "",
    ],
)
def test_invalid_urls(url: str) -> None:
    with pytest.raises(InvalidConfigUrl, match="invalid config URL: ") as caught:
        parse_config_url(url, environ=NO_ENV)
    assert caught.value.reason
    assert str(caught.value) == f"invalid config URL: {caught.value.reason}"
    assert isinstance(caught.value, ValueError)


def test_credentials_in_url_are_refused_without_being_echoed() -> None:
    with pytest.raises(InvalidConfigUrl) as caught:
        parse_config_url("https://user:hunter2-secret@github.com/org", environ=NO_ENV)
    assert "hunter2-secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "api_base"),
    [
        ("https://github.com/org/repo", "https://api.github.com"),
        ("https://www.github.com/org", "https://api.github.com"),
        ("https://WWW.github.com/org", "https://api.github.com"),
        ("http://github.localhost/org/repo", "http://api.github.localhost"),
        ("https://acme.ghe.com/org", "https://api.acme.ghe.com"),
        ("https://ghes.example/org", "https://ghes.example/api/v3"),
        ("http://localhost:3000/org", "http://localhost:3000/api/v3"),
        ("http://github.localhost:8080/org", "http://github.localhost:8080/api/v3"),
    ],
)
def test_api_base(url: str, api_base: str) -> None:
    parsed = parse_config_url(url, environ=NO_ENV)
    assert parsed.api_base == api_base
    assert (
        parsed.api_url("/actions/runner-registration") == api_base + "/actions/runner-registration"
    )


@pytest.mark.parametrize("value", ["1", "", "false"])
def test_force_ghes_treats_every_host_as_ghes(value: str) -> None:
    parsed = parse_config_url("https://github.com/org", environ={FORCE_GHES_ENV: value})
    assert not parsed.is_hosted
    assert parsed.api_base == "https://github.com/api/v3"


def test_force_ghes_read_from_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FORCE_GHES_ENV, "true")
    assert not parse_config_url("https://github.com/org").is_hosted
    monkeypatch.delenv(FORCE_GHES_ENV)
    assert parse_config_url("https://github.com/org").is_hosted


@pytest.mark.parametrize(
    ("url", "token_path", "runners_path", "template"),
    [
        (
            "https://github.com/acme",
            "/orgs/acme/actions/runners/registration-token",
            "/orgs/acme/actions/runners",
            "/orgs/{org}",
        ),
        (
            "https://github.com/acme/widgets",
            "/repos/acme/widgets/actions/runners/registration-token",
            "/repos/acme/widgets/actions/runners",
            "/repos/{owner}/{repo}",
        ),
        (
            "https://github.com/enterprises/big",
            "/enterprises/big/actions/runners/registration-token",
            "/enterprises/big/actions/runners",
            "/enterprises/{enterprise}",
        ),
        (
            "https://github.com/my%20org",
            "/orgs/my%20org/actions/runners/registration-token",
            "/orgs/my%20org/actions/runners",
            "/orgs/{org}",
        ),
    ],
)
def test_scope_paths(url: str, token_path: str, runners_path: str, template: str) -> None:
    parsed = parse_config_url(url, environ=NO_ENV)
    assert parsed.registration_token_path == token_path
    assert parsed.runners_path == runners_path
    assert parsed.scope_template == template


def test_one_type_and_one_error_for_every_layer() -> None:
    """The GitHub client re-exports the api layer's type and error; none of its own."""
    assert scaleset.github.GitHubConfigUrl is GitHubConfigUrl
    assert scaleset.github.InvalidConfigUrl is InvalidConfigUrl
    assert scaleset.github.parse_config_url is parse_config_url
    assert scaleset.github.errors.InvalidConfigUrl is InvalidConfigUrl
    assert [name for name in vars(scaleset.github.errors) if name.endswith("ConfigUrl")] == [
        "InvalidConfigUrl"
    ]
    assert config_url.__name__ == "scaleset.api.config_url"


async def test_the_client_raises_the_api_error_for_a_bad_url() -> None:
    token = PersonalAccessToken(token=SecretStr("ghp_configUrlTestToken000000000"))
    with pytest.raises(InvalidConfigUrl, match="should point to"):
        ActionsClient("https://github.com/a/b/c", token, proxy=ProxyConfig(), environ=NO_ENV)
    async with ActionsClient(
        "https://ghes.example/acme/", token, proxy=ProxyConfig(), environ=NO_ENV
    ) as client:
        assert isinstance(client.config, GitHubConfigUrl)
        assert client.config.api_base == "https://ghes.example/api/v3"
