"""Registers the registration pass (lifecycle.md L6) on the manager: a controller over the
EphemeralRunnerSets that also hears every change of their EphemeralRunners (observations for the
early pass, read from the shared caches) and reads the runner pods' cache (a pass plans on the
caches first), ``DEFAULT_WORKERS`` workers, its own GitHub clients.

Its settings come from the process context's environment: the variables ``ENVIRONMENT``
declares (defaults in ``settings.Settings``).
"""

from __future__ import annotations

from scaleset.api import keys
from scaleset.controllers.env_settings import (
    EnvSetting,
    EnvSettings,
    positive_seconds,
    seconds_or_off,
    whole_or_zero,
)
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.registrationpass.reconciler import RegistrationPass
from scaleset.controllers.registrationpass.schedule import EarlySettings
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.controllers.setup import ProcessContext, github_clients
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, POD
from scaleset.runtime.controller import Controller
from scaleset.runtime.manager import Manager

NAME = "registrationpass"
DEFAULT_WORKERS = 4
"""Passes of different scale sets run side by side: one tenant's slow GitHub delays only its
own sets' passes."""


ENVIRONMENT = EnvSettings(
    Settings(),
    (
        EnvSetting(
            "SCALESET_REGISTRATION_PASS_INTERVAL",
            "interval",
            positive_seconds,
            "Seconds between two registration passes (L6) over one runner set. More than zero.",
        ),
        EnvSetting(
            "SCALESET_REGISTRATION_PASS_MAX_DELETIONS",
            "max_deletions",
            whole_or_zero,
            "Runners and registrations one pass deletes at most (`DeletionCapReached` names "
            "the rest). A whole number, 0 or more.",
        ),
        EnvSetting(
            "SCALESET_RUNNER_OFFLINE_BOUND",
            "offline_bound",
            positive_seconds,
            "Seconds GitHub may show an idle runner offline while its pod runs before the "
            "runner is replaced (`RunnerOffline`). More than zero.",
        ),
        EnvSetting(
            "SCALESET_MAX_RUNNER_AGE",
            "max_runner_age",
            seconds_or_off,
            "Seconds after which an idle runner is retired and replaced (`RunnerRetired`); "
            "unset or 0: never.",
            default="unset (off)",
        ),
    ),
)
"""The environment variables of the registration pass."""


def build(
    manager: Manager,
    context: ProcessContext,
    *,
    settings: Settings,
    github: GitHubClients,
    early: EarlySettings | None = None,
) -> tuple[Controller, RegistrationPass]:
    """The controller and its pass (tests pass their own settings and GitHub clients)."""
    registration_pass = RegistrationPass(
        context.client,
        github,
        manager.events,
        context.clock,
        settings,
        early=early or EarlySettings(),
    )
    controller = context.controller(
        manager,
        NAME,
        for_kind=EPHEMERAL_RUNNER_SET,
        reconcile=registration_pass.reconcile,
        default_workers=DEFAULT_WORKERS,
    )
    registration_pass.sets = controller.informer
    registration_pass.runners = controller.owns(EPHEMERAL_RUNNER)
    registration_pass.pods = controller.reads(POD, label_selector=keys.RUNNER_POD_SELECTOR)
    return controller, registration_pass


def setup(manager: Manager, context: ProcessContext) -> Controller:
    """Register the registration pass (``controllers.registry``)."""
    settings = ENVIRONMENT.read(context.environ)
    github = github_clients(manager, context)
    controller, _ = build(manager, context, settings=settings, github=github)
    return controller
