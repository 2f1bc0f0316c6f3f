"""The values cases of the controller chart tests and the facts recorded from ARC's chart.

A case is a values file under ``values/`` (what a platform team's values file for ARC's
``gha-runner-scale-set-controller`` chart may hold), rendered as release ``arc`` in namespace
``arc-systems`` (ARC's documented install). The case ``arc-defaults`` is ARC's own default values
file, as data (``ARC_DATA/default-values.yaml``). For each case, ``ARC_DATA/<case>.yaml`` holds
what ARC 0.14.2's chart rendered for it (``regenerate_arc_goldens.py`` writes these files; ARC's
chart itself is not in this repository), and ``ARC_DATA/values-keys.yaml`` lists every key of
ARC's values.yaml, the commented-out documented ones included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "deploy" / "charts" / "scaleset-controller"
CRDS = REPO / "deploy" / "crds"
VALUES_DIR = Path(__file__).resolve().parent / "values"
ARC_DATA = REPO / "tests" / "data" / "arc-0.14.2" / "controller"
ARC_DEFAULTS_CASE = "arc-defaults"
RELEASE = "arc"
NAMESPACE = "arc-systems"


@dataclass(frozen=True)
class Case:
    name: str
    values: dict[str, Any]


def _load(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text())
    return loaded if isinstance(loaded, dict) else {}


def arc_default_values() -> dict[str, Any]:
    """ARC 0.14.2's values.yaml, parsed (what a team that copied it has)."""
    return _load(ARC_DATA / "default-values.yaml")


def cases() -> list[Case]:
    """Every case: ARC's defaults, then the values files in name order."""
    found = [Case(ARC_DEFAULTS_CASE, arc_default_values())]
    for path in sorted(VALUES_DIR.glob("*.yaml")):
        found.append(Case(path.stem, _load(path)))
    return found


def case_names() -> list[str]:
    return [ARC_DEFAULTS_CASE, *sorted(path.stem for path in VALUES_DIR.glob("*.yaml"))]


def case(name: str) -> Case:
    return next(c for c in cases() if c.name == name)


def golden(name: str) -> dict[str, Any]:
    """``{"case", "release", "namespace", "values", "objects"}`` as ARC rendered ``name``."""
    return _load(ARC_DATA / f"{name}.yaml")


def arc_value_keys() -> list[str]:
    """Every key of ARC's values.yaml (dotted paths), commented-out documented keys included."""
    loaded = yaml.safe_load((ARC_DATA / "values-keys.yaml").read_text())
    return [str(key) for key in loaded["keys"]]


def lookup(values: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    """``(present, value)`` of ``a.b.c`` in nested ``values``."""
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def with_key(values: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``values`` with ``a.b.c`` set to ``value``."""
    copy: dict[str, Any] = yaml.safe_load(yaml.safe_dump(values))
    node = copy
    *parents, last = dotted.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[last] = value
    return copy
