"""EphemeralRunnerSet: the set of runners of one scale set, owned by its AutoscalingRunnerSet
(same name). The listener writes ``spec.replicas`` and ``spec.patchID``.

ARC's fields (spec/kubernetes.md §1.2) plus our status additions: the five-way runner counts
(lifecycle.md L0) and conditions (L3: repeated failures, paused creation).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from scaleset.api import keys
from scaleset.api._lenient import ApiModel, CrdHint
from scaleset.api.ephemeralrunner import EphemeralRunnerSpec
from scaleset.api.meta import Condition, ObjectMeta
from scaleset.api.runner_counts import RunnerCountFields
from scaleset.api.shared import ResourceMeta


class RunnerSetPhase(StrEnum):
    """Values of ``EphemeralRunnerSet.status.phase`` (ARC)."""

    RUNNING = "Running"
    OUTDATED = "Outdated"


class EphemeralRunnerSetSpec(ApiModel):
    """Desired runners: how many, and the spec each one gets."""

    replicas: int | None = Field(
        None, description="Desired runner count, written by the listener (absent means 0)."
    )
    patch_id: Annotated[int, CrdHint(required=True)] = Field(
        0,
        alias="patchID",
        description="Sequence number of the listener's last patch; 0 forces the state.",
    )
    ephemeral_runner_spec: EphemeralRunnerSpec = Field(default_factory=EphemeralRunnerSpec)
    ephemeral_runner_metadata: ResourceMeta | None = Field(
        None, description="Extra labels/annotations for new EphemeralRunners."
    )


class EphemeralRunnerSetStatus(RunnerCountFields):
    """Observed state. ARC's counts go by ``status.phase`` of the children (see
    ``RunnerCountFields`` for what ``running`` means under L1); the five-way counts come from the
    one classifier."""

    current_replicas: Annotated[int, CrdHint(required=True)] = Field(
        0, description="ARC: pending + running + failed children."
    )
    pending_ephemeral_runners: int = 0
    running_ephemeral_runners: int = 0
    failed_ephemeral_runners: int = 0
    phase: str = Field("", description="Running or Outdated.")
    conditions: list[Condition] = Field(default_factory=list)


class EphemeralRunnerSet(ApiModel):
    """A runner set (``actions.github.com/v1alpha1``, kind EphemeralRunnerSet)."""

    api_version: str = keys.API_VERSION
    kind: Literal["EphemeralRunnerSet"] = "EphemeralRunnerSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: EphemeralRunnerSetSpec = Field(default_factory=EphemeralRunnerSetSpec)
    status: EphemeralRunnerSetStatus = Field(default_factory=EphemeralRunnerSetStatus)
