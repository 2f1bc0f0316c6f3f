"""Kubernetes object metadata and status conditions, as far as our controllers read them.

Only the fields we use are typed; everything else (``managedFields``, fields of future
Kubernetes versions) is kept as it came, like every other unknown field.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from scaleset.api._lenient import ApiModel, KubeTime


class OwnerReference(ApiModel):
    """``metadata.ownerReferences[]``: who owns this object (garbage collection)."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(ApiModel):
    """``metadata`` of a stored object."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: KubeTime | None = None
    deletion_timestamp: KubeTime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    managed_fields: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def is_deleting(self) -> bool:
        """``deletionTimestamp`` is set: the object is being deleted."""
        return self.deletion_timestamp is not None

    def controller_owner(self) -> OwnerReference | None:
        """The owner reference with ``controller: true``, if any."""
        return next((ref for ref in self.owner_references if ref.controller), None)


class Condition(ApiModel):
    """A status condition, shaped like ``metav1.Condition`` (our addition to the status of the
    AutoscalingRunnerSet, EphemeralRunnerSet and EphemeralRunner; ARC has none)."""

    type: str = Field("", description="Condition type in CamelCase, e.g. Valid.")
    status: str = Field("", description="True, False or Unknown.")
    reason: str = Field("", description="Machine-readable reason in CamelCase.")
    message: str = Field("", description="Human-readable detail.")
    last_transition_time: KubeTime | None = Field(None, description="When status last changed.")
    observed_generation: int | None = Field(
        None, description="metadata.generation the condition was computed from."
    )
