"""AutoscalingListener: the listener of one scale set. Lives in the controller namespace and
points back at its AutoscalingRunnerSet (no owner reference: cross-namespace).

ARC's fields plus ``spec.warmWindows`` (copied from the AutoscalingRunnerSet; the listener
applies them). ARC's status is an empty object; scaleset's status
carries what the AutoscalingListener controller must not forget across a restart (the listener
pod's back-off: consecutive failures, the last failure, the earliest next attempt) and its
conditions (``Configured``, ``ListenerRunning``), which the AutoscalingRunnerSet can mirror.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from scaleset.api import keys
from scaleset.api._lenient import ApiModel, CrdHint, KubeTime, PodTemplate
from scaleset.api.autoscalingrunnerset import WarmWindowSpec
from scaleset.api.meta import Condition, ObjectMeta
from scaleset.api.shared import (
    ATOMIC_MAP,
    LocalObjectReference,
    MetricsConfig,
    ProxyConfig,
    ResourceMeta,
    TLSConfig,
    VaultConfig,
)

NON_NEGATIVE = CrdHint(minimum=0)


class AutoscalingListenerSpec(ApiModel):
    """Everything the listener pod needs, copied from the AutoscalingRunnerSet."""

    github_config_url: str = ""
    github_config_secret: str = ""
    runner_scale_set_id: int = 0
    autoscaling_runner_set_namespace: str = ""
    autoscaling_runner_set_name: str = ""
    ephemeral_runner_set_name: str = Field("", description="EphemeralRunnerSet to scale.")
    max_runners: Annotated[int, NON_NEGATIVE] = Field(
        0, description="Effective maximum (the ARS's, or 2147483647 when unset)."
    )
    min_runners: Annotated[int, NON_NEGATIVE] = Field(0, description="Effective minimum.")
    warm_windows: list[WarmWindowSpec] | None = Field(
        None,
        description=(
            "The AutoscalingRunnerSet's warmWindows (scaleset only): the listener keeps a "
            "window's minRunners while it is in force, minRunners outside every window."
        ),
    )
    image: str = Field("", description="Listener image.")
    image_pull_secrets: list[Annotated[LocalObjectReference, ATOMIC_MAP]] = Field(
        default_factory=list
    )
    proxy: ProxyConfig | None = None
    github_server_tls: TLSConfig | None = Field(None, alias="githubServerTLS")
    vault_config: VaultConfig | None = None
    metrics: MetricsConfig | None = None
    template: PodTemplate | None = Field(
        None, description="Overrides merged into the listener pod (PodTemplateSpec)."
    )
    config_secret_metadata: ResourceMeta | None = None
    service_account_metadata: ResourceMeta | None = None
    role_metadata: ResourceMeta | None = None
    role_binding_metadata: ResourceMeta | None = None


class ListenerPodFailure(ApiModel):
    """The last listener pod that ended (exited, evicted, or failed) without the controller
    asking it to."""

    pod_uid: str = Field("", description="UID of the pod that ended.")
    time: KubeTime | None = Field(None, description="When the controller saw it end.")
    reason: str = Field("", description="Why, in CamelCase (e.g. GitHubRefused, Evicted).")
    exit_code: int | None = Field(None, description="The listener container's exit code.")
    message: str = Field("", description="The termination message or pod message, shortened.")
    pod_hash: str = Field(
        "", description="The pod's configuration digest; a changed one is tried at once."
    )


class AutoscalingListenerStatus(ApiModel):
    """Written by the AutoscalingListener controller (scaleset; ARC's status is empty)."""

    pod_failures: Annotated[int, NON_NEGATIVE] = Field(
        0,
        description=(
            "Consecutive listener pod failures; drives the back-off, reset after the listener "
            "ran healthy for a while."
        ),
    )
    last_pod_failure: ListenerPodFailure | None = None
    next_pod_attempt_time: KubeTime | None = Field(
        None, description="No new listener pod before this time (back-off)."
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Configured and ListenerRunning, with the reason a listener cannot run.",
    )


class AutoscalingListener(ApiModel):
    """A listener (``actions.github.com/v1alpha1``, kind AutoscalingListener)."""

    api_version: str = keys.API_VERSION
    kind: Literal["AutoscalingListener"] = "AutoscalingListener"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AutoscalingListenerSpec = Field(default_factory=AutoscalingListenerSpec)
    status: AutoscalingListenerStatus = Field(default_factory=AutoscalingListenerStatus)
