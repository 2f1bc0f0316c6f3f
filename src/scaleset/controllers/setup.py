"""What a reconciler module hands the controller manager: its name, workers and setup function.

Each reconciler module under ``scaleset.controllers`` exposes ``setup(manager, context)``, which
registers its controller on the ``Manager`` (``manager.controller(...)``). ``registry`` lists them
by static import, so a reader and import-linter see every arrow.

The process has one GitHub access (``GitHubClients``): the manager process builds it into the
``ProcessContext`` and the manager closes it when it stops; every setup takes it with
``github_clients``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from scaleset.clock import Clock, SystemClock
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.options import ControllerOptions
from scaleset.github import SystemInfo
from scaleset.kube.client import KubeClient
from scaleset.runtime.manager import Manager


@dataclass(frozen=True)
class ProcessContext:
    """What a reconciler's ``setup`` gets besides the manager: flags, client, clock, and the
    process's GitHub access (``None``: ``github_clients`` makes one per setup — tests)."""

    options: ControllerOptions
    client: KubeClient
    clock: Clock = field(default_factory=SystemClock)
    github: GitHubClients | None = None

    def workers_for(self, name: str, default: int = 1) -> int:
        return self.options.workers_for(name, default)

    def github_options(self) -> ClientOptions:
        """How every controller's GitHub clients are built: the process's clock, the
        controller's User-Agent subsystem (as ARC's controller sends), and its policy on
        ``http://`` config URLs (``--allow-http-github-url``)."""
        return ClientOptions(
            clock=self.clock,
            system_info=SystemInfo(subsystem=GITHUB_SUBSYSTEM),
            allow_http_github_url=self.options.allow_http_github_url,
        )


GITHUB_SUBSYSTEM = "gha-scale-set-controller"
"""The User-Agent subsystem of the controllers' GitHub calls (ARC's controller's)."""


def github_clients(manager: Manager, context: ProcessContext) -> GitHubClients:
    """The GitHub access a setup gives its controller: the process's one; for a context made
    without one, a new one the manager closes when it stops."""
    if context.github is not None:
        return context.github
    github = GitHubClients(context.client, context.github_options())
    close_when_stopped(manager, github, f"github-clients-{id(github):x}")
    return github


def close_when_stopped(
    manager: Manager, github: GitHubClients, name: str = "github-clients"
) -> None:
    """Have ``manager`` close ``github``'s clients (connection pools, credentials) on stop
    (``name``: the manager's task doing it)."""

    async def close_clients_on_exit() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await github.aclose()

    manager.add_task(name, close_clients_on_exit)


SetupFunction = Callable[[Manager, ProcessContext], object]


@dataclass(frozen=True)
class ControllerSpec:
    """One reconciler: ``name`` (``--workers NAME=N``, logs, metrics), default ``workers``,
    and the ``setup`` function that registers it on the manager."""

    name: str
    default_workers: int
    setup: SetupFunction
