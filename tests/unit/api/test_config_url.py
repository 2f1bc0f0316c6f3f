"""githubConfigUrl scope parsing (spec/actions-protocol.md §1.1)."""

from __future__ import annotations

import pytest

from scaleset.api.config_url import InvalidConfigUrl, Scope, parse_config_url


@pytest.mark.parametrize(
    ("url", "scope", "names"),
    [
        ("https://github.com/octo-org", Scope.ORGANIZATION, ("", "octo-org", "")),
        ("https://github.com/octo-org/", Scope.ORGANIZATION, ("", "octo-org", "")),
        ("https://github.com/octo-org/octo-repo", Scope.REPOSITORY, ("", "octo-org", "octo-repo")),
        ("https://github.com/enterprises/corp", Scope.ENTERPRISE, ("corp", "", "")),
        ("https://github.com/ENTERPRISES/corp", Scope.ENTERPRISE, ("corp", "", "")),
        ("http://ghes.local:8443/team", Scope.ORGANIZATION, ("", "team", "")),
        ("https://github.com/my%20org", Scope.ORGANIZATION, ("", "my org", "")),
    ],
)
def test_scopes(url: str, scope: Scope, names: tuple[str, str, str]) -> None:
    parsed = parse_config_url(url)
    assert parsed.scope is scope
    assert (parsed.enterprise, parsed.organization, parsed.repository) == names
    assert parsed.url == url.strip("/")


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com",
        "https://github.com/a/b/c",
        "https://github.com/a//b",
        "github.com/a",
        "",
    ],
)
def test_invalid(url: str) -> None:
    with pytest.raises(InvalidConfigUrl):
        parse_config_url(url)
