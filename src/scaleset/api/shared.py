"""Types shared by the four kinds: resource metadata, proxy, TLS, vault and listener metrics.

JSON names and optionality follow ARC's v1alpha1 types.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from scaleset.api._lenient import ApiModel, CrdHint, Number

ATOMIC_MAP = CrdHint.keywords({"x-kubernetes-map-type": "atomic"})


class ResourceMeta(ApiModel):
    """Extra labels and annotations for an object the controller creates."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class ProxyServerConfig(ApiModel):
    """One proxy server. The Secret named by ``credentialSecretRef`` holds ``username`` and
    ``password``."""

    url: str = ""
    credential_secret_ref: str = ""


class ProxyConfig(ApiModel):
    """Proxy for GitHub API calls, the listener and the runner pods."""

    http: ProxyServerConfig | None = None
    https: ProxyServerConfig | None = None
    no_proxy: list[str] = Field(default_factory=list)


class ConfigMapKeySelector(ApiModel):
    """A key of a ConfigMap in the object's own namespace (``corev1.ConfigMapKeySelector``)."""

    key: Annotated[str, CrdHint(required=True)] = ""
    # ARC's CRD declares ``default: ""`` here; kube-apiserver 1.20 rejects that CRD ("must be of
    # type string: null"), and an absent default accepts the same objects, so we declare none.
    name: str = ""
    optional: bool | None = None


class TLSCertificateSource(ApiModel):
    """Where the PEM certificate comes from."""

    config_map_key_ref: Annotated[ConfigMapKeySelector | None, ATOMIC_MAP] = None


class TLSConfig(ApiModel):
    """Extra CA certificate for the GitHub server (appended to the system pool)."""

    certificate_from: TLSCertificateSource | None = None


class AzureKeyVaultConfig(ApiModel):
    """Azure Key Vault access. All four ARC fields are required by ARC's schema."""

    url: Annotated[str, CrdHint(required=True)] = ""
    tenant_id: Annotated[str, CrdHint(required=True)] = ""
    client_id: Annotated[str, CrdHint(required=True)] = ""
    certificate_path: Annotated[str, CrdHint(required=True)] = ""
    secret_key: str = Field(
        "",
        description=(
            "Written by ARC's chart but not declared in ARC's CRD (so pruned there); "
            "declared here so it is kept."
        ),
    )


class VaultConfig(ApiModel):
    """Resolve GitHub credentials from a vault; ``githubConfigSecret`` is then the lookup key.
    The only supported ``type`` is ``azure_key_vault``."""

    type: str = ""
    azure_key_vault: AzureKeyVaultConfig | None = None
    proxy: ProxyConfig | None = None


class CounterMetric(ApiModel):
    """A listener counter and the label keys it carries."""

    labels: Annotated[list[str], CrdHint(required=True)] = Field(default_factory=list)


class GaugeMetric(ApiModel):
    """A listener gauge and the label keys it carries."""

    labels: Annotated[list[str], CrdHint(required=True)] = Field(default_factory=list)


class HistogramMetric(ApiModel):
    """A listener histogram, its label keys and (optionally) its buckets."""

    labels: Annotated[list[str], CrdHint(required=True)] = Field(default_factory=list)
    buckets: list[Number] = Field(default_factory=list)


class MetricsConfig(ApiModel):
    """Which listener metrics to expose, by metric name."""

    counters: dict[str, CounterMetric] = Field(default_factory=dict)
    gauges: dict[str, GaugeMetric] = Field(default_factory=dict)
    histograms: dict[str, HistogramMetric] = Field(default_factory=dict)


class LocalObjectReference(ApiModel):
    """``corev1.LocalObjectReference`` (an image pull Secret)."""

    name: str = ""  # no ``default: ""`` in the schema: see ConfigMapKeySelector.name
