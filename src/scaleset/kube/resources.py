"""The kinds scaleset reads and writes: our four CRDs and the core kinds, as ``Kind`` descriptors.

A ``Kind`` names a resource (group, version, plural, scope, whether it has a ``/status``
subresource) and carries the lightkube resource class used to build request paths. Our CRDs are
lightkube generic resources (group ``actions.github.com``, version ``v1alpha1``); the core kinds
are lightkube's generated classes. Objects themselves travel as raw JSON (see ``objects``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lightkube.core import resource as lk_resource
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources import apiextensions_v1, coordination_v1, core_v1, rbac_authorization_v1

ACTIONS_GROUP = "actions.github.com"
ACTIONS_VERSION = "v1alpha1"


@dataclass(frozen=True, slots=True)
class Kind:
    """One resource type of the API server."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    has_status: bool
    resource: type[lk_resource.Resource] = field(compare=False, repr=False)
    status_resource: type[lk_resource.Resource] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def api_version(self) -> str:
        """``group/version`` (just ``version`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource_name(self) -> str:
        """``plural.group`` as RBAC and kubectl spell it (just ``plural`` for the core group)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def __str__(self) -> str:
        return self.kind


def _actions_kind(kind: str, plural: str) -> Kind:
    generic = create_namespaced_resource(ACTIONS_GROUP, ACTIONS_VERSION, kind, plural)
    return Kind(
        group=ACTIONS_GROUP,
        version=ACTIONS_VERSION,
        kind=kind,
        plural=plural,
        namespaced=True,
        has_status=True,
        resource=generic,
        status_resource=generic.Status,
    )


AUTOSCALING_RUNNER_SET = _actions_kind("AutoscalingRunnerSet", "autoscalingrunnersets")
EPHEMERAL_RUNNER_SET = _actions_kind("EphemeralRunnerSet", "ephemeralrunnersets")
EPHEMERAL_RUNNER = _actions_kind("EphemeralRunner", "ephemeralrunners")
AUTOSCALING_LISTENER = _actions_kind("AutoscalingListener", "autoscalinglisteners")

POD = Kind("", "v1", "Pod", "pods", True, True, core_v1.Pod, core_v1.PodStatus)
SECRET = Kind("", "v1", "Secret", "secrets", True, False, core_v1.Secret)
SERVICE_ACCOUNT = Kind(
    "", "v1", "ServiceAccount", "serviceaccounts", True, False, core_v1.ServiceAccount
)
CONFIG_MAP = Kind("", "v1", "ConfigMap", "configmaps", True, False, core_v1.ConfigMap)
EVENT = Kind("", "v1", "Event", "events", True, False, core_v1.Event)
NAMESPACE = Kind("", "v1", "Namespace", "namespaces", False, False, core_v1.Namespace)
ROLE = Kind(
    "rbac.authorization.k8s.io", "v1", "Role", "roles", True, False, rbac_authorization_v1.Role
)
ROLE_BINDING = Kind(
    "rbac.authorization.k8s.io",
    "v1",
    "RoleBinding",
    "rolebindings",
    True,
    False,
    rbac_authorization_v1.RoleBinding,
)
LEASE = Kind("coordination.k8s.io", "v1", "Lease", "leases", True, False, coordination_v1.Lease)
CUSTOM_RESOURCE_DEFINITION = Kind(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    False,
    False,
    apiextensions_v1.CustomResourceDefinition,
)

ACTIONS_KINDS: tuple[Kind, ...] = (
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    EPHEMERAL_RUNNER,
    AUTOSCALING_LISTENER,
)
CORE_KINDS: tuple[Kind, ...] = (
    POD,
    SECRET,
    SERVICE_ACCOUNT,
    CONFIG_MAP,
    EVENT,
    NAMESPACE,
    ROLE,
    ROLE_BINDING,
    LEASE,
    CUSTOM_RESOURCE_DEFINITION,
)
ALL_KINDS: tuple[Kind, ...] = ACTIONS_KINDS + CORE_KINDS


def kind_of(api_version: str, kind: str) -> Kind | None:
    """The known ``Kind`` for an object's ``apiVersion``/``kind``, if scaleset knows it."""
    for candidate in ALL_KINDS:
        if candidate.api_version == api_version and candidate.kind == kind:
            return candidate
    return None
