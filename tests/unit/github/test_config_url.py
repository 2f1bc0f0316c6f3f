"""Configure URL parsing: scope, hosted vs GHES, API base (protocol §1.1, §7 parsing table)."""

from __future__ import annotations

import pytest

from scaleset.github.config_url import FORCE_GHES_ENV, Scope, parse_config_url
from scaleset.github.errors import InvalidConfigUrl

NO_ENV: dict[str, str] = {}


@pytest.mark.parametrize(
    ("url", "scope", "enterprise", "org", "repo", "hosted"),
    [
        ("https://github.com/org/repo", Scope.REPOSITORY, "", "org", "repo", True),
        ("https://github.com/org/repo/", Scope.REPOSITORY, "", "org", "repo", True),
        ("https://github.com/org", Scope.ORGANIZATION, "", "org", "", True),
        (
            "https://github.com/enterprises/my-enterprise",
            Scope.ENTERPRISE,
            "my-enterprise",
            "",
            "",
            True,
        ),
        (
            "https://github.com/enterprises/my-enterprise/",
            Scope.ENTERPRISE,
            "my-enterprise",
            "",
            "",
            True,
        ),
        ("https://github.com/Enterprises/e", Scope.ENTERPRISE, "e", "", "", True),
        ("https://www.github.com/org", Scope.ORGANIZATION, "", "org", "", True),
        ("https://www.github.com/org/", Scope.ORGANIZATION, "", "org", "", True),
        ("https://github.localhost/org", Scope.ORGANIZATION, "", "org", "", True),
        ("https://my-ghes.com/org", Scope.ORGANIZATION, "", "org", "", False),
        ("https://my-ghes.com/org/", Scope.ORGANIZATION, "", "org", "", False),
        ("https://my-ghes.ghe.com/org/", Scope.ORGANIZATION, "", "org", "", True),
        ("https://GitHub.COM/org", Scope.ORGANIZATION, "", "org", "", True),
        ("http://127.0.0.1:8080/acme/widgets", Scope.REPOSITORY, "", "acme", "widgets", False),
    ],
)
def test_valid_urls(
    url: str, scope: Scope, enterprise: str, org: str, repo: str, hosted: bool
) -> None:
    config = parse_config_url(url, environ=NO_ENV)
    assert (config.scope, config.enterprise, config.organization, config.repository) == (
        scope,
        enterprise,
        org,
        repo,
    )
    assert config.is_hosted is hosted
    assert config.url == url.strip("/")


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/",
        "https://github.com",
        "https://github.com/some/random/path",
        "https://github.com/org//repo",
        "github.com/org",
        "ftp://github.com/org",
        "",
    ],
)
def test_invalid_urls(url: str) -> None:
    with pytest.raises(InvalidConfigUrl, match="invalid config URL"):
        parse_config_url(url, environ=NO_ENV)


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
    config = parse_config_url(url, environ=NO_ENV)
    assert config.api_base == api_base
    assert (
        config.api_url("/actions/runner-registration") == api_base + "/actions/runner-registration"
    )


@pytest.mark.parametrize("value", ["1", "", "false"])
def test_force_ghes_treats_every_host_as_ghes(value: str) -> None:
    config = parse_config_url("https://github.com/org", environ={FORCE_GHES_ENV: value})
    assert not config.is_hosted
    assert config.api_base == "https://github.com/api/v3"


def test_force_ghes_read_from_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FORCE_GHES_ENV, "true")
    assert not parse_config_url("https://github.com/org").is_hosted
    monkeypatch.delenv(FORCE_GHES_ENV)
    assert parse_config_url("https://github.com/org").is_hosted


@pytest.mark.parametrize(
    ("url", "token_path", "runners_path"),
    [
        (
            "https://github.com/acme",
            "/orgs/acme/actions/runners/registration-token",
            "/orgs/acme/actions/runners",
        ),
        (
            "https://github.com/acme/widgets",
            "/repos/acme/widgets/actions/runners/registration-token",
            "/repos/acme/widgets/actions/runners",
        ),
        (
            "https://github.com/enterprises/big",
            "/enterprises/big/actions/runners/registration-token",
            "/enterprises/big/actions/runners",
        ),
    ],
)
def test_scope_paths(url: str, token_path: str, runners_path: str) -> None:
    config = parse_config_url(url, environ=NO_ENV)
    assert config.registration_token_path == token_path
    assert config.runners_path == runners_path
