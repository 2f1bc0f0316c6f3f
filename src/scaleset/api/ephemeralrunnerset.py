"""EphemeralRunnerSet: the set of runners of one scale set, owned by its AutoscalingRunnerSet
(same name). The listener writes ``spec.replicas`` and ``spec.patchID``.

ARC's fields plus our status additions: the five-way runner counts
(lifecycle.md L0), conditions, and the controller's memory that must survive a restart (L7):
the last accepted patch id (a patch id going backwards is ignored), terminal runners' reasons
recorded before they are reaped (L3), the failure breaker, and the finished runners whose slots
the listener has not yet given back (scale-up waits for them, ARC #4642).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from scaleset.api import keys
from scaleset.api._lenient import ApiModel, CrdHint, KubeTime
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


class FailureStreak(ApiModel):
    """The failure breaker (L3): how many terminal runners in a row failed for one reason, and
    whether creation is paused because of it."""

    reason: str = Field("", description="The failure reason the streak counts.")
    count: int = Field(0, description="Terminal runners in a row that failed for this reason.")
    since: KubeTime | None = Field(
        None, description="When the streak's first failure was recorded."
    )
    trips: int = Field(0, description="How often the breaker paused creation in this streak.")
    paused_until: KubeTime | None = Field(
        None, description="No runner is created before this time (controller clock)."
    )
    runner_spec: str | None = Field(
        None,
        description="Digest of the runner spec the failing runners were built from; a new "
        "runner spec ends the streak.",
    )


class FinishedRunner(ApiModel):
    """A runner seen finishing its job while ``spec.patchID`` was ``patchID``. Its slot stays
    taken until the listener sends a newer patch (which accounts for it), ARC #4642."""

    name: str = Field("", description="The runner's name.")
    patch_id: int = Field(0, alias="patchID", description="The patch it finished under.")


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
    last_patch_id: int | None = Field(
        None,
        alias="lastPatchID",
        description="The last spec.patchID the controller accepted (scaleset).",
    )
    terminal_reasons: dict[str, int] = Field(
        default_factory=dict,
        description="Terminal runners reaped so far, by reason (scaleset; never reset).",
    )
    recorded_terminal_runners: list[str] = Field(
        default_factory=list,
        description="Terminal runners whose reason is counted and that are not gone yet.",
    )
    failure_streak: FailureStreak | None = Field(
        None, description="The failure breaker (scaleset)."
    )
    finished_runners: list[FinishedRunner] = Field(
        default_factory=list,
        description="Finished runners whose slots the listener has not given back yet (scaleset).",
    )
    outdated_runner_spec: str | None = Field(
        None,
        description="Digest of the runner spec the runners reported Outdated for; the phase "
        "stays Outdated until the runner spec changes (scaleset).",
    )


class EphemeralRunnerSet(ApiModel):
    """A runner set (``actions.github.com/v1alpha1``, kind EphemeralRunnerSet)."""

    api_version: str = keys.API_VERSION
    kind: Literal["EphemeralRunnerSet"] = "EphemeralRunnerSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: EphemeralRunnerSetSpec = Field(default_factory=EphemeralRunnerSetSpec)
    status: EphemeralRunnerSetStatus = Field(default_factory=EphemeralRunnerSetStatus)
