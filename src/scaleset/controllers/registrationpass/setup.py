"""Registers the registration pass (lifecycle.md L6) on the manager: a controller over the
EphemeralRunnerSets that also hears every change of their EphemeralRunners (observations for the
early pass, read from the shared caches), ``DEFAULT_WORKERS`` workers, its own GitHub clients.

Settings come from the environment (defaults in ``observed.Settings``):
``SCALESET_REGISTRATION_PASS_INTERVAL`` (seconds between passes of one set, default 300),
``SCALESET_REGISTRATION_PASS_MAX_DELETIONS`` (per pass, default 10),
``SCALESET_RUNNER_OFFLINE_BOUND`` (seconds offline before an idle runner with a running pod is
replaced, default 600), ``SCALESET_MAX_RUNNER_AGE`` (seconds; an idle runner older than this is
retired; unset or 0: off).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.registrationpass.observed import Settings
from scaleset.controllers.registrationpass.reconciler import RegistrationPass
from scaleset.controllers.registrationpass.schedule import EarlySettings
from scaleset.controllers.setup import ProcessContext, github_clients
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from scaleset.runtime.controller import Controller
from scaleset.runtime.manager import Manager

NAME = "registrationpass"
DEFAULT_WORKERS = 4
"""Passes of different scale sets run side by side: one tenant's slow GitHub delays only its
own sets' passes."""


def settings_from_environ(environ: Mapping[str, str]) -> Settings:
    """``Settings`` with the environment's overrides (bad values: ``ValueError``)."""

    def number(variable: str, *, zero: bool = False) -> float | None:
        text = environ.get(variable, "").strip()
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{variable}={text!r} is not a number") from None
        if value < 0 or (value == 0 and not zero) or value != value or value == float("inf"):
            allowed = "zero or more" if zero else "more than zero"
            raise ValueError(f"{variable}={text!r}: must be {allowed}")
        return value

    defaults = Settings()
    interval = number("SCALESET_REGISTRATION_PASS_INTERVAL")
    cap = number("SCALESET_REGISTRATION_PASS_MAX_DELETIONS", zero=True)
    if cap is not None and cap != int(cap):
        raise ValueError(f"SCALESET_REGISTRATION_PASS_MAX_DELETIONS={cap} is not a whole number")
    bound = number("SCALESET_RUNNER_OFFLINE_BOUND")
    age = number("SCALESET_MAX_RUNNER_AGE", zero=True)
    return Settings(
        interval=defaults.interval if interval is None else interval,
        max_deletions=defaults.max_deletions if cap is None else int(cap),
        offline_bound=defaults.offline_bound if bound is None else bound,
        max_runner_age=age or None,
    )


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
    controller = manager.controller(
        NAME,
        for_kind=EPHEMERAL_RUNNER_SET,
        reconcile=registration_pass.reconcile,
        workers=context.workers_for(NAME, DEFAULT_WORKERS),
        queue=context.options.queue_settings(),
    )
    registration_pass.sets = controller.informer
    registration_pass.runners = controller.owns(EPHEMERAL_RUNNER)
    return controller, registration_pass


def setup(manager: Manager, context: ProcessContext) -> Controller:
    """Register the registration pass (``controllers.registry``)."""
    settings = settings_from_environ(os.environ)
    github = github_clients(manager, context)
    controller, _ = build(manager, context, settings=settings, github=github)
    return controller
