"""The reconcilers the controller manager runs, registered by name.

Each reconciler module contributes one ``ControllerSpec``: its name (used by ``--workers
NAME=N`` and in logs/metrics), its default worker count, and the dotted path of a ``setup``
function that registers the controller on the manager. The path is imported only when the
manager starts, so importing this package (the CLI's ``--help``) stays cheap.

``setup(manager, context)`` receives the ``Manager`` and a ``ProcessContext`` (flags and
environment of the process, ``workers_for(name)``) and calls ``manager.controller(...)``.

Registered today: none. The AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunner and
AutoscalingListener reconcilers are added here by their own issues.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ControllerSpec:
    """One reconciler: ``name``, default ``workers``, and ``setup`` as ``"module:function"``."""

    name: str
    default_workers: int
    setup: str


REGISTERED: tuple[ControllerSpec, ...] = ()
"""Every reconciler the manager starts, in start order."""


def registered_names() -> list[str]:
    return [spec.name for spec in REGISTERED]
