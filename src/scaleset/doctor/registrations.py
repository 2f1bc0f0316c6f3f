"""Asks GitHub which runners are registered, per githubConfigUrl, with the credentials of the
person running the doctor (a PAT or a GitHub App installation) — and only where
``github_hosts`` allows a credential to go: a URL it refuses gets no request at all.

The REST runners list is the only call: ``GET /orgs/{org}/actions/runners`` (or the repo's or
enterprise's) on the URL's API host, after minting an installation token there for an App.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from scaleset.clock import Clock
from scaleset.doctor.github_hosts import GitHubHosts
from scaleset.github import ActionsClient, Credentials, GitHubError


@dataclass(frozen=True)
class GitHubAccess:
    """How the doctor reaches GitHub: the credentials, the approved hosts, an extra CA for a
    GitHub Enterprise Server's certificate, the environment (proxy variables)."""

    credentials: Credentials | None = None
    hosts: GitHubHosts = field(default_factory=GitHubHosts)
    root_ca_pem: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict)


async def registered_ids(
    urls: Iterable[str], access: GitHubAccess, clock: Clock
) -> tuple[dict[str, frozenset[int]], str | None]:
    """githubConfigUrl → the runner ids GitHub lists, for each URL a credential may go to; and
    why GitHub could not be asked (``None`` when it answered every URL)."""
    credentials = access.credentials
    if credentials is None:
        return {}, "no GitHub credentials (set GITHUB_TOKEN, or the --github-app-* options)"
    registered: dict[str, frozenset[int]] = {}
    for url in sorted(set(urls)):
        if access.hosts.refusal(url, access.environ) is not None:
            continue  # github-host-not-allowed reports it
        try:
            async with ActionsClient(
                url,
                credentials,
                clock=clock,
                environ=access.environ,
                root_ca_pem=access.root_ca_pem,
            ) as github:
                listed = await github.list_runners()
        except (GitHubError, ValueError) as error:
            return {}, f"{url}: {type(error).__name__}: {error}"
        registered[url] = frozenset(runner.id for runner in listed)
    return registered, None
