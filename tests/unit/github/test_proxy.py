"""Proxy selection: env and config, loopback never proxied, NO_PROXY forms."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from tests.plugins.secret_guard import SecretRegistry

from scaleset.github.proxy import ProxyConfig, ProxyServer, use_proxy


def test_from_environ_upper_case_wins_and_scheme_picks_the_proxy() -> None:
    config = ProxyConfig.from_environ(
        {
            "HTTP_PROXY": "http://upper:3128",
            "http_proxy": "http://lower:3128",
            "https_proxy": "proxy.internal:8443",
            "no_proxy": " internal.example , 10.0.0.0/8,,",
        }
    )
    assert config.http == ProxyServer(url="http://upper:3128")
    assert config.https == ProxyServer(url="http://proxy.internal:8443")
    assert config.no_proxy == ("internal.example", "10.0.0.0/8")
    assert config.proxy_for("http://github.example/x") == config.http
    assert config.proxy_for("https://github.example/x") == config.https
    assert config.enabled


def test_empty_environment_means_no_proxy() -> None:
    config = ProxyConfig.from_environ({})
    assert not config.enabled
    assert config.proxy_for("https://api.github.com/") is None


def test_only_http_proxy_leaves_https_direct() -> None:
    config = ProxyConfig(http=ProxyServer(url="http://p:1"))
    assert config.proxy_for("https://api.github.com/") is None
    assert config.proxy_for("http://api.github.com/") is not None


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.1.2.3", "[::1]", "LOCALHOST"])
def test_loopback_is_never_proxied(host: str) -> None:
    config = ProxyConfig(http=ProxyServer(url="http://p:1"), https=ProxyServer(url="http://p:1"))
    assert config.proxy_for(f"http://{host}:8080/x") is None
    assert config.proxy_for(f"https://{host}/x") is None


@pytest.mark.parametrize(
    ("entry", "host", "port", "bypassed"),
    [
        ("*", "anything.example", 443, True),
        ("example.com", "example.com", 443, True),
        ("example.com", "api.example.com", 443, True),
        ("example.com", "notexample.com", 443, False),
        (".example.com", "example.com", 443, False),
        (".example.com", "api.example.com", 443, True),
        ("*.example.com", "api.example.com", 443, True),
        ("*.example.com", "example.com", 443, False),
        ("example.com:8443", "example.com", 8443, True),
        ("example.com:8443", "example.com", 443, False),
        ("10.0.0.0/8", "10.1.2.3", 443, True),
        ("10.0.0.0/8", "11.1.2.3", 443, False),
        ("192.168.1.5", "192.168.1.5", 80, True),
        ("192.168.1.5:80", "192.168.1.5", 443, False),
        ("fd00::/8", "fd00::1", 443, True),
        ("EXAMPLE.com", "Example.COM", 443, True),
    ],
)
def test_no_proxy_entries(entry: str, host: str, port: int, bypassed: bool) -> None:
    assert use_proxy(host, port, (entry,)) is not bypassed


def test_default_ports_are_used_for_no_proxy_port_matching() -> None:
    config = ProxyConfig(https=ProxyServer(url="http://p:1"), no_proxy=("ghes.example:443",))
    assert config.proxy_for("https://ghes.example/api/v3") is None
    assert config.proxy_for("https://ghes.example:8443/api/v3") is not None


def test_user_info_moves_out_of_the_url_and_out_of_reprs(secret_guard: SecretRegistry) -> None:
    password = secret_guard.register("proxy-pass-secret")
    server = ProxyServer(url=f"http://alice:{password}@proxy.internal:3128")
    assert server.url == "http://proxy.internal:3128"
    assert server.username == "alice"
    assert server.password is not None
    assert server.password.get_secret_value() == password
    config = ProxyConfig.from_environ({"HTTPS_PROXY": f"http://alice:{password}@proxy:3128"})
    secret_guard.assert_clean(server, config, config.model_dump())


def test_explicit_credentials_are_kept() -> None:
    server = ProxyServer(url="http://proxy:3128", username="bob", password=SecretStr("pw-123456"))
    assert (server.username, server.url) == ("bob", "http://proxy:3128")


@pytest.mark.parametrize("url", ["socks5://proxy:1080", "http://"])
def test_bad_proxy_urls_are_rejected(url: str) -> None:
    with pytest.raises(ValueError, match="proxy URL"):
        ProxyServer(url=url)
