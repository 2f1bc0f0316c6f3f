"""What a reconciler module hands the controller manager: its name, workers and setup function.

Each reconciler module under ``scaleset.controllers`` exposes ``setup(manager, context)``, which
registers its controller on the ``Manager`` (``manager.controller(...)``). ``registry`` lists them
by static import, so a reader and import-linter see every arrow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from scaleset.clock import Clock, SystemClock
from scaleset.controllers.github_access import ClientOptions
from scaleset.controllers.options import ControllerOptions
from scaleset.github import SystemInfo
from scaleset.kube.client import KubeClient
from scaleset.runtime.manager import Manager


@dataclass(frozen=True)
class ProcessContext:
    """What a reconciler's ``setup`` gets besides the manager: flags, client, clock."""

    options: ControllerOptions
    client: KubeClient
    clock: Clock = field(default_factory=SystemClock)

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


SetupFunction = Callable[[Manager, ProcessContext], object]


@dataclass(frozen=True)
class ControllerSpec:
    """One reconciler: ``name`` (``--workers NAME=N``, logs, metrics), default ``workers``,
    and the ``setup`` function that registers it on the manager."""

    name: str
    default_workers: int
    setup: SetupFunction
