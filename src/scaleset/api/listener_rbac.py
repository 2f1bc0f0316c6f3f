"""What the listener process may do in its scale set's namespace: one declared list, from which
the listener Role's rules are built (``listener_role_rules``), and against which a test checks
every request the listener's code makes (tests/integration/controllers/autoscalinglistener/
test_listener_rbac.py records them with ``scaleset.kube.AccessRecorder``). So the Role grants
exactly what the listener uses: nothing it lacks (a 403 would stop it), nothing unused.

The listener (``scaleset.listener``) reads and writes:

- ``ephemeralrunners`` ``get``, ``list``, ``watch`` and ``ephemeralrunners/status`` ``patch`` —
  JobStarted promotes a runner to Running under the resourceVersion it read; JobCompleted records
  ``jobCompletion`` (lifecycle.md L1, L2, L4). ``list``/``watch`` keep the listener's cache of the
  namespace's runners, whose resourceVersion is the first guess of that read (a stale one costs a
  409 and a ``get``), so a JobStarted is one request instead of two. ARC's listener only patches
  (and its Role also grants ``patch`` on the main resource, which nothing uses).
- its own ``ephemeralrunnersets`` object, by name: ``get`` (its stored session state, L7) and
  ``patch`` (replicas, patchID and that state in one merge patch).
- ``events`` ``create`` and ``patch`` — a Warning on its EphemeralRunnerSet for a poison message
  (L7/L8; ``patch`` bumps the count of a repeated Event).

The controller can only grant what it holds itself (the RBAC escalation check on Role create and
update, and the ``bind`` check on the RoleBinding): the controller's own ClusterRole (or its Role
in each runner namespace) must therefore cover every rule here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scaleset.api import keys

RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class ListenerAccess:
    """One kind of request the listener makes: API group, RBAC resource (``resource`` or
    ``resource/subresource``), verbs, and whether only its own EphemeralRunnerSet is touched."""

    group: str
    resource: str
    verbs: tuple[str, ...]
    own_runner_set_only: bool = False


LISTENER_ACCESSES: tuple[ListenerAccess, ...] = (
    ListenerAccess(keys.GROUP, "ephemeralrunners", ("get", "list", "watch")),
    ListenerAccess(keys.GROUP, "ephemeralrunners/status", ("patch",)),
    ListenerAccess(keys.GROUP, "ephemeralrunnersets", ("get", "patch"), own_runner_set_only=True),
    ListenerAccess("", "events", ("create", "patch")),
)
"""Everything the listener does against the Kubernetes API, all in the scale set's namespace."""


def listener_role_rules(runner_set_name: str) -> list[dict[str, Any]]:
    """The listener Role's ``rules``: one rule per declared access (verbs sorted), the
    EphemeralRunnerSet rule limited to ``runner_set_name``."""
    rules: list[dict[str, Any]] = []
    for access in LISTENER_ACCESSES:
        rule: dict[str, Any] = {
            "apiGroups": [access.group],
            "resources": [access.resource],
            "verbs": sorted(access.verbs),
        }
        if access.own_runner_set_only:
            rule["resourceNames"] = [runner_set_name]
        rules.append(rule)
    return rules


def granted_accesses(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """``(verb, group, resource)`` for every combination a list of Role rules grants (for tests
    comparing grants with recorded accesses)."""
    granted: set[tuple[str, str, str]] = set()
    for rule in rules:
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    granted.add((str(verb), str(group), str(resource)))
    return granted
