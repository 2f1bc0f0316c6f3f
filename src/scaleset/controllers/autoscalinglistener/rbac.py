"""What the AutoscalingListener controller itself must be allowed to do, as RBAC rules (for the
controller chart's ClusterRole, or its Roles in single-namespace mode).

Two parts:

- ``OWN_ACCESS``: the requests this controller makes — the listener (watch, finalizer, status,
  delete when its scale set is gone), the scale set (existence), the listener's pod, Secrets,
  ServiceAccount (controller namespace), Role and RoleBinding (scale set namespace; all of these
  are watched too, the Secrets in the controller namespace only), the GitHub
  config Secret, proxy credential Secrets and CA ConfigMap it reads (scale set namespace), and
  Events.
- ``LISTENER_ROLE_GRANTS``: what the listener's Role grants. Kubernetes lets a subject create or
  update a Role only with permissions it holds itself (the escalation check), and bind a Role
  only if it holds the Role's permissions (the ``bind`` check) — unless it has the ``escalate`` /
  ``bind`` verbs, which we do not ask for. So the controller must hold, in every scale set
  namespace, every rule of ``scaleset.api.listener_rbac`` (without the ``resourceNames``
  restriction, since it grants it for every EphemeralRunnerSet it serves): ``get``, ``list``
  and ``watch`` on ephemeralrunners, ``patch`` on ephemeralrunners/status, ``get`` and ``patch`` on
  ephemeralrunnersets, ``create`` and ``patch`` on events. ARC's chart covers the first three
  (full access to its kinds) but not events (ARC's listener Role has none).

``controller_rules()`` is both, merged per (group, resource).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from scaleset.api import keys
from scaleset.api.listener_rbac import LISTENER_ACCESSES, RBAC_GROUP

OWN_ACCESS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (keys.GROUP, "autoscalinglisteners", ("get", "list", "watch", "patch", "delete")),
    (keys.GROUP, "autoscalinglisteners/status", ("patch",)),
    (keys.GROUP, "autoscalingrunnersets", ("get", "list", "watch")),
    ("", "pods", ("get", "list", "watch", "create", "patch", "delete")),
    ("", "secrets", ("get", "list", "watch", "create", "patch", "delete")),
    ("", "serviceaccounts", ("get", "list", "watch", "create", "patch", "delete")),
    ("", "configmaps", ("get",)),
    (RBAC_GROUP, "roles", ("get", "list", "watch", "create", "patch", "delete")),
    (RBAC_GROUP, "rolebindings", ("get", "list", "watch", "create", "patch", "delete")),
    ("", "events", ("create", "patch")),
)
"""(API group, resource, verbs) of every request the controller itself makes."""

LISTENER_ROLE_GRANTS: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (access.group, access.resource, access.verbs) for access in LISTENER_ACCESSES
)
"""What the controller must hold to create and bind the listener Role (escalation check)."""


def controller_rules() -> list[dict[str, Any]]:
    """``OWN_ACCESS`` and ``LISTENER_ROLE_GRANTS`` as ClusterRole rules, one per resource."""
    verbs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for group, resource, granted in (*OWN_ACCESS, *LISTENER_ROLE_GRANTS):
        verbs[(group, resource)].update(granted)
    return [
        {"apiGroups": [group], "resources": [resource], "verbs": sorted(verbs[(group, resource)])}
        for group, resource in sorted(verbs)
    ]
