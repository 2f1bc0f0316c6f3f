"""What a reconciler module hands the controller manager: its name, workers and setup function.

Each reconciler module under ``scaleset.controllers`` exposes ``setup(manager, context)``, which
registers its controller on the ``Manager`` (``manager.controller(...)``). ``registry`` lists them
by static import, so a reader and import-linter see every arrow.

The process has one GitHub access (``GitHubClients``): the manager process builds it into the
``ProcessContext`` and the manager closes it when it stops; every setup takes it with
``github_clients``. It also has one set of watches of named Secrets (``NamedWatches``: the
Secrets a scale set's GitHub access is made from, watched one by one in its namespace), run
while leading; the AutoscalingListener controller follows them for each listener, and the
GitHub access reads them there before it sends a GET (``secret_watches``).

The context also carries the process's environment: each setup reads the variables it declares
(``ControllerSpec.environment``, an ``env_settings.EnvSettings``) from ``context.environ``,
never from ``os.environ``, so two managers in one process (the demo's, tests') each keep their
own settings. The GitHub access reads its variables (``GITHUB_ENVIRONMENT``) from it too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scaleset.clock import Clock, SystemClock
from scaleset.controllers.env_settings import EnvSetting, EnvSettings, documentation_only
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.options import ControllerOptions
from scaleset.github import SystemInfo
from scaleset.kube.client import KubeClient
from scaleset.kube.resources import SECRET, Kind
from scaleset.runtime.controller import Controller, Reconcile
from scaleset.runtime.informer import ALL_NAMESPACES
from scaleset.runtime.manager import Manager
from scaleset.runtime.named_watches import NamedWatches


@dataclass(frozen=True)
class ProcessContext:
    """What a reconciler's ``setup`` gets besides the manager: flags, client, clock, the
    process's GitHub access (``None``: ``github_clients`` makes one per setup — tests), its
    watches of named Secrets (``None``: ``secret_watches`` makes them — tests), and
    the environment its settings come from (``scaleset controller``: the process's; tests and
    the demo: their own, empty by default)."""

    options: ControllerOptions
    client: KubeClient
    clock: Clock = field(default_factory=SystemClock)
    github: GitHubClients | None = None
    secrets: NamedWatches | None = None
    environ: Mapping[str, str] = field(default_factory=dict)

    def workers_for(self, name: str, default: int = 1) -> int:
        return self.options.workers_for(name, default)

    def controller(
        self,
        manager: Manager,
        name: str,
        *,
        for_kind: Kind,
        reconcile: Reconcile,
        default_workers: int,
        extra_workers: int = 0,
        namespaces: tuple[str, ...] | None = None,
    ) -> Controller:
        """Register controller ``name`` on ``manager`` as this process was told to run it: its
        workers (``workers_for(name, default_workers)``, plus ``extra_workers`` of its own) and
        its work queue's rate limiter (``--workqueue-rate-limiter``)."""
        return manager.controller(
            name,
            for_kind=for_kind,
            reconcile=reconcile,
            workers=self.workers_for(name, default_workers) + extra_workers,
            queue=self.options.queue_settings(),
            namespaces=namespaces,
        )

    def controller_namespace_scope(self, manager: Manager) -> tuple[str, ...] | None:
        """Where objects that live in the controller's namespace (AutoscalingListeners and
        their pods) are watched: ``None`` (the manager's own informers) when those span every
        namespace, so one cluster-wide cache serves them; else that namespace alone."""
        if manager.settings.namespaces == ALL_NAMESPACES:
            return None
        return (self.options.controller_namespace,)

    def scale_set_namespace_scope(self, manager: Manager) -> tuple[str, ...] | None:
        """Where objects that live beside the scale sets (a listener's Role and RoleBinding)
        are watched: ``None`` (every namespace) when the caches span every namespace; else the
        manager's namespaces, without the controller's own unless it is named as watched."""
        namespaces = tuple(manager.settings.namespaces)
        if namespaces == ALL_NAMESPACES:
            return None
        named = self.options.named_namespaces()
        controller_namespace = self.options.controller_namespace
        scope = tuple(ns for ns in namespaces if ns != controller_namespace or ns in named)
        return scope or namespaces

    def github_options(self) -> ClientOptions:
        """How every controller's GitHub clients are built: the process's clock, the
        controller's User-Agent subsystem (as ARC's controller sends), and its policy on
        ``http://`` config URLs (``--allow-http-github-url``)."""
        return ClientOptions(
            clock=self.clock,
            system_info=SystemInfo(subsystem=GITHUB_SUBSYSTEM),
            allow_http_github_url=self.options.allow_http_github_url,
            environ=self.environ,
        )


GITHUB_SUBSYSTEM = "gha-scale-set-controller"
"""The User-Agent subsystem of the controllers' GitHub calls (ARC's controller's)."""

GITHUB_ENVIRONMENT = documentation_only(
    EnvSetting(
        "HTTPS_PROXY, HTTP_PROXY, NO_PROXY",
        "",
        None,
        "Proxy of the controller's GitHub calls for a scale set whose spec sets no `proxy` "
        "(upper case wins over lower case, as in Go).",
        default="unset",
    ),
    EnvSetting(
        "GITHUB_ACTIONS_FORCE_GHES",
        "",
        None,
        "Any value: treat every githubConfigUrl host as GitHub Enterprise Server "
        "(`<host>/api/v3`), also hosts that look like github.com.",
        default="unset",
    ),
)
"""The environment variables the controllers' GitHub access reads (``github_options``)."""


def github_clients(manager: Manager, context: ProcessContext) -> GitHubClients:
    """The GitHub access a setup gives its controller: the process's one; for a context made
    without one, a new one the manager closes when it stops."""
    if context.github is not None:
        return context.github
    github = GitHubClients(context.client, context.github_options())
    close_when_stopped(manager, github, f"github-clients-{id(github):x}")
    return github


def secret_watches(manager: Manager, context: ProcessContext) -> NamedWatches:
    """The process's watches of named Secrets in the scale sets' namespaces: the context's; for
    a context made without them (the manager process, before it has them; tests), new ones that
    ``manager`` runs while leading."""
    if context.secrets is not None:
        return context.secrets
    watches = NamedWatches(context.client, SECRET, clock=context.clock)
    manager.add_leader_task(f"secret-watches-{id(watches):x}", watches.run)
    return watches


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
    environment: EnvSettings[Any] | None = None
    """The environment variables its ``setup`` reads from ``ProcessContext.environ``."""
