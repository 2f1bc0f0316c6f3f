"""The reconcilers the controller manager runs, in start order (static imports, no strings).

Registered today: the AutoscalingRunnerSet, EphemeralRunner, EphemeralRunnerSet and
AutoscalingListener reconcilers, and the registration pass (``registrationpass``, L6). A new
reconciler: import its module's ``setup`` and append a ``ControllerSpec`` (with the environment
variables it declares: they reach docs/configuration.md through ``environment_variables``).
"""

from __future__ import annotations

from scaleset.controllers.autoscalinglistener import setup as autoscalinglistener_setup
from scaleset.controllers.autoscalingrunnerset import setup as autoscalingrunnerset_setup
from scaleset.controllers.env_settings import DocumentedVariable, documented
from scaleset.controllers.ephemeralrunner import setup as ephemeralrunner_setup
from scaleset.controllers.ephemeralrunnerset import setup as ephemeralrunnerset_setup
from scaleset.controllers.registrationpass import setup as registrationpass_setup
from scaleset.controllers.setup import GITHUB_ENVIRONMENT, ControllerSpec

REGISTERED: tuple[ControllerSpec, ...] = (
    ControllerSpec(
        autoscalingrunnerset_setup.NAME,
        autoscalingrunnerset_setup.DEFAULT_WORKERS,
        autoscalingrunnerset_setup.setup,
    ),
    ControllerSpec(
        ephemeralrunner_setup.NAME,
        ephemeralrunner_setup.DEFAULT_WORKERS,
        ephemeralrunner_setup.setup,
        ephemeralrunner_setup.ENVIRONMENT,
    ),
    ControllerSpec(
        ephemeralrunnerset_setup.NAME,
        ephemeralrunnerset_setup.DEFAULT_WORKERS,
        ephemeralrunnerset_setup.setup,
        ephemeralrunnerset_setup.ENVIRONMENT,
    ),
    ControllerSpec(
        autoscalinglistener_setup.NAME,
        autoscalinglistener_setup.DEFAULT_WORKERS,
        autoscalinglistener_setup.setup,
        autoscalinglistener_setup.ENVIRONMENT,
    ),
    ControllerSpec(
        registrationpass_setup.NAME,
        registrationpass_setup.DEFAULT_WORKERS,
        registrationpass_setup.setup,
        registrationpass_setup.ENVIRONMENT,
    ),
)
"""Every reconciler the manager starts, in start order."""


def registered_names() -> list[str]:
    return [spec.name for spec in REGISTERED]


def environment_variables() -> tuple[DocumentedVariable, ...]:
    """Every environment variable the controller process reads, as its declaration documents
    it: the registered controllers' (in start order), then the GitHub access's."""
    declared = [spec.environment for spec in REGISTERED if spec.environment is not None]
    return documented([*declared, GITHUB_ENVIRONMENT])
