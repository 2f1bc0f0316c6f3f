"""Parse a ``githubConfigUrl`` into its scope: enterprise, organization or repository.

Rules (spec/actions-protocol.md §1.1): leading/trailing ``/`` are trimmed; the path has one
segment (organization), two with the first ``enterprises`` in any case (enterprise), or two
(repository); anything else is invalid. We also require an ``http``/``https`` scheme and a host,
which every usable URL has.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote, urlsplit


class Scope(StrEnum):
    """What the runners register with."""

    ENTERPRISE = "enterprise"
    ORGANIZATION = "organization"
    REPOSITORY = "repository"


class InvalidConfigUrl(ValueError):
    """The URL does not point at an enterprise, organization or repository."""


@dataclass(frozen=True)
class GitHubConfigUrl:
    """A parsed config URL. ``url`` is the input with surrounding ``/`` trimmed."""

    url: str
    scheme: str
    host: str
    scope: Scope
    enterprise: str = ""
    organization: str = ""
    repository: str = ""


def parse_config_url(raw: str) -> GitHubConfigUrl:
    """Parse ``raw``; raise ``InvalidConfigUrl`` with a one-line reason when it is not usable."""
    url = raw.strip("/")
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise InvalidConfigUrl("not a URL") from error
    if parts.scheme not in ("http", "https"):
        raise InvalidConfigUrl("must start with https:// or http://")
    if not parts.netloc:
        raise InvalidConfigUrl("has no host")
    if "@" in parts.netloc:
        # never echo user info: it may hold a password
        raise InvalidConfigUrl("credentials in the URL are not supported")
    segments = [unquote(segment) for segment in parts.path.strip("/").split("/")]
    if len(segments) == 1 and segments[0]:
        return GitHubConfigUrl(
            url, parts.scheme, parts.netloc, Scope.ORGANIZATION, organization=segments[0]
        )
    if len(segments) != 2 or not all(segments):
        raise InvalidConfigUrl("should point to an enterprise, organization or repository")
    if segments[0].lower() == "enterprises":
        return GitHubConfigUrl(
            url, parts.scheme, parts.netloc, Scope.ENTERPRISE, enterprise=segments[1]
        )
    return GitHubConfigUrl(
        url,
        parts.scheme,
        parts.netloc,
        Scope.REPOSITORY,
        organization=segments[0],
        repository=segments[1],
    )
