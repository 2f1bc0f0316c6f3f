"""The values cases of the controller chart tests and the facts recorded from ARC's chart.

A case is a values file (what a platform team's values file for ARC's
``gha-runner-scale-set-controller`` chart may hold), rendered as release ``arc`` in namespace
``arc-systems`` (ARC's documented install), and held to what one generation of ARC's chart
renders for it:

- ``0.14.2``: ARC's release, facts in ``tests/data/arc-0.14.2/controller``; the cases are
  ``values/*.yaml``.
- ``0.15``: ARC's master at 2ee6b3b8 (2026-06-30), the base of 0.15.0: the 0.14.2 chart without
  ``flags.updateStrategy``. Facts in ``tests/data/arc-master-2ee6b3b8/controller``; the cases are
  the ``values/*.yaml`` that do not set that value and ``values-0.15/*.yaml``, which use what
  0.15.0 added after that commit (``ARC_0_15_ADDED``: ARC's chart at the snapshot ignores them,
  ours honours them; ``compare.DIFFERENCES`` says how).

Each generation's case ``arc-defaults`` is its ARC's own default values file, as data
(``default-values.yaml``). For each case, ``<data>/<case>.yaml`` holds what that ARC chart
rendered for it (``regenerate_arc_goldens.py`` writes these files; ARC's chart itself is not in
this repository), and ``<data>/values-keys.yaml`` lists every key of its values.yaml, the
commented-out documented ones included. A case's id is ``<generation>/<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "deploy" / "charts" / "scaleset-controller"
CRDS = REPO / "deploy" / "crds"
HERE = Path(__file__).resolve().parent
VALUES_DIR = HERE / "values"
ARC_DEFAULTS_CASE = "arc-defaults"
RELEASE = "arc"
NAMESPACE = "arc-systems"


@dataclass(frozen=True)
class Generation:
    """One generation of ARC's controller chart that our chart is held to."""

    name: str
    arc_data: Path
    values_dirs: tuple[Path, ...]
    source: str
    """What ARC's chart was rendered from (written into the goldens' header)."""
    removed: tuple[str, ...] = ()
    """Value keys of the earlier generation this one dropped: its cases never set them."""


ARC_0_14 = Generation(
    "0.14.2",
    REPO / "tests" / "data" / "arc-0.14.2" / "controller",
    (VALUES_DIR,),
    "actions-runner-controller's gha-runner-scale-set-controller chart 0.14.2",
)
ARC_0_15 = Generation(
    "0.15",
    REPO / "tests" / "data" / "arc-master-2ee6b3b8" / "controller",
    (VALUES_DIR, HERE / "values-0.15"),
    "actions-runner-controller's gha-runner-scale-set-controller chart at master 2ee6b3b8 "
    "(2026-06-30, the base of 0.15.0)",
    removed=("flags.updateStrategy",),
)
GENERATIONS = (ARC_0_14, ARC_0_15)
ARC_DATA = ARC_0_14.arc_data

ARC_0_15_ADDED = {
    "terminationGracePeriodSeconds": 35,
    "flags.autoscalingRunnerSetMaxConcurrentReconciles": 2,
    "flags.autoscalingListenerMaxConcurrentReconciles": 2,
    "flags.ephemeralRunnerSetMaxConcurrentReconciles": 2,
    "flags.ephemeralRunnerMaxConcurrentReconciles": 4,
}
"""Values ARC's chart gained between the master snapshot and 0.15.0, with ARC's defaults, as
GitHub's pull requests describe them (terminationGracePeriodSeconds, default 35, aligned with the
manager's graceful shutdown; per-controller max-concurrent-reconciles, defaults 2/2/2/4)."""


@dataclass(frozen=True)
class Case:
    name: str
    values: dict[str, Any]
    generation: Generation = ARC_0_14

    @property
    def id(self) -> str:
        return f"{self.generation.name}/{self.name}"


def _load(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text())
    return loaded if isinstance(loaded, dict) else {}


def arc_default_values(generation: Generation = ARC_0_14) -> dict[str, Any]:
    """ARC's values.yaml of the generation, parsed (what a team that copied it has)."""
    return _load(generation.arc_data / "default-values.yaml")


def _sets(values: dict[str, Any], dotted: str) -> bool:
    return lookup(values, dotted)[0]


def cases(generation: Generation | None = None) -> list[Case]:
    """Every case of the generation (default: of every generation): ARC's defaults, then the
    values files in name order."""
    if generation is None:
        return [c for g in GENERATIONS for c in cases(g)]
    found = [Case(ARC_DEFAULTS_CASE, arc_default_values(generation), generation)]
    paths = sorted(
        (path for folder in generation.values_dirs for path in folder.glob("*.yaml")),
        key=lambda path: path.stem,
    )
    for path in paths:
        values = _load(path)
        if not any(_sets(values, key) for key in generation.removed):
            found.append(Case(path.stem, values, generation))
    return found


def case_names() -> list[str]:
    """The id of every case of every generation."""
    return [c.id for c in cases()]


def case(case_id: str) -> Case:
    """The case ``<generation>/<name>`` (a bare name: the 0.14.2 case)."""
    generation_name, _, name = case_id.rpartition("/")
    generation = next(g for g in GENERATIONS if g.name == (generation_name or ARC_0_14.name))
    return next(c for c in cases(generation) if c.name == name)


def golden(case_id: str) -> dict[str, Any]:
    """``{"case", "release", "namespace", "values", "objects"}`` as ARC rendered the case."""
    found = case(case_id)
    return _load(found.generation.arc_data / f"{found.name}.yaml")


def arc_value_keys(generation: Generation = ARC_0_14) -> list[str]:
    """Every key of ARC's values.yaml (dotted paths), commented-out documented keys included."""
    loaded = yaml.safe_load((generation.arc_data / "values-keys.yaml").read_text())
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
