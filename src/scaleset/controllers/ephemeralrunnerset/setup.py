"""Registers the EphemeralRunnerSet controller on the manager: the reconciler, the set's runners
(each change is observed for the ledger), the AutoscalingRunnerSet of the same name (its
maxRunners bounds the set), its GitHub clients and its settings.

Its settings come from the process context's environment: the variables ``ENVIRONMENT``
declares (defaults in ``Settings``).
"""

from __future__ import annotations

from scaleset.controllers.env_settings import EnvSetting, EnvSettings, positive_whole
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
from scaleset.controllers.ephemeralrunnerset.reconciler import EphemeralRunnerSetReconciler
from scaleset.controllers.ephemeralrunnerset.settings import Settings
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.setup import ProcessContext, github_clients
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from scaleset.runtime.controller import Controller
from scaleset.runtime.manager import Manager
from scaleset.runtime.store import InformerEvent

NAME = "ephemeralrunnerset"
DEFAULT_WORKERS = 2

ENVIRONMENT = EnvSettings(
    Settings(),
    (
        EnvSetting(
            "SCALESET_RUNNER_SET_MAX_CONCURRENT_CREATES",
            "apply.max_concurrent_creates",
            positive_whole,
            "EphemeralRunner creations in flight at once per runner set (slow-start batches up "
            "to this size). A positive whole number.",
        ),
        EnvSetting(
            "SCALESET_RUNNER_SET_BREAKER_THRESHOLD",
            "plan.breaker_threshold",
            positive_whole,
            "The same failure reason this many times in a row pauses runner creation "
            "(`CreationPaused`). A positive whole number.",
        ),
    ),
)
"""The environment variables of the EphemeralRunnerSet controller."""


def build(
    manager: Manager,
    context: ProcessContext,
    *,
    settings: Settings,
    github: GitHubClients,
    metrics: RunnerSetMetrics | None = None,
) -> tuple[Controller, EphemeralRunnerSetReconciler]:
    """The controller and its reconciler (tests pass their own settings, GitHub clients and
    metrics)."""
    reconciler = EphemeralRunnerSetReconciler(
        client=context.client,
        informers=manager.informers,
        events=manager.events,
        github=github,
        clock=context.clock,
        settings=settings,
        metrics=metrics,
    )
    controller = context.controller(
        manager,
        NAME,
        for_kind=EPHEMERAL_RUNNER_SET,
        reconcile=reconciler.reconcile,
        default_workers=DEFAULT_WORKERS,
    )
    controller.owns(EPHEMERAL_RUNNER, delay=reconciler.settings.runner_event_delay).add_handler(
        reconciler.observe_runner
    )
    controller.watches(AUTOSCALING_RUNNER_SET, _same_name)
    return controller, reconciler


def _same_name(event: InformerEvent) -> list[ObjectKey]:
    """An AutoscalingRunnerSet's EphemeralRunnerSet has its name (its maxRunners bounds us)."""
    return [event.obj.key]


def setup(manager: Manager, context: ProcessContext) -> Controller:
    """Register the EphemeralRunnerSet controller (``controllers.registry``)."""
    settings = ENVIRONMENT.read(context.environ)
    github = github_clients(manager, context)
    controller, _ = build(manager, context, settings=settings, github=github)
    return controller
