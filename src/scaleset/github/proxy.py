"""Which proxy, if any, a request goes through — pure decisions.

Same rules as Go's `golang.org/x/net/http/httpproxy`, which ARC uses for both the environment
(HTTP_PROXY/http_proxy, HTTPS_PROXY/https_proxy, NO_PROXY/no_proxy) and the AutoscalingRunnerSet
`proxy` block: the target scheme picks the proxy; `localhost` and loopback addresses are never
proxied; NO_PROXY entries are `*`, IPs, CIDRs, or domains (`example.com` matches it and its
subdomains, `.example.com` / `*.example.com` only subdomains), each optionally with `:port`.
Proxy credentials are kept apart from the URL as a SecretStr so no repr shows them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator

_DEFAULT_PORTS = {"http": 80, "https": 443}


class ProxyServer(BaseModel):
    """One proxy: its URL (without user info) and optional basic-auth credentials."""

    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    url: str
    username: str | None = None
    password: SecretStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _split_user_info(cls, data: object) -> object:
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            return data
        url = data["url"]
        if "://" not in url:
            url = "http://" + url
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError("proxy URL scheme must be http or https")
        if not parts.hostname:
            raise ValueError("proxy URL has no host")
        result = dict(data)
        if parts.username is not None:
            result.setdefault("username", unquote(parts.username))
            if parts.password is not None:
                result.setdefault("password", unquote(parts.password))
        host = parts.netloc.rsplit("@", 1)[-1]
        result["url"] = urlunsplit((parts.scheme, host, "", "", ""))
        return result


class ProxyConfig(BaseModel):
    """Proxies per target scheme plus the bypass list."""

    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    http: ProxyServer | None = None
    https: ProxyServer | None = None
    no_proxy: tuple[str, ...] = ()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ProxyConfig:
        """Read the proxy variables; upper case wins over lower case, as in Go."""
        env = os.environ if environ is None else environ

        def first(*names: str) -> str:
            for name in names:
                value = env.get(name, "")
                if value:
                    return value
            return ""

        http = first("HTTP_PROXY", "http_proxy")
        https = first("HTTPS_PROXY", "https_proxy")
        no_proxy = first("NO_PROXY", "no_proxy")
        return cls(
            http=ProxyServer(url=http) if http else None,
            https=ProxyServer(url=https) if https else None,
            no_proxy=tuple(entry.strip() for entry in no_proxy.split(",") if entry.strip()),
        )

    @property
    def enabled(self) -> bool:
        return self.http is not None or self.https is not None

    def proxy_for(self, url: str) -> ProxyServer | None:
        """The proxy for a request to `url`, or None to connect directly."""
        parts = urlsplit(url)
        proxy = self.https if parts.scheme == "https" else self.http
        if proxy is None or not parts.hostname:
            return None
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
        if not use_proxy(parts.hostname, port, self.no_proxy):
            return None
        return proxy


def use_proxy(host: str, port: int, no_proxy: tuple[str, ...]) -> bool:
    """False for localhost, loopback and NO_PROXY matches."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    return not any(_Bypass.parse(entry).matches(host, port, ip) for entry in no_proxy)


@dataclass(frozen=True)
class _Bypass:
    """One NO_PROXY entry."""

    everything: bool = False
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    domain: str = ""  # with a leading dot
    match_bare_host: bool = False
    port: int | None = None

    @classmethod
    def parse(cls, entry: str) -> _Bypass:
        text = entry.strip().lower()
        if text == "*":
            return cls(everything=True)
        try:
            return cls(network=ipaddress.ip_network(text, strict=False))
        except ValueError:
            pass
        host, port = _split_port(text)
        ip = _ip(host)
        if ip is not None:
            return cls(network=ipaddress.ip_network(ip), port=port)
        if host.startswith("*."):
            host = host[1:]
        if host.startswith("."):
            return cls(domain=host, port=port)
        return cls(domain="." + host, match_bare_host=True, port=port)

    def matches(
        self, host: str, port: int, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    ) -> bool:
        if self.everything:
            return True
        if self.network is not None:
            return (
                ip is not None and ip in self.network and (self.port is None or self.port == port)
            )
        if not self.domain or ip is not None:
            return False
        hit = host.endswith(self.domain) or (self.match_bare_host and host == self.domain[1:])
        return hit and (self.port is None or self.port == port)


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):  # [v6]:port
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host, int(port) if port.isdigit() else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, int(port) if port.isdigit() else None
    return text, None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
