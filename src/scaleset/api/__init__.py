"""The ``actions.github.com/v1alpha1`` API: typed, lenient models of the four kinds (ARC's
fields plus the status scaleset's lifecycle needs), validation, the runner-state classifier,
object naming, key strings, and CRD generation.

Modules: ``keys`` (label/annotation/finalizer strings), ``naming`` (object names ARC gives),
``config_url`` (githubConfigUrl scope), ``pods`` (raw pod template reads), ``runner_state``
(L0 classifier), ``validation`` (``validate``), ``crds`` (CRD generation), ``structural``
(offline schema checks).
"""

from scaleset.api._lenient import (
    ApiModel,
    CrdHint,
    InvalidValue,
    KubeTime,
    PodTemplate,
    format_kube_time,
    parse_kube_time,
    same_json,
    to_json,
)
from scaleset.api.autoscalinglistener import (
    AutoscalingListener,
    AutoscalingListenerSpec,
    AutoscalingListenerStatus,
)
from scaleset.api.autoscalingrunnerset import (
    AutoscalingRunnerSet,
    AutoscalingRunnerSetSpec,
    AutoscalingRunnerSetStatus,
    ScaleSetPhase,
)
from scaleset.api.ephemeralrunner import (
    TERMINAL_PHASES,
    EphemeralRunner,
    EphemeralRunnerSpec,
    EphemeralRunnerStatus,
    JobCompletion,
    RunnerPhase,
)
from scaleset.api.ephemeralrunnerset import (
    EphemeralRunnerSet,
    EphemeralRunnerSetSpec,
    EphemeralRunnerSetStatus,
    RunnerSetPhase,
)
from scaleset.api.meta import Condition, ObjectMeta, OwnerReference
from scaleset.api.resources import BY_KIND, KINDS, KindInfo, Resource, UnknownKind, load
from scaleset.api.runner_counts import RunnerCountFields
from scaleset.api.runner_state import (
    RunnerState,
    RunnerStateCounts,
    classify,
    classify_status,
    count_states,
)
from scaleset.api.shared import (
    AzureKeyVaultConfig,
    ConfigMapKeySelector,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    LocalObjectReference,
    MetricsConfig,
    ProxyConfig,
    ProxyServerConfig,
    ResourceMeta,
    TLSCertificateSource,
    TLSConfig,
    VaultConfig,
)
from scaleset.api.validation import (
    Policy,
    Problem,
    Refusal,
    condition_reason,
    refusals,
    validate,
    validate_under,
)

__all__ = [
    "BY_KIND",
    "KINDS",
    "TERMINAL_PHASES",
    "ApiModel",
    "AutoscalingListener",
    "AutoscalingListenerSpec",
    "AutoscalingListenerStatus",
    "AutoscalingRunnerSet",
    "AutoscalingRunnerSetSpec",
    "AutoscalingRunnerSetStatus",
    "AzureKeyVaultConfig",
    "Condition",
    "ConfigMapKeySelector",
    "CounterMetric",
    "CrdHint",
    "EphemeralRunner",
    "EphemeralRunnerSet",
    "EphemeralRunnerSetSpec",
    "EphemeralRunnerSetStatus",
    "EphemeralRunnerSpec",
    "EphemeralRunnerStatus",
    "GaugeMetric",
    "HistogramMetric",
    "InvalidValue",
    "JobCompletion",
    "KindInfo",
    "KubeTime",
    "LocalObjectReference",
    "MetricsConfig",
    "ObjectMeta",
    "OwnerReference",
    "PodTemplate",
    "Policy",
    "Problem",
    "ProxyConfig",
    "ProxyServerConfig",
    "Refusal",
    "Resource",
    "ResourceMeta",
    "RunnerCountFields",
    "RunnerPhase",
    "RunnerSetPhase",
    "RunnerState",
    "RunnerStateCounts",
    "ScaleSetPhase",
    "TLSCertificateSource",
    "TLSConfig",
    "UnknownKind",
    "VaultConfig",
    "classify",
    "classify_status",
    "condition_reason",
    "count_states",
    "format_kube_time",
    "load",
    "parse_kube_time",
    "refusals",
    "same_json",
    "to_json",
    "validate",
    "validate_under",
]
