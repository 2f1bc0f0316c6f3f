"""What a component did against the embedded API server, and whether RBAC rules cover it.

- ``read_access_log(kubeconfig)``: the embedded server's access log (``GET /_scaleset/access``),
  each distinct request with who sent it (User-Agent, impersonated user).
- ``Grant``: a Role's or ClusterRole's rules where they apply — one namespace (a RoleBinding) or
  every namespace and the cluster scope (a ClusterRoleBinding) — and ``bound_grants`` finds
  those bound to one ServiceAccount among rendered or served RBAC objects.
- ``allowed(grants, access)`` decides as kube-apiserver's RBAC authorizer does (verbs, API
  groups, ``resource/subresource``, ``resourceNames``, ``*``); ``unused_grants`` lists each
  (scope, verb, group, resource) a grant holds that no recorded access needed.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import yaml

from scaleset.embedded.apiserver._access import AccessEntry, entries_from_document

RBAC_GROUP = "rbac.authorization.k8s.io"
CLUSTER = "*cluster*"
"""``Grant.namespace`` of a ClusterRole bound cluster-wide: every namespace, the cluster scope."""


async def read_access_log(kubeconfig: Path) -> dict[AccessEntry, int]:
    """The access log of the embedded server this kubeconfig points at."""
    document = yaml.safe_load(await asyncio.to_thread(kubeconfig.read_text))
    cluster = document["clusters"][0]["cluster"]
    server = str(cluster["server"])
    verify: ssl.SSLContext | bool = True
    ca = cluster.get("certificate-authority-data")
    if ca:
        verify = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
    token = document["users"][0]["user"]["token"]
    async with httpx2.AsyncClient(
        base_url=server, verify=verify, headers={"Authorization": f"Bearer {token}"}
    ) as http:
        answer = await http.get("/_scaleset/access")
        answer.raise_for_status()
        return entries_from_document(answer.json())


@dataclass(frozen=True)
class Grant:
    """Rules and where they apply: ``namespace`` or ``CLUSTER``."""

    source: str
    namespace: str
    rules: tuple[dict[str, Any], ...]

    def covers_scope(self, namespace: str) -> bool:
        return self.namespace == CLUSTER or self.namespace == namespace


def _subject_is(subject: dict[str, Any], namespace: str, name: str) -> bool:
    return (
        subject.get("kind") == "ServiceAccount"
        and subject.get("name") == name
        and subject.get("namespace") == namespace
    )


def bound_grants(
    objects: Iterable[dict[str, Any]], account_namespace: str, account: str
) -> list[Grant]:
    """The grants of ``account_namespace/account`` among RBAC objects (Roles, ClusterRoles and
    their bindings; other kinds are ignored). A binding to a role that is not among the objects
    grants nothing, as on a cluster."""
    documents = [o for o in objects if isinstance(o, dict)]
    roles: dict[tuple[str, str, str], dict[str, Any]] = {}
    for obj in documents:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        if kind == "Role":
            roles[("Role", str(meta.get("namespace", "")), str(meta.get("name", "")))] = obj
        elif kind == "ClusterRole":
            roles[("ClusterRole", "", str(meta.get("name", "")))] = obj
    grants: list[Grant] = []
    for obj in documents:
        kind = obj.get("kind")
        if kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(_subject_is(s, account_namespace, account) for s in obj.get("subjects") or []):
            continue
        meta = obj.get("metadata") or {}
        ref = obj.get("roleRef") or {}
        binding_namespace = str(meta.get("namespace", "")) if kind == "RoleBinding" else ""
        role_key = (
            str(ref.get("kind", "")),
            binding_namespace if ref.get("kind") == "Role" else "",
            str(ref.get("name", "")),
        )
        role = roles.get(role_key)
        if role is None:
            continue
        scope = CLUSTER if kind == "ClusterRoleBinding" else binding_namespace
        source = f"{role_key[0]} {role_key[2]} (by {kind} {meta.get('name', '')})"
        grants.append(Grant(source, scope, tuple(role.get("rules") or [])))
    return grants


def _has(values: Sequence[str] | None, wanted: str) -> bool:
    return bool(values) and ("*" in (values or []) or wanted in (values or []))


def _resource_matches(resources: Sequence[str] | None, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for granted in resources or []:
        if granted in ("*", combined):
            return True
        if subresource and granted in (f"{resource}/*", f"*/{subresource}"):
            return True
    return False


def rule_allows(rule: dict[str, Any], access: AccessEntry) -> bool:
    """One rule against one request, as the RBAC authorizer matches them."""
    if not _has(rule.get("verbs"), access.verb) or not _has(rule.get("apiGroups"), access.group):
        return False
    if not _resource_matches(rule.get("resources"), access.resource, access.subresource):
        return False
    names = rule.get("resourceNames") or []
    return not names or (bool(access.name) and access.name in names)


def allowed(grants: Iterable[Grant], access: AccessEntry) -> bool:
    """A namespaced Role covers requests in its namespace only; a cluster-wide request (an
    all-namespaces list, a cluster-scoped resource) needs a ClusterRoleBinding."""
    return any(
        grant.covers_scope(access.namespace) and rule_allows(rule, access)
        for grant in grants
        for rule in grant.rules
    )


@dataclass(frozen=True, order=True)
class Permission:
    """One verb on one resource as a grant holds it: the unit of ``unused_grants``."""

    scope: str
    verb: str
    group: str
    resource: str
    source: str

    def __str__(self) -> str:
        group = self.group or "core"
        return f"{self.verb} {group}/{self.resource} in {self.scope} ({self.source})"


def unused_grants(grants: Iterable[Grant], accesses: Iterable[AccessEntry]) -> list[Permission]:
    """Every (verb, group, resource) of every rule that no access in its scope used. A wildcard
    (``*``) is never expanded: it is reported as held and unused unless it literally matched."""
    used = list(accesses)
    unused: list[Permission] = []
    for grant in grants:
        for rule in grant.rules:
            names = tuple(rule.get("resourceNames") or ())
            for verb in rule.get("verbs") or []:
                for group in rule.get("apiGroups") or []:
                    for resource in rule.get("resources") or []:
                        resource_name, _, subresource = str(resource).partition("/")
                        single = {
                            "verbs": [verb],
                            "apiGroups": [group],
                            "resources": [resource],
                            "resourceNames": list(names),
                        }
                        hit = any(
                            grant.covers_scope(a.namespace)
                            and a.resource == resource_name
                            and a.subresource == subresource
                            and rule_allows(single, a)
                            for a in used
                        )
                        if not hit:
                            unused.append(
                                Permission(grant.namespace, verb, group, resource, grant.source)
                            )
    return sorted(unused)


def describe(access: AccessEntry) -> str:
    """``verb group/resource[/sub] in <namespace|cluster>``, for failure messages and reports."""
    group = access.group or "core"
    where = access.namespace or "(cluster / all namespaces)"
    return f"{access.verb} {group}/{access.rbac_resource} in {where}"
