"""Where the doctor may send a GitHub credential: github.com, ``*.ghe.com`` and the GHES hosts
named with ``--github-host``, over https only — for every URL a tenant could write, the API
host the client would call is one of those, or nothing is sent."""

from __future__ import annotations

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleset.api.config_url import parse_config_url
from scaleset.doctor.github_hosts import BadHost, GitHubHosts

GHES = GitHubHosts.with_servers(["ghes.example.com", "ghes.internal:8443"])


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/octo-org",
        "https://www.github.com/octo-org/app",
        "https://GitHub.com/enterprises/acme",
        "https://octo.ghe.com/octo-org",
        "https://ghes.example.com/octo-org",
        "https://ghes.example.com:443/octo-org",
        "https://ghes.internal:8443/octo-org",
    ],
)
def test_approved_hosts_over_https(url: str) -> None:
    assert GHES.refusal(url) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://github.com/octo-org", "not https"),
        ("http://127.0.0.1:8080/org", "not https"),
        ("https://attacker.example/org", "not a GitHub host"),
        ("https://github.com.attacker.example/org", "not a GitHub host"),
        ("https://github.com:8443/org", "not a GitHub host"),
        ("https://ghe.com/org", "not a GitHub host"),
        ("https://x..ghe.com/org", "not a GitHub host"),
        ("https://ghes.internal/org", "not a GitHub host"),
        ("https://ghes.example.com:8443/org", "not a GitHub host"),
        ("https://user@github.com/org", "not a usable githubConfigUrl"),
        ("ftp://github.com/org", "not a usable githubConfigUrl"),
    ],
)
def test_anything_else_is_refused_with_a_reason(url: str, why: str) -> None:
    refusal = GitHubHosts().refusal(url) if "ghes" not in url else GHES.refusal(url)
    assert refusal is not None
    assert why in refusal


def test_without_the_flag_no_enterprise_server_is_approved() -> None:
    assert GitHubHosts().refusal("https://ghes.example.com/octo-org") is not None


@pytest.mark.parametrize("value", ["https://ghes.example.com", "ghes/x", "a@b", "h:port", "", "h."])
def test_a_flag_value_that_is_not_a_host_is_refused(value: str) -> None:
    with pytest.raises(BadHost):
        GitHubHosts.with_servers([value])


hosts = st.one_of(
    st.sampled_from(
        [
            "github.com",
            "www.github.com",
            "api.github.com",
            "octo.ghe.com",
            "ghes.example.com",
            "ghes.internal",
            "127.0.0.1",
            "attacker.example",
            "github.com.evil",
            "evilghe.com",
        ]
    ),
    st.from_regex(r"[a-z0-9]{1,8}(\.[a-z0-9]{1,8}){0,2}", fullmatch=True),
)


@settings(max_examples=500, deadline=None)
@given(
    scheme=st.sampled_from(["https", "http", "HTTPS"]),
    host=hosts,
    port=st.sampled_from(["", ":443", ":8443", ":80"]),
    path=st.sampled_from(["/org", "/owner/repo", "/enterprises/e", "/a/b/c", ""]),
)
def test_a_credential_only_ever_goes_to_an_approved_api_host_over_tls(
    scheme: str, host: str, port: str, path: str
) -> None:
    url = f"{scheme}://{host}{port}{path}"
    if GHES.refusal(url) is not None:
        return
    config = parse_config_url(url, environ={})
    api = httpx2.URL(config.api_url("/orgs/x/actions/runners"))
    assert api.scheme == "https"
    assert api.port in (None, 443, 8443)
    github = {"api.github.com", "github.com", "www.github.com"}  # github.com:443 reads as GHES
    assert api.host in github | {"ghes.example.com", "ghes.internal"} or (
        api.host.endswith(".ghe.com") and api.host != "ghe.com"
    )
    if api.host == "ghes.internal":
        assert api.port == 8443
    else:
        assert api.port in (None, 443)
