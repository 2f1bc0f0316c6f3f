"""Read-only helpers over raw pod templates (``dict[str, Any]`` at the JSON boundary).

Every function accepts whatever JSON is there and never raises on a malformed template: it
returns ``None`` or an empty result, and ``scaleset.api.validation`` reports the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pod_spec(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``template.spec`` when it is an object."""
    spec = template.get("spec")
    return spec if isinstance(spec, Mapping) else None


def containers(spec: Mapping[str, Any], field: str = "containers") -> list[Mapping[str, Any]]:
    """The objects in ``spec.containers`` (or ``initContainers`` …); non-objects skipped."""
    items = spec.get(field)
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, Mapping)]


def find_container(spec: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The container called ``name`` in ``spec.containers``."""
    return next((c for c in containers(spec) if c.get("name") == name), None)


def restart_policy(spec: Mapping[str, Any]) -> object:
    """``spec.restartPolicy`` as written (``None`` when absent)."""
    return spec.get("restartPolicy")
