"""Registers the EphemeralRunner controller on the manager: the reconciler, its owned-pod cache
(pods labelled ``actions-ephemeral-runner=True``), its GitHub clients and its settings.

Its work queue serves runners by ``runner_priority`` (ending a hung runner, then freeing a
slot, then the rest), on ``URGENT_WORKERS`` workers of their own as well (see
``URGENT_WORKERS``). Its settings come from the process context's environment: the variables
``ENVIRONMENT`` declares (defaults in ``Settings``).
"""

from __future__ import annotations

from scaleset import __version__
from scaleset.api import keys
from scaleset.controllers.env_settings import EnvSetting, EnvSettings, seconds
from scaleset.controllers.ephemeralrunner.apply import Applier
from scaleset.controllers.ephemeralrunner.reconciler import (
    FREES_A_SLOT,
    EphemeralRunnerReconciler,
)
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.setup import ProcessContext, github_clients
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD
from scaleset.runtime.controller import Controller
from scaleset.runtime.manager import Manager

NAME = "ephemeralrunner"
DEFAULT_WORKERS = 2
"""ARC's ``--runner-max-concurrent-reconciles`` default."""
URGENT_WORKERS = 1
"""Workers beyond the configured ones that take only runners whose job completed
(``ENDS_A_HUNG_RUNNER``), so that observing a completion and acting on its due grace deadline
(L4) never wait behind other work — not even when every configured worker is stuck in a slow
reconcile (a creation or a registration removal, each a GitHub call retried through a 5xx
burst). Such a reconcile itself stops before any GitHub call (``before_github``), so this
worker never waits on GitHub either. On the configured workers, those go first, then runners
that free a slot, then the rest."""
USER_AGENT = f"scaleset/{__version__}"


ENVIRONMENT = EnvSettings(
    Settings(user_agent=USER_AGENT),
    (
        EnvSetting(
            "SCALESET_JOB_COMPLETION_GRACE",
            "grace_period",
            seconds,
            "Seconds a runner may live on after GitHub reported its job completed (L4); then "
            "its pod is deleted, its registration removed and the runner replaced.",
        ),
        EnvSetting(
            "SCALESET_RUNNER_POD_PENDING_TIMEOUT",
            "pod_pending_timeout",
            seconds,
            "Seconds a runner pod may take to start its runner container before the runner is "
            "replaced (a template that can never start does not hold a slot).",
        ),
    ),
)
"""The environment variables of the EphemeralRunner controller."""


def build(
    manager: Manager,
    context: ProcessContext,
    *,
    settings: Settings,
    github: GitHubClients,
) -> tuple[Controller, EphemeralRunnerReconciler]:
    """The controller and its reconciler (tests pass their own settings and GitHub clients)."""
    reconciler = EphemeralRunnerReconciler(
        context.client,
        Applier(context.client, github, settings.user_agent or USER_AGENT),
        manager.events,
        context.clock,
        settings,
    )
    workers = context.workers_for(NAME, DEFAULT_WORKERS)
    controller = context.controller(
        manager,
        NAME,
        for_kind=EPHEMERAL_RUNNER,
        reconcile=reconciler.reconcile,
        default_workers=DEFAULT_WORKERS,
        extra_workers=URGENT_WORKERS,
    )
    reconciler.pods = controller.owns(POD, label_selector=keys.RUNNER_POD_SELECTOR)
    reconciler.runners = controller.informer
    controller.queue.set_priority(reconciler.priority, limits={FREES_A_SLOT: workers})
    return controller, reconciler


def setup(manager: Manager, context: ProcessContext) -> Controller:
    """Register the EphemeralRunner controller (``controllers.registry``)."""
    settings = ENVIRONMENT.read(context.environ)
    github = github_clients(manager, context)
    controller, _ = build(manager, context, settings=settings, github=github)
    return controller
