"""The actions ``plan`` can decide on: small frozen values, one API call each (see ``apply``).

Every action carries a ``Note``: its stable ``reason`` is the counter label
(``scaleset_autoscaling_listener_decisions_total{reason}``) and, when the note has a message,
the reason of the Event posted on the AutoscalingListener (L9). ``Wait`` ends a plan: when to
look again. Bodies of Secrets are never in an action (they hold credentials): ``WriteSecret``
names which Secret, and ``apply`` builds it from the observed inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from scaleset.controllers.decisions import AddFinalizers as AddFinalizers
from scaleset.controllers.decisions import Note as Note
from scaleset.controllers.decisions import RemoveFinalizers as RemoveFinalizers
from scaleset.controllers.decisions import Report as Report
from scaleset.controllers.decisions import Wait as Wait
from scaleset.controllers.decisions import WriteStatus as WriteStatus
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import Kind


@dataclass(frozen=True)
class CreateObject:
    """Create a ServiceAccount, Role, RoleBinding or the pod (no Secret: see WriteSecret)."""

    kind: Kind
    body: Mapping[str, Any] = field(hash=False, repr=False)
    note: Note


@dataclass(frozen=True)
class PatchObject:
    """Merge-patch an object (labels, annotations, Role rules, RoleBinding subjects)."""

    kind: Kind
    key: ObjectKey
    body: Mapping[str, Any] = field(hash=False)
    note: Note


@dataclass(frozen=True)
class WriteSecret:
    """Create (``create``) or rewrite the config or proxy Secret from the observed inputs."""

    which: Literal["config", "proxy"]
    create: bool
    note: Note


@dataclass(frozen=True)
class DeleteObject:
    """Delete an object (``uid`` precondition: never a newer object of the same name)."""

    kind: Kind
    key: ObjectKey
    uid: str
    note: Note


@dataclass(frozen=True)
class DeleteListener:
    """Delete the AutoscalingListener itself (its scale set is gone)."""

    note: Note


Effect = (
    AddFinalizers
    | RemoveFinalizers
    | WriteStatus
    | CreateObject
    | PatchObject
    | WriteSecret
    | DeleteObject
    | DeleteListener
)
"""An action that calls the API."""

Action = Effect | Report | Wait
