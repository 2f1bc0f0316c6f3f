"""OpenAPI v3 schemas of the built-in kinds, for ``kubectl explain`` against the embedded server.

The schemas live in ``_openapi_builtin.json``: a subset of kube-apiserver v1.20.2's own API
definitions (the version the embedded server reports), with Kubernetes' own descriptions, turned
into OpenAPI v3 form (references point at ``#/components/schemas/...``; a reference with a
description beside it is wrapped in ``allOf``, as kube-apiserver's v3 documents do).

Covered with every field (and the description of each field):

* the served kinds — core/v1 Namespace, Pod, Secret, ConfigMap, ServiceAccount, Event;
  events.k8s.io/v1 Event; rbac.authorization.k8s.io/v1 Role, RoleBinding;
  coordination.k8s.io/v1 Lease; apiextensions.k8s.io/v1 CustomResourceDefinition;
* ObjectMeta, ListMeta, OwnerReference, ManagedFieldsEntry;
* what a runner pod template uses: PodSpec, PodStatus, PodCondition, PodIP, Container,
  ContainerPort, EnvVar, EnvVarSource, EnvFromSource, ConfigMapEnvSource, SecretEnvSource,
  ObjectFieldSelector, ResourceFieldSelector, SecretKeySelector, ConfigMapKeySelector,
  VolumeMount, Volume, SecretVolumeSource, ConfigMapVolumeSource, EmptyDirVolumeSource,
  ProjectedVolumeSource, VolumeProjection, KeyToPath, HostPathVolumeSource,
  PersistentVolumeClaimVolumeSource, ResourceRequirements, SecurityContext,
  PodSecurityContext, Capabilities, ContainerStatus, ContainerState(Waiting|Running|Terminated),
  Toleration, LocalObjectReference, ObjectReference, Probe, ExecAction, HTTPGetAction,
  TCPSocketAction, Lifecycle, Handler;
* the namespace, event, RBAC, lease and CRD sub-types: NamespaceSpec, NamespaceStatus,
  NamespaceCondition, EventSource, EventSeries (both groups), PolicyRule, RoleRef, Subject,
  LeaseSpec, CustomResourceDefinition{Spec,Names,Version,Status,Condition},
  CustomResourceValidation, CustomResourceSubresources, CustomResourceSubresourceScale,
  CustomResourceColumnDefinition, CustomResourceConversion, WebhookConversion,
  WebhookClientConfig, ServiceReference.

Every other type those reference (Affinity, the cloud volume sources, EphemeralContainer,
TopologySpreadConstraint, JSONSchemaProps, Quantity, Time, …) carries its description and type
but not its fields: ``kubectl explain pods.spec.affinity`` describes the field,
``kubectl explain pods.spec.affinity.nodeAffinity`` reports that the field does not exist.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

JsonObj = dict[str, Any]

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
REF_PREFIX = "#/components/schemas/"


@functools.cache
def schemas() -> dict[str, JsonObj]:
    """Every built-in schema by definition name (shared: callers must not mutate)."""
    text = resources.files(__package__).joinpath("_openapi_builtin.json").read_text("utf-8")
    loaded: dict[str, JsonObj] = json.loads(text)["schemas"]
    return loaded


@functools.cache
def _by_gvk() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in schemas().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            index[(gvk["group"], gvk["version"], gvk["kind"])] = name
    return index


def definition_for(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind, or None when it has no schema here."""
    return _by_gvk().get((group, version, kind))


def type_meta_field(name: str) -> JsonObj:
    """The standard ``apiVersion``, ``kind`` or ``metadata`` property, as on every kind."""
    field: JsonObj = schemas()["io.k8s.api.core.v1.Pod"]["properties"][name]
    return copy.deepcopy(field)


def references(node: object) -> set[str]:
    """The definition names a schema refers to (anywhere inside it)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(REF_PREFIX):
                found.add(ref.removeprefix(REF_PREFIX))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def closure(names: Iterable[str]) -> dict[str, JsonObj]:
    """The named built-in schemas and every built-in schema they reach (shared, read-only)."""
    return dict(_closure(tuple(sorted(set(names)))))


@functools.cache
def _closure(names: tuple[str, ...]) -> tuple[tuple[str, JsonObj], ...]:
    known = schemas()
    seen: dict[str, JsonObj] = {}
    pending = [n for n in names if n in known]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen[name] = known[name]
        pending.extend(n for n in references(known[name]) if n in known and n not in seen)
    return tuple(sorted(seen.items()))
