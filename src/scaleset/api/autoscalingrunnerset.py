"""AutoscalingRunnerSet: the user-facing scale set, created by the ``gha-runner-scale-set`` chart.

ARC's fields plus our additions: ``spec.warmWindows`` (scheduled warm
capacity: a weekly minimum per window, ``scaleset.api.warm_windows``), and in status the
five-way runner counts (lifecycle.md L0) and conditions (L8: an invalid object is reported, not
acted on).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from scaleset.api import keys
from scaleset.api._lenient import ApiModel, CrdHint, PodTemplate
from scaleset.api.meta import Condition, ObjectMeta
from scaleset.api.runner_counts import RunnerCountFields
from scaleset.api.shared import MetricsConfig, ProxyConfig, ResourceMeta, TLSConfig, VaultConfig

NON_NEGATIVE = CrdHint(minimum=0)


class ScaleSetPhase(StrEnum):
    """Values of ``AutoscalingRunnerSet.status.phase`` (ARC)."""

    PENDING = "Pending"
    RUNNING = "Running"
    OUTDATED = "Outdated"


class WarmWindowSpec(ApiModel):
    """A weekly window with its own minimum runner count (scaleset's extension; ARC ignores it).

    Read by ``scaleset.api.warm_windows``; every field is checked there, so a bad window is
    reported on the object (``Valid=False`` naming the field), never refused by the API server.
    """

    days: list[str] | None = Field(
        None,
        description=(
            "Days the window starts on: Mon, Tue, Wed, Thu, Fri, Sat, Sun or a range like "
            "Mon-Fri; omitted means every day."
        ),
    )
    start: str | None = Field(None, description="Local start time, HH:MM.")
    end: str | None = Field(
        None,
        description=(
            "Local end time, HH:MM (24:00 for midnight); at or before start means the next day."
        ),
    )
    time_zone: str | None = Field(
        None, description="IANA time zone of start and end, e.g. Europe/Berlin or UTC."
    )
    min_runners: Annotated[int | None, NON_NEGATIVE] = Field(
        None, description="Runners kept during the window, instead of spec.minRunners."
    )


class AutoscalingRunnerSetSpec(ApiModel):
    """What the user asked for."""

    github_config_url: str = Field(
        "", description="GitHub org, repository or enterprise URL the runners register with."
    )
    github_config_secret: str = Field(
        "",
        description=(
            "Secret (in this namespace) with github_token or GitHub App credentials; "
            "the vault lookup key when vaultConfig is set."
        ),
    )
    runner_group: str = Field("", description="Runner group; empty means the default group.")
    runner_scale_set_name: str = Field(
        "", description="Scale set name on GitHub; defaults to this object's name."
    )
    runner_scale_set_labels: list[str] = Field(
        default_factory=list, description="Extra labels for the scale set on GitHub."
    )
    proxy: ProxyConfig | None = None
    github_server_tls: TLSConfig | None = Field(None, alias="githubServerTLS")
    vault_config: VaultConfig | None = None
    template: PodTemplate = Field(
        default_factory=dict,
        description="Runner pod template (PodTemplateSpec); the container named runner is special.",
    )
    autoscaling_listener: ResourceMeta | None = Field(
        None, description="Extra labels/annotations for the AutoscalingListener."
    )
    listener_metrics: MetricsConfig | None = None
    listener_template: PodTemplate | None = Field(
        None, description="Overrides merged into the listener pod (PodTemplateSpec)."
    )
    listener_service_account_metadata: ResourceMeta | None = None
    listener_role_metadata: ResourceMeta | None = None
    listener_role_binding_metadata: ResourceMeta | None = None
    listener_config_secret_metadata: ResourceMeta | None = None
    ephemeral_runner_set_metadata: ResourceMeta | None = None
    ephemeral_runner_metadata: ResourceMeta | None = None
    ephemeral_runner_config_secret_metadata: ResourceMeta | None = None
    max_runners: Annotated[int | None, NON_NEGATIVE] = Field(
        None, description="Upper bound of runners; unset means no bound."
    )
    min_runners: Annotated[int | None, NON_NEGATIVE] = Field(
        None, description="Runners kept even without jobs; unset means 0."
    )
    warm_windows: list[WarmWindowSpec] | None = Field(
        None,
        description=(
            "Weekly windows with their own minimum (scaleset only): during a window its "
            "minRunners applies, outside every window spec.minRunners. Windows must not overlap."
        ),
    )


class AutoscalingRunnerSetStatus(RunnerCountFields):
    """Observed state: the phase, conditions and warm window. The runner counts (``currentRunners``,
    ARC's phase-based counts and the five-way counts of ``RunnerCountFields``) are the
    EphemeralRunnerSet's: ARC 0.14 copied them here, scaleset reads them (an object ARC wrote
    still parses) and removes them."""

    current_runners: int = Field(
        0,
        description=(
            "ARC 0.14: runners counted by the EphemeralRunnerSet. Not written by scaleset (it "
            "removes the field): see the EphemeralRunnerSet's currentReplicas."
        ),
    )
    phase: str = Field("", description="Pending, Running or Outdated.")
    pending_ephemeral_runners: int = 0
    running_ephemeral_runners: int = 0
    failed_ephemeral_runners: int = 0
    conditions: list[Condition] = Field(
        default_factory=list, description="Conditions, e.g. Valid=False naming a bad field."
    )
    warm_window: str | None = Field(
        None,
        description=(
            "The warm window in force now, e.g. 'warmWindows[0] (Mon,Tue,Wed,Thu,Fri "
            "08:00-18:00 Europe/Berlin, minRunners 5)'; absent outside every window (scaleset "
            "only; set while spec.warmWindows has windows)."
        ),
    )
    min_runners_in_force: Annotated[int | None, NON_NEGATIVE] = Field(
        None,
        description=(
            "The minimum runner count in force now: the window's minRunners, or spec.minRunners "
            "outside every window (scaleset only; set while spec.warmWindows has windows)."
        ),
    )


class AutoscalingRunnerSet(ApiModel):
    """A runner scale set (``actions.github.com/v1alpha1``, kind AutoscalingRunnerSet)."""

    api_version: str = keys.API_VERSION
    kind: Literal["AutoscalingRunnerSet"] = "AutoscalingRunnerSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AutoscalingRunnerSetSpec = Field(default_factory=AutoscalingRunnerSetSpec)
    status: AutoscalingRunnerSetStatus = Field(default_factory=AutoscalingRunnerSetStatus)
