"""Which parts of a listener template (``spec.listenerTemplate``) an AutoscalingRunnerSet's author
may set: a pure screen from a template to the fields it refuses.

The listener pod runs in the controller's namespace, next to every other scale set's listener
and the config Secrets that hold their GitHub credentials. ARC merges the whole template into
the pod, so whoever may write an AutoscalingRunnerSet in any namespace may run any image,
command, extra container or volume there — other scale sets' Secrets, a hostPath, the host's
network. By default a listener template may only place and size the listener, give it
environment variables, and tighten its security:

=====================================  ==================================================
field                                  accepted
=====================================  ==================================================
``metadata.labels``, ``.annotations``  any
``spec.nodeSelector``, ``tolerations``,  any (where and how the pod is scheduled)
``affinity``,
``topologySpreadConstraints``,
``priorityClassName``, ``resources``
``spec.securityContext``               tightening only (below)
``spec.containers``                    one container, named ``listener``, with ``name``,
                                       ``resources`` (``limits``, ``requests``), ``env``
                                       (``value``, or ``valueFrom`` a ``fieldRef`` or
                                       ``resourceFieldRef``: never a Secret or ConfigMap)
                                       and ``securityContext`` (tightening only)
``spec.serviceAccountName``,           ignored, as ARC ignores them: the listener runs as
``serviceAccount``,                    its own ServiceAccount
``automountServiceAccountToken``
=====================================  ==================================================

"Tightening" means a value the Pod Security "restricted" profile allows and that cannot undo a
default the controller sets: ``runAsNonRoot: true``, ``readOnlyRootFilesystem: true``,
``allowPrivilegeEscalation: false``, ``privileged: false``, ``capabilities`` that only drop and
drop ``ALL`` (the list replaces the controller's), ``seccompProfile`` / ``appArmorProfile`` of
type ``RuntimeDefault`` or ``Localhost``, and ``runAsUser`` / ``runAsGroup`` other than 0. Any
other field or value is refused with its path (``spec.listenerTemplate.spec.volumes``,
``spec.listenerTemplate.spec.containers[0].image``).

A cluster admin who trusts every scale set's author can accept the whole template (the
controller's ``--allow-full-listener-template``): ARC's behaviour.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

LISTENER_CONTAINER = "listener"

METADATA_FIELDS = frozenset({"labels", "annotations"})
SCHEDULING_FIELDS = frozenset(
    {
        "nodeSelector",
        "tolerations",
        "affinity",
        "topologySpreadConstraints",
        "priorityClassName",
        "resources",
    }
)
IGNORED_FIELDS = frozenset({"serviceAccountName", "serviceAccount", "automountServiceAccountToken"})
"""Pod fields the merge drops whatever the template says (ARC's behaviour)."""
CONTAINER_FIELDS = frozenset({"name", "resources", "env", "securityContext"})
RESOURCE_FIELDS = frozenset({"limits", "requests"})
ENV_SOURCES = frozenset({"fieldRef", "resourceFieldRef"})
"""``env[].valueFrom`` sources that read the pod itself, never another object."""
PROFILE_TYPES = frozenset({"RuntimeDefault", "Localhost"})


@dataclass(frozen=True)
class RefusedField:
    """One field of the template that is not accepted: its path and why."""

    field: str
    message: str


def screen(template: Mapping[str, Any] | None, path: str) -> list[RefusedField]:
    """Every field of ``template`` (found at ``path``) a scale set's author may not set; empty
    when the template is accepted as it is."""
    if not template:
        return []
    return list(_template(template, path))


def _template(template: Mapping[str, Any], path: str) -> Iterator[RefusedField]:
    for key, value in template.items():
        where = f"{path}.{key}"
        if key == "metadata":
            yield from _only(value, where, METADATA_FIELDS, "labels and annotations")
        elif key == "spec":
            yield from _pod_spec(value, where)
        else:
            yield _refused(where)


def _pod_spec(spec: Any, path: str) -> Iterator[RefusedField]:
    if not isinstance(spec, Mapping):
        yield RefusedField(path, "must be a pod spec")
        return
    for key, value in spec.items():
        where = f"{path}.{key}"
        if key in SCHEDULING_FIELDS or key in IGNORED_FIELDS:
            continue
        if key == "securityContext":
            yield from _security_context(value, where, container=False)
        elif key == "containers":
            yield from _containers(value, where)
        else:
            yield _refused(where)


def _containers(containers: Any, path: str) -> Iterator[RefusedField]:
    if not isinstance(containers, list):
        yield RefusedField(path, "must be a list of containers")
        return
    for index, container in enumerate(containers):
        where = f"{path}[{index}]"
        if not isinstance(container, Mapping) or container.get("name") != LISTENER_CONTAINER:
            yield RefusedField(
                where,
                f"only the {LISTENER_CONTAINER!r} container may be set (no other container "
                "runs in the controller's namespace)",
            )
            continue
        for key, value in container.items():
            item = f"{where}.{key}"
            if key == "resources":
                yield from _only(value, item, RESOURCE_FIELDS, "limits and requests")
            elif key == "env":
                yield from _env(value, item)
            elif key == "securityContext":
                yield from _security_context(value, item, container=True)
            elif key not in CONTAINER_FIELDS:
                yield _refused(item)


def _env(env: Any, path: str) -> Iterator[RefusedField]:
    if not isinstance(env, list):
        yield RefusedField(path, "must be a list of environment variables")
        return
    for index, variable in enumerate(env):
        where = f"{path}[{index}]"
        if not isinstance(variable, Mapping):
            yield RefusedField(where, "must be an environment variable")
            continue
        for key, value in variable.items():
            if key in ("name", "value"):
                continue
            if key == "valueFrom" and isinstance(value, Mapping) and set(value) <= ENV_SOURCES:
                continue
            yield RefusedField(
                f"{where}.{key}",
                "only a value, or one read from the pod itself (fieldRef, resourceFieldRef), "
                "is accepted: a Secret or ConfigMap in the controller's namespace belongs to "
                "the controller or another scale set",
            )


def _security_context(context: Any, path: str, *, container: bool) -> Iterator[RefusedField]:
    if not isinstance(context, Mapping):
        yield RefusedField(path, "must be a security context")
        return
    for key, value in context.items():
        if not _tightens(key, value, container=container):
            yield RefusedField(
                f"{path}.{key}",
                "only settings that tighten the listener's security are accepted "
                "(runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: "
                "false, capabilities that drop ALL and add none, seccomp or AppArmor "
                "RuntimeDefault or Localhost, a non-root runAsUser/runAsGroup)",
            )


def _tightens(key: str, value: Any, *, container: bool) -> bool:
    """Whether ``key: value`` in a (pod or container) security context only tightens it."""
    if key == "runAsNonRoot":
        return value is True
    if key in ("runAsUser", "runAsGroup"):
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if key in ("seccompProfile", "appArmorProfile"):
        return (
            isinstance(value, Mapping)
            and value.get("type") in PROFILE_TYPES
            and set(value) <= {"type", "localhostProfile"}
        )
    if not container:
        return False
    if key == "readOnlyRootFilesystem":
        return value is True
    if key in ("allowPrivilegeEscalation", "privileged"):
        return value is False
    if key == "capabilities":
        # it replaces the controller's ``drop: [ALL]``: anything less would give some back
        drop = value.get("drop") if isinstance(value, Mapping) else None
        return (
            isinstance(value, Mapping)
            and set(value) <= {"drop", "add"}
            and not value.get("add")
            and isinstance(drop, list)
            and "ALL" in drop
        )
    return False


def _only(value: Any, path: str, allowed: frozenset[str], what: str) -> Iterator[RefusedField]:
    if not isinstance(value, Mapping):
        yield RefusedField(path, f"must be an object with {what}")
        return
    for key in value:
        if key not in allowed:
            yield RefusedField(f"{path}.{key}", f"only {what} are accepted here")


def _refused(path: str) -> RefusedField:
    return RefusedField(
        path,
        "not accepted in a listener template: the listener pod runs in the controller's "
        "namespace, next to other scale sets' credentials (a cluster admin may allow the "
        "full template: the controller's --allow-full-listener-template)",
    )
