"""RBAC for impersonated requests (``Impersonate-User`` / ``Impersonate-Group`` headers).

The bearer token is an administrator's; a request that impersonates someone (tests act as a
ServiceAccount this way) is authorized as kube-apiserver's RBAC authorizer would: allowed when a
RoleBinding in the request's namespace binds a matching subject to a Role whose rules cover the
verb, API group, resource (``resource/subresource``) and name. ClusterRoles are not served, so
bindings to them grant nothing; discovery stays open to everyone, as ``system:discovery`` is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scaleset.embedded.apiserver._errors import ApiError
from scaleset.embedded.apiserver._store import Store

JsonObj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...]


def _covers(values: list[str] | None, wanted: str) -> bool:
    if not values:
        return False
    return "*" in values or wanted in values


def _resource_covers(rules: list[str] | None, resource: str, subresource: str) -> bool:
    if not rules:
        return False
    combined = f"{resource}/{subresource}" if subresource else resource
    for rule in rules:
        if rule in ("*", combined):
            return True
        if subresource and rule == f"{resource}/*":
            return True
        if subresource and rule == f"*/{subresource}":
            return True
    return False


def _rule_allows(
    rule: JsonObj, verb: str, group: str, resource: str, subresource: str, name: str
) -> bool:
    if not _covers(rule.get("verbs"), verb):
        return False
    if not _covers(rule.get("apiGroups"), group):
        return False
    if not _resource_covers(rule.get("resources"), resource, subresource):
        return False
    names = rule.get("resourceNames") or []
    return not names or (bool(name) and name in names)


def _subject_matches(subject: JsonObj, user: User) -> bool:
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        return user.name == f"{SA_PREFIX}{subject.get('namespace', '')}:{subject.get('name', '')}"
    if kind == "User":
        return user.name == subject.get("name")
    if kind == "Group":
        return subject.get("name") in user.groups
    return False


def allowed(
    store: Store,
    user: User,
    *,
    verb: str,
    group: str,
    resource: str,
    subresource: str,
    namespace: str,
    name: str,
) -> bool:
    if not namespace:
        return False  # cluster-wide grants need ClusterRoles, which are not served
    for binding in store.iter_namespace((RBAC, "rolebindings"), namespace):
        ref = binding.get("roleRef") or {}
        if ref.get("kind") != "Role":
            continue
        if not any(_subject_matches(s, user) for s in binding.get("subjects") or []):
            continue
        role = store.get((RBAC, "roles"), (namespace, str(ref.get("name", ""))))
        if role is None:
            continue
        for rule in role.get("rules") or []:
            if isinstance(rule, dict) and _rule_allows(
                rule, verb, group, resource, subresource, name
            ):
                return True
    return False


def forbidden(
    user: User,
    *,
    verb: str,
    group: str,
    resource: str,
    subresource: str,
    namespace: str,
    name: str,
) -> ApiError:
    """The 403 the RBAC authorizer's denial becomes."""
    combined = f"{resource}/{subresource}" if subresource else resource
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    subject = f"{json.dumps(name)} " if name else ""
    qualified = f"{resource}.{group}" if group else resource
    details: JsonObj = {"kind": resource}
    if name:
        details = {"name": name, **details}
    if group:
        details["group"] = group
    return ApiError(
        403,
        "Forbidden",
        f"{qualified} {subject}is forbidden: User {json.dumps(user.name)} cannot {verb} resource "
        f"{json.dumps(combined)} in API group {json.dumps(group)}{where}",
        details,
    )
