"""Proxy credentials of a ``proxy`` block, in one place for every controller that uses them.

A ``proxy`` block (an AutoscalingRunnerSet's, its listener's, its runner set's
``ephemeralRunnerSpec``) names per scheme a server ``url`` and optionally a
``credentialSecretRef``: a Secret in the object's namespace with ``username`` and ``password``.
This module owns how that is read and used:

- ``servers``: the block's servers with the environment key each one fills
  (``http_proxy``, ``https_proxy``);
- ``check_url``: an ``http(s)`` URL with a host, else ``GitHubAccessError`` ``InvalidProxy``
  naming the field;
- ``credentials_of``: the Secret's ``username``/``password`` (the password a ``SecretStr``: no
  repr shows it);
- ``with_credentials`` / ``proxy_url``: the URL with ``username:password@`` (escaped, as Go's
  ``url.UserPassword`` writes it), which the listener's and the runners' proxy Secrets hold.

The GitHub clients' proxy (``github_access``) takes the same ``credentials_of`` apart from the
URL.
Neither a credential nor a URL that carries one goes into an error text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import SecretStr

from scaleset.api import ProxyConfig, ProxyServerConfig, keys
from scaleset.controllers.access_error import GitHubAccessError, secret_data
from scaleset.kube.objects import KubeObject

SecretReader = Callable[[str, str], Awaitable[KubeObject]]
"""Reads the Secret of a ``credentialSecretRef`` (its name, the field naming it); a Secret that
cannot be read is a ``GitHubAccessError`` of the caller's reason."""


@dataclass(frozen=True)
class ProxyCredentials:
    """A proxy server's basic-auth credentials (``None``: the Secret has no such key)."""

    username: str | None = field(default=None, repr=False)
    password: SecretStr | None = None


def servers(proxy: ProxyConfig) -> Iterator[tuple[str, str, ProxyServerConfig | None]]:
    """``(scheme, environment key, server)`` for the block's ``http`` and ``https``."""
    yield "http", keys.PROXY_HTTP_KEY, proxy.http
    yield "https", keys.PROXY_HTTPS_KEY, proxy.https


def check_url(url: str, field_: str) -> None:
    """``GitHubAccessError`` (``InvalidProxy``, on ``field_.url``) unless ``url`` is an
    ``http(s)`` URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GitHubAccessError("InvalidProxy", f"{field_}.url", "is not an http(s) proxy URL")


def credentials_of(secret: KubeObject, field_: str) -> ProxyCredentials:
    """The ``username`` and ``password`` of a ``credentialSecretRef`` Secret (bad base64:
    ``GitHubAccessError`` naming ``field_``)."""
    data = secret_data(secret, field_)
    password = data.get(keys.PROXY_CREDENTIAL_PASSWORD_KEY)
    return ProxyCredentials(
        username=data.get(keys.PROXY_CREDENTIAL_USERNAME_KEY),
        password=None if password is None else SecretStr(password),
    )


def with_credentials(url: str, credentials: ProxyCredentials) -> str:
    """``url`` with ``username:password@`` (escaped) in front of the host (replacing any user
    info it has), as Go's ``url.UserPassword`` writes it; a missing key is empty."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    password = credentials.password.get_secret_value() if credentials.password else ""
    userinfo = f"{quote(credentials.username or '', safe='')}:{quote(password, safe='')}"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))


async def proxy_url(server: ProxyServerConfig, field_: str, read_secret: SecretReader) -> str:
    """The server's URL as a pod's proxy variable holds it: checked, with the credentials of
    its ``credentialSecretRef`` (if any) inside."""
    check_url(server.url, field_)
    if not server.credential_secret_ref:
        return server.url
    ref_field = f"{field_}.credentialSecretRef"
    secret = await read_secret(server.credential_secret_ref, ref_field)
    return with_credentials(server.url, credentials_of(secret, ref_field))
