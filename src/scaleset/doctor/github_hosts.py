"""Where the doctor may send a GitHub credential: approved GitHub hosts, over TLS only.

A ``githubConfigUrl`` is written by whoever may create an AutoscalingRunnerSet in a namespace —
in a shared cluster, a tenant — while the doctor runs with the on-call engineer's token or App
key. So a credential goes only to:

- ``github.com`` (its REST host ``api.github.com``);
- GitHub Enterprise Cloud with data residency, ``<name>.ghe.com`` (REST host
  ``api.<name>.ghe.com``);
- the GitHub Enterprise Server hosts the person running the doctor named (``--github-host``):
  ``ghes.example.com`` approves that host on the https port, ``ghes.example.com:8443`` that
  host on that port only;

and always over ``https``. Anything else — another host, an ``http`` URL, a URL that does not
parse — gets no request at all, and is reported (``github-host-not-allowed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scaleset.api.config_url import InvalidConfigUrl, parse_config_url

GITHUB_HOSTS = frozenset({"github.com", "www.github.com"})
GHE_SUFFIX = ".ghe.com"
HTTPS_PORT = "443"


class BadHost(ValueError):
    """A ``--github-host`` value that is not a host name (with an optional port)."""


def _split(netloc: str) -> tuple[str, str]:
    """``host[:port]`` → (lowercase host, port or ``""``); IPv6 brackets kept."""
    lowered = netloc.lower()
    if lowered.startswith("["):
        host, _, rest = lowered.partition("]")
        return host + "]", rest.removeprefix(":")
    host, _, port = lowered.partition(":")
    return host, port


def _host_entry(value: str) -> str:
    entry = value.strip().lower()
    host, port = _split(entry)
    if (
        not host
        or any(c in entry for c in "/@?#\\ ")
        or (port and not port.isdigit())
        or host.endswith(".")
    ):
        raise BadHost(
            f"--github-host {value!r}: give a host name, optionally with a port "
            "(ghes.example.com or ghes.example.com:8443), not a URL"
        )
    return host if port in ("", HTTPS_PORT) else f"{host}:{port}"


def _is_ghe(host: str) -> bool:
    """``<name>.ghe.com`` with a non-empty name made of non-empty labels."""
    name = host.removesuffix(GHE_SUFFIX)
    return name != host and bool(name) and all(name.split("."))


@dataclass(frozen=True)
class GitHubHosts:
    """The approved hosts: GitHub's own, plus ``enterprise_servers`` (normalised
    ``host`` or ``host:port`` entries)."""

    enterprise_servers: frozenset[str] = frozenset()

    @classmethod
    def with_servers(cls, values: Iterable[str]) -> GitHubHosts:
        """Raises ``BadHost`` for a value that is not ``host`` or ``host:port``."""
        return cls(frozenset(_host_entry(value) for value in values))

    def refusal(self, url: str, environ: Mapping[str, str] | None = None) -> str | None:
        """Why no credential may be sent for ``url`` (one line, no credential, no path), or
        ``None`` when it may: an approved host over https."""
        try:
            config = parse_config_url(url, environ=environ or {})
        except InvalidConfigUrl as error:
            return f"not a usable githubConfigUrl ({error.reason})"
        if config.scheme != "https":
            return (
                f"{config.scheme}://{config.host} is not https: a credential would cross the "
                "network in clear text"
            )
        if self.approves(config.host):
            return None
        return (
            f"{config.host} is not a GitHub host (github.com, *.ghe.com) nor a GitHub "
            "Enterprise Server named with --github-host"
        )

    def approves(self, netloc: str) -> bool:
        """``netloc`` (``host[:port]`` of a config URL) is an approved host."""
        host, port = _split(netloc)
        default_port = port in ("", HTTPS_PORT)
        if default_port and (host in GITHUB_HOSTS or _is_ghe(host)):
            return True
        return (host if default_port else f"{host}:{port}") in self.enterprise_servers
