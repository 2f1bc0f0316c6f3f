"""The reconcilers the controller manager runs, in start order (static imports, no strings).

Registered today: the AutoscalingRunnerSet, EphemeralRunner, EphemeralRunnerSet and
AutoscalingListener reconcilers, and the registration pass (``registrationpass``, L6). A new
reconciler: import its module's ``setup`` and append a ``ControllerSpec``.
"""

from __future__ import annotations

from scaleset.controllers.autoscalinglistener import setup as autoscalinglistener_setup
from scaleset.controllers.autoscalingrunnerset import setup as autoscalingrunnerset_setup
from scaleset.controllers.ephemeralrunner import setup as ephemeralrunner_setup
from scaleset.controllers.ephemeralrunnerset import reconciler as ephemeralrunnerset
from scaleset.controllers.registrationpass import setup as registrationpass_setup
from scaleset.controllers.setup import ControllerSpec

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
    ),
    ControllerSpec(
        ephemeralrunnerset.NAME,
        ephemeralrunnerset.DEFAULT_WORKERS,
        ephemeralrunnerset.setup,
    ),
    ControllerSpec(
        autoscalinglistener_setup.NAME,
        autoscalinglistener_setup.DEFAULT_WORKERS,
        autoscalinglistener_setup.setup,
    ),
    ControllerSpec(
        registrationpass_setup.NAME,
        registrationpass_setup.DEFAULT_WORKERS,
        registrationpass_setup.setup,
    ),
)
"""Every reconciler the manager starts, in start order."""


def registered_names() -> list[str]:
    return [spec.name for spec in REGISTERED]
