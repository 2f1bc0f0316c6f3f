"""Registers the EphemeralRunnerSet controller on the manager: the reconciler, the set's runners
(each change is observed for the ledger), the AutoscalingRunnerSet of the same name (its
maxRunners bounds the set), its GitHub clients and its settings.

Its settings come from the process context's environment: the variables ``ENVIRONMENT``
declares (defaults in ``RunnerSetSettings``).
"""

from __future__ import annotations

from scaleset.clock import Clock
from scaleset.controllers.env_settings import EnvSetting, EnvSettings, positive_whole
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
from scaleset.controllers.ephemeralrunnerset.reconciler import (
    EphemeralRunnerSetReconciler,
    RunnerSetSettings,
)
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.setup import ProcessContext, github_clients
from scaleset.kube.client import KubeClient
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from scaleset.runtime.controller import Controller, QueueSettings
from scaleset.runtime.manager import Manager
from scaleset.runtime.store import InformerEvent

NAME = "ephemeralrunnerset"
DEFAULT_WORKERS = 2

ENVIRONMENT = EnvSettings(
    RunnerSetSettings(),
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


def register(
    manager: Manager,
    *,
    client: KubeClient,
    clock: Clock,
    github: GitHubClients,
    workers: int = DEFAULT_WORKERS,
    settings: RunnerSetSettings | None = None,
    metrics: RunnerSetMetrics | None = None,
    queue: QueueSettings | None = None,
) -> tuple[Controller, EphemeralRunnerSetReconciler]:
    """Register the controller on ``manager`` (tests call this with their own clock, GitHub
    clients and metrics)."""
    reconciler = EphemeralRunnerSetReconciler(
        client=client,
        informers=manager.informers,
        events=manager.events,
        github=github,
        clock=clock,
        settings=settings,
        metrics=metrics,
    )
    controller = manager.controller(
        NAME,
        for_kind=EPHEMERAL_RUNNER_SET,
        reconcile=reconciler.reconcile,
        workers=workers,
        queue=queue,
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
    """``ControllerSpec.setup``: the controller with the process's client and clock, tuned by
    the environment (``ENVIRONMENT``)."""
    github = github_clients(manager, context)
    controller, _ = register(
        manager,
        client=context.client,
        clock=context.clock,
        github=github,
        workers=context.workers_for(NAME, DEFAULT_WORKERS),
        settings=ENVIRONMENT.read(context.environ),
        queue=context.options.queue_settings(),
    )
    return controller
