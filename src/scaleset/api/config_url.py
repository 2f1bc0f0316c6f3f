"""The one parsed ``githubConfigUrl``: its scope, hosted or GHES, and the GitHub API paths.

Rules: leading/trailing ``/`` are trimmed; the path has one
segment (organization), two with the first ``enterprises`` in any case (enterprise), or two
(repository); anything else is invalid. We also require an ``http``/``https`` scheme and a
host, which every usable URL has, and refuse user info (it would be a credential in a URL).
``insecure`` says a URL is plain ``http``: the controllers refuse such a scale set unless told
otherwise (``scaleset.api.validation.Policy``); the parser itself accepts it (the embedded fake
GitHub of the tests and the demo serves http).

Hosted hosts (github.com, www.github.com, github.localhost, ``*.ghe.com``) use ``api.<host>``
as the REST base; every other host is GHES and uses ``<host>/api/v3``. The environment variable
``GITHUB_ACTIONS_FORCE_GHES`` (any value) forces the GHES rules.

CRD validation, object labels, the listener's configuration and the GitHub client all parse
with ``parse_config_url`` and share ``GitHubConfigUrl`` and ``InvalidConfigUrl``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from urllib.parse import quote, unquote, urlsplit

FORCE_GHES_ENV = "GITHUB_ACTIONS_FORCE_GHES"
_HOSTED_HOSTS = frozenset({"github.com", "www.github.com", "github.localhost"})


class Scope(StrEnum):
    """What the runners register with."""

    ENTERPRISE = "enterprise"
    ORGANIZATION = "organization"
    REPOSITORY = "repository"


class InvalidConfigUrl(ValueError):
    """The URL does not point at an enterprise, organization or repository.

    ``reason`` is the one-line why; the message never repeats the URL (it may carry
    credentials)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid config URL: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class GitHubConfigUrl:
    """A parsed config URL.

    ``url`` is the input with surrounding ``/`` trimmed: it is sent verbatim in the
    runner-registration body. ``organization`` is the repository owner for repository scope.
    """

    url: str
    scheme: str
    host: str
    scope: Scope
    enterprise: str = ""
    organization: str = ""
    repository: str = ""
    is_hosted: bool = True

    @property
    def insecure(self) -> bool:
        """Plain ``http``: credentials sent to this URL cross the network in clear text."""
        return self.scheme == "http"

    @property
    def api_base(self) -> str:
        """``https://api.github.com``, ``http://api.github.localhost``, or
        ``https://ghes/api/v3``."""
        if not self.is_hosted:
            return f"{self.scheme}://{self.host}/api/v3"
        if self.host.lower() == "www.github.com":
            return f"{self.scheme}://api.github.com"
        return f"{self.scheme}://api.{self.host}"

    def api_url(self, path: str) -> str:
        """The GitHub API URL for ``path`` (which starts with ``/``)."""
        return self.api_base + path

    @property
    def scope_path(self) -> str:
        """``/orgs/{org}``, ``/repos/{owner}/{repo}`` or ``/enterprises/{ent}`` (escaped)."""
        if self.scope is Scope.ENTERPRISE:
            return f"/enterprises/{_segment(self.enterprise)}"
        if self.scope is Scope.ORGANIZATION:
            return f"/orgs/{_segment(self.organization)}"
        return f"/repos/{_segment(self.organization)}/{_segment(self.repository)}"

    @property
    def scope_template(self) -> str:
        """``scope_path`` with placeholders, for metrics labels."""
        return {
            Scope.ENTERPRISE: "/enterprises/{enterprise}",
            Scope.ORGANIZATION: "/orgs/{org}",
            Scope.REPOSITORY: "/repos/{owner}/{repo}",
        }[self.scope]

    @property
    def registration_token_path(self) -> str:
        return f"{self.scope_path}/actions/runners/registration-token"

    @property
    def runners_path(self) -> str:
        """The public REST runners list of this org / repo / enterprise."""
        return f"{self.scope_path}/actions/runners"


def parse_config_url(raw: str, *, environ: Mapping[str, str] | None = None) -> GitHubConfigUrl:
    """Parse ``raw``; raise ``InvalidConfigUrl`` with a one-line reason when it is not usable.

    ``environ`` (default: the process environment) is read for ``GITHUB_ACTIONS_FORCE_GHES``.
    """
    url = raw.strip("/")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise InvalidConfigUrl("not a URL") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidConfigUrl("must start with https:// or http://")
    if not parts.netloc:
        raise InvalidConfigUrl("has no host")
    if "@" in parts.netloc:
        # never echo user info: it may hold a password
        raise InvalidConfigUrl("credentials in the URL are not supported")
    env = os.environ if environ is None else environ
    hosted = FORCE_GHES_ENV not in env and _is_hosted(parts.netloc)
    segments = [unquote(segment) for segment in parts.path.strip("/").split("/")]
    at = partial(GitHubConfigUrl, url, parts.scheme, parts.netloc, is_hosted=hosted)
    if len(segments) == 1 and segments[0]:
        return at(Scope.ORGANIZATION, organization=segments[0])
    if len(segments) != 2 or not all(segments):
        raise InvalidConfigUrl("should point to an enterprise, organization or repository")
    if segments[0].lower() == "enterprises":
        return at(Scope.ENTERPRISE, enterprise=segments[1])
    return at(Scope.REPOSITORY, organization=segments[0], repository=segments[1])


def _is_hosted(host: str) -> bool:
    lowered = host.lower()
    return lowered in _HOSTED_HOSTS or lowered.endswith(".ghe.com")


def _segment(value: str) -> str:
    return quote(value, safe="")
