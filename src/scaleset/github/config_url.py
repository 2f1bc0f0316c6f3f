"""Parse a GitHub configure URL into its scope and the GitHub API base (protocol §1.1).

`https://github.com/org`, `https://github.com/org/repo`, `https://github.com/enterprises/ent`,
GHES `https://ghes.example/org`. Hosted hosts (github.com, www.github.com, github.localhost,
*.ghe.com) use `api.<host>`; every other host uses `<host>/api/v3`. The environment variable
GITHUB_ACTIONS_FORCE_GHES (any value) forces GHES rules.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from scaleset.api.config_url import InvalidConfigUrl as InvalidScopeUrl
from scaleset.api.config_url import Scope as Scope
from scaleset.api.config_url import parse_config_url as parse_scope
from scaleset.github.errors import InvalidConfigUrl

FORCE_GHES_ENV = "GITHUB_ACTIONS_FORCE_GHES"
_HOSTED_HOSTS = frozenset({"github.com", "www.github.com", "github.localhost"})


@dataclass(frozen=True)
class GitHubConfig:
    """A parsed configure URL.

    `url` is the input with leading/trailing slashes trimmed: it is sent verbatim in the
    runner-registration body. `organization` is the repository owner for repository scope.
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
    def api_base(self) -> str:
        """`https://api.github.com`, `http://api.github.localhost`, or `https://ghes/api/v3`."""
        if not self.is_hosted:
            return f"{self.scheme}://{self.host}/api/v3"
        if self.host.lower() == "www.github.com":
            return f"{self.scheme}://api.github.com"
        return f"{self.scheme}://api.{self.host}"

    def api_url(self, path: str) -> str:
        """The GitHub API URL for `path` (which starts with `/`)."""
        return self.api_base + path

    @property
    def scope_path(self) -> str:
        """`/orgs/{org}`, `/repos/{owner}/{repo}` or `/enterprises/{ent}` (segments escaped)."""
        if self.scope is Scope.ENTERPRISE:
            return f"/enterprises/{_segment(self.enterprise)}"
        if self.scope is Scope.ORGANIZATION:
            return f"/orgs/{_segment(self.organization)}"
        return f"/repos/{_segment(self.organization)}/{_segment(self.repository)}"

    @property
    def scope_template(self) -> str:
        """`scope_path` with placeholders, for metrics labels."""
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


def parse_config_url(url: str, *, environ: Mapping[str, str] | None = None) -> GitHubConfig:
    """Parse `url`; raises InvalidConfigUrl for anything but an enterprise, org or repo URL.

    The scope comes from the one parser the CRD validation uses too
    (`scaleset.api.config_url`); this adds the hosted/GHES decision and the API base."""
    env = os.environ if environ is None else environ
    try:
        parsed = parse_scope(url)
    except InvalidScopeUrl as error:
        # the reason never repeats the URL: it may carry credentials
        raise InvalidConfigUrl(f"invalid config URL: {error}") from None
    return GitHubConfig(
        url=parsed.url,
        scheme=parsed.scheme,
        host=parsed.host,
        scope=parsed.scope,
        enterprise=parsed.enterprise,
        organization=parsed.organization,
        repository=parsed.repository,
        is_hosted=FORCE_GHES_ENV not in env and _is_hosted(parsed.host),
    )


def _is_hosted(host: str) -> bool:
    lowered = host.lower()
    return lowered in _HOSTED_HOSTS or lowered.endswith(".ghe.com")


def _segment(value: str) -> str:
    return quote(value, safe="")
