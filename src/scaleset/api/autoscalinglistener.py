"""AutoscalingListener: the listener of one scale set. Lives in the controller namespace and
points back at its AutoscalingRunnerSet (no owner reference: cross-namespace).

ARC's fields (spec/kubernetes.md §1.4). Its status is an empty object in ARC and here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from scaleset.api import keys
from scaleset.api._lenient import ApiModel, CrdHint, PodTemplate
from scaleset.api.meta import ObjectMeta
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


class AutoscalingListenerStatus(ApiModel):
    """Empty, as in ARC (unknown fields are kept in memory; the API server prunes them)."""


class AutoscalingListener(ApiModel):
    """A listener (``actions.github.com/v1alpha1``, kind AutoscalingListener)."""

    api_version: str = keys.API_VERSION
    kind: Literal["AutoscalingListener"] = "AutoscalingListener"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AutoscalingListenerSpec = Field(default_factory=AutoscalingListenerSpec)
    status: AutoscalingListenerStatus = Field(default_factory=AutoscalingListenerStatus)
