"""The reconcilers the controller manager runs, in start order (static imports, no strings).

Registered today: the AutoscalingRunnerSet, EphemeralRunner and EphemeralRunnerSet reconcilers.
The AutoscalingListener reconciler is added here by its own issue: import the module's ``setup``
and append a ``ControllerSpec``.
"""

from __future__ import annotations

from scaleset.controllers.autoscalingrunnerset import setup as autoscalingrunnerset_setup
from scaleset.controllers.ephemeralrunner import setup as ephemeralrunner_setup
from scaleset.controllers.ephemeralrunnerset import reconciler as ephemeralrunnerset
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
)
"""Every reconciler the manager starts, in start order."""


def registered_names() -> list[str]:
    return [spec.name for spec in REGISTERED]
