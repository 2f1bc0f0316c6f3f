"""What ``plan`` can decide: small frozen values, one API call each (see ``apply``).

Every effect carries a ``Note``: its stable ``reason`` labels the counter
``scaleset_autoscaling_runner_set_decisions_total{reason}`` and, when the note has a message, is
the reason of the Kubernetes Event posted on the AutoscalingRunnerSet (L9). ``Report`` says
something without calling an API; ``Wait`` ends a plan: when to look again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scaleset.controllers.decisions import AddFinalizers as AddFinalizers
from scaleset.controllers.decisions import Note as Note
from scaleset.controllers.decisions import RemoveFinalizers as RemoveFinalizers
from scaleset.controllers.decisions import Report as Report
from scaleset.controllers.decisions import Wait as Wait
from scaleset.controllers.decisions import WriteStatus as WriteStatus
from scaleset.kube.resources import Kind

# --- the AutoscalingRunnerSet ------------------------------------------------------------------


FINALIZER_REMOVED = Note("FinalizerRemoved", "all cleanup done; the scale set is released")
"""The note of the ``RemoveFinalizers`` that releases the scale set."""


@dataclass(frozen=True)
class AnnotateScaleSet:
    """Merge patch of the scale set's annotations (``None`` removes one) and labels."""

    annotations: Mapping[str, str | None] = field(hash=False)
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    note: Note = Note("ScaleSetAnnotated")


# --- GitHub ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolveRunnerGroup:
    """Look the runner group up by name (its id is what the scale set records)."""

    name: str
    note: Note = Note("RunnerGroupResolved")


@dataclass(frozen=True)
class FindScaleSet:
    """Look for an existing scale set with this name in the group (adopt instead of create)."""

    runner_group_id: int
    name: str
    note: Note = Note("ScaleSetLookedUp")


@dataclass(frozen=True)
class CreateScaleSet:
    """Register the scale set: name, group, label list (multi-label, ARC 0.14), updates off."""

    name: str
    runner_group_id: int
    labels: tuple[str, ...]
    note: Note = Note("ScaleSetCreated")


@dataclass(frozen=True)
class VerifyScaleSet:
    """Ask GitHub for the scale set by id: it may have been deleted out of band (ARC #4571)."""

    scale_set_id: int
    note: Note = Note("ScaleSetVerified")


@dataclass(frozen=True)
class UpdateScaleSet:
    """Change name, group or labels on GitHub (updates stay disabled)."""

    scale_set_id: int
    name: str | None
    runner_group_id: int | None
    labels: tuple[str, ...] | None
    note: Note


@dataclass(frozen=True)
class DeleteScaleSet:
    """Delete the scale set on GitHub (last step before the finalizers, L10)."""

    scale_set_id: int
    note: Note = Note("ScaleSetDeleted")


# --- owned objects -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateRunnerSet:
    body: Mapping[str, Any] = field(hash=False)
    note: Note = Note("RunnerSetCreated")


@dataclass(frozen=True)
class UpdateRunnerSet:
    """Merge patch of the runner set in place (spec, labels, annotations, our digest), guarded by
    the ``resource_version`` that was read (L2: the listener patches the same object). The
    version is not part of the action's identity: the same patch planned again on a newer
    version is the same write (the reconciler stops a write that does not take)."""

    name: str
    patch: Mapping[str, Any] = field(hash=False)
    note: Note = Note("RunnerSetUpdated")
    resource_version: str = field(default="", compare=False)


@dataclass(frozen=True)
class DeleteRunnerSet:
    """Delete a runner set (uid precondition); it drains: idle runners go, busy ones finish."""

    name: str
    uid: str
    note: Note


@dataclass(frozen=True)
class CreateListener:
    body: Mapping[str, Any] = field(hash=False)
    note: Note = Note("ListenerCreated")


@dataclass(frozen=True)
class UpdateListener:
    name: str
    patch: Mapping[str, Any] = field(hash=False)
    note: Note = Note("ListenerUpdated")


@dataclass(frozen=True)
class DeleteListener:
    name: str
    uid: str
    note: Note


@dataclass(frozen=True)
class ReadChartObjects:
    """GET the chart objects the scale set's cleanup annotations name (only at the end of a
    deletion: before that nothing needs them)."""

    note: Note = Note("ChartObjectsRead")


@dataclass(frozen=True)
class ReleaseChartObject:
    """Remove ``actions.github.com/cleanup-protection`` from a chart object (guarded patch)."""

    annotation: str
    kind: Kind
    name: str
    note: Note


# --- no API call -------------------------------------------------------------------------------


GitHubEffect = (
    ResolveRunnerGroup
    | FindScaleSet
    | CreateScaleSet
    | VerifyScaleSet
    | UpdateScaleSet
    | DeleteScaleSet
)
KubeEffect = (
    AddFinalizers
    | RemoveFinalizers
    | AnnotateScaleSet
    | WriteStatus
    | CreateRunnerSet
    | UpdateRunnerSet
    | DeleteRunnerSet
    | CreateListener
    | UpdateListener
    | DeleteListener
    | ReadChartObjects
    | ReleaseChartObject
)
Effect = GitHubEffect | KubeEffect
"""An action that calls an API."""

Action = Effect | Report | Wait
