"""``scaleset.controllers.proxy_credentials``: one reading of a proxy's credential Secret for the
GitHub clients, the listener's config and the runners' proxy Secret."""

from __future__ import annotations

import base64

import pytest

from scaleset.controllers.access_error import GitHubAccessError
from scaleset.controllers.proxy_credentials import (
    ProxyCredentials,
    check_url,
    credentials_of,
    with_credentials,
)
from scaleset.github import ProxyServer
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import SECRET

PASSWORD = "p@ss:w/rd"


def secret(**data: str) -> KubeObject:
    return KubeObject(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "proxy-creds", "namespace": "ns"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        },
    )


def test_the_credentials_go_into_the_url_escaped_and_come_back_out() -> None:
    credentials = credentials_of(secret(username="me@corp", password=PASSWORD), "spec.proxy.http")
    url = with_credentials("http://proxy.example:3128", credentials)

    assert url == "http://me%40corp:p%40ss%3Aw%2Frd@proxy.example:3128"
    # the GitHub client's reading of such a URL gives the same credentials back
    server = ProxyServer(url=url)
    assert server.username == "me@corp"
    assert server.password is not None
    assert server.password.get_secret_value() == PASSWORD


def test_no_repr_shows_a_credential() -> None:
    credentials = credentials_of(secret(username="me", password=PASSWORD), "f")

    assert PASSWORD not in repr(credentials)
    assert credentials_of(secret(), "f") == ProxyCredentials(None, None)


def test_a_url_that_is_not_http_names_its_field() -> None:
    with pytest.raises(GitHubAccessError) as raised:
        check_url("socks5://proxy:1080", "spec.proxy.https")

    assert (raised.value.reason, raised.value.field) == ("InvalidProxy", "spec.proxy.https.url")
