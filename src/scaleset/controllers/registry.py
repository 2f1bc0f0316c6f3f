"""The reconcilers the controller manager runs, in start order (static imports, no strings).

Registered today: none. The AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunner and
AutoscalingListener reconcilers are added here by their own issues: import the module's
``setup`` and append a ``ControllerSpec``.
"""

from __future__ import annotations

from scaleset.controllers.setup import ControllerSpec

REGISTERED: tuple[ControllerSpec, ...] = ()
"""Every reconciler the manager starts, in start order."""


def registered_names() -> list[str]:
    return [spec.name for spec in REGISTERED]
