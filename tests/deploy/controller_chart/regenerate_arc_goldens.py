"""Re-render the facts the controller chart tests compare with, from ARC's own chart.

ARC's chart is not part of this repository; what it renders is (``tests/data/arc-0.14.2/
controller/`` and ``tests/data/arc-master-2ee6b3b8/controller/``, see ``cases.GENERATIONS``).
Given a checkout of ARC's ``charts`` directory at the generation's commit::

    mkdir -p /tmp/arc && git -C <arc repo> archive gha-runner-scale-set-0.14.2 charts \\
        | tar -x -C /tmp/arc
    .venv/bin/python -m tests.deploy.controller_chart.regenerate_arc_goldens \\
        --generation 0.14.2 --arc-charts /tmp/arc/charts

(``--generation 0.15`` with ARC's charts at 2ee6b3b8), it writes, with Helm's own engine
(``tests.support.helm``), into the generation's data directory:

- ``default-values.yaml``: ARC's values.yaml, parsed (the ``arc-defaults`` case's values);
- ``values-keys.yaml``: every key of ARC's values.yaml as a dotted path: the leaves of the parsed
  tree, plus the keys its comments document (``COMMENTED_KEYS``; the script fails when a comment
  names a key it does not know, so a newer values.yaml cannot add one unnoticed);
- ``<case>.yaml`` for every case of the generation (``cases.py``): the values and the objects
  ARC rendered.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from tests.deploy.controller_chart.cases import (
    GENERATIONS,
    NAMESPACE,
    RELEASE,
    Generation,
    arc_default_values,
    cases,
)
from tests.support.helm import SOURCE, render

ARC_CHART = "gha-runner-scale-set-controller"
COMMENTED_KEYS = (
    "metrics.controllerManagerAddr",
    "metrics.listenerAddr",
    "metrics.listenerEndpoint",
    "pprof.addr",
    "flags.watchSingleNamespace",
    "flags.excludeLabelPropagationPrefixes",
    "flags.rateLimiter.name",
    "flags.healthProbeBindAddress",
    "flags.k8sClientRateLimiterQPS",
    "flags.k8sClientRateLimiterBurst",
)
"""Keys ARC's values.yaml documents only in comments (commented out, with their meaning)."""

EXAMPLE_CONTENT = frozenset(
    {
        # the example content of free-form values (env, security contexts, resources), and
        # the "# PriorityClass: system-cluster-critical" example value and a "# ref: <url>"
        # line: not chart keys
        "name",
        "value",
        "valueFrom",
        "secretKeyRef",
        "key",
        "optional",
        "fsGroup",
        "capabilities",
        "drop",
        "readOnlyRootFilesystem",
        "runAsNonRoot",
        "runAsUser",
        "limits",
        "requests",
        "cpu",
        "memory",
        "PriorityClass",
        "ref",
    }
)
COMMENTED_KEY_LINE = re.compile(r"^\s*#+\s*(?:-\s+)?([A-Za-z][A-Za-z0-9]*):")

HEADER = (
    "# What {source} renders\n"
    "# (Helm's engine) for this case; written by\n"
    "# tests/deploy/controller_chart/regenerate_arc_goldens.py. Facts, not ARC's templates.\n"
)


def leaves(values: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of the leaves of a values tree (an empty map is a leaf)."""
    found: list[str] = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            found.extend(leaves(value, f"{path}."))
        else:
            found.append(path)
    return found


def value_keys(values_text: str) -> list[str]:
    """Every key of ARC's values.yaml: parsed leaves and the documented commented-out keys."""
    parsed = yaml.safe_load(values_text)
    commented_names = {part for key in COMMENTED_KEYS for part in key.split(".")}
    for line in values_text.splitlines():
        match = COMMENTED_KEY_LINE.match(line)
        if not match:
            continue
        name = match.group(1)
        if name not in commented_names and name not in EXAMPLE_CONTENT:
            raise SystemExit(f"values.yaml documents a key this script does not know: {line!r}")
    for key in COMMENTED_KEYS:
        if not re.search(rf"^\s*#+\s*{re.escape(key.split('.')[-1])}:", values_text, re.M):
            raise SystemExit(f"{key} is no longer documented in values.yaml")
    keys = [
        key
        for key in leaves(parsed)
        if not any(commented.startswith(f"{key}.") for commented in COMMENTED_KEYS)
    ]
    return sorted({*keys, *COMMENTED_KEYS})


def dump(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--arc-charts",
        type=Path,
        required=True,
        help="ARC's charts directory at the generation's commit",
    )
    parser.add_argument(
        "--generation",
        choices=[g.name for g in GENERATIONS],
        default=GENERATIONS[0].name,
        help="which generation of ARC's chart the checkout is (see cases.GENERATIONS)",
    )
    args = parser.parse_args(argv)
    generation: Generation = next(g for g in GENERATIONS if g.name == args.generation)
    data = generation.arc_data
    chart = args.arc_charts / ARC_CHART
    values_text = (chart / "values.yaml").read_text()
    data.mkdir(parents=True, exist_ok=True)
    (data / "default-values.yaml").write_text(
        f"# {generation.source}: values.yaml,\n"
        "# parsed (its default values as data); written by regenerate_arc_goldens.py.\n"
        + dump(yaml.safe_load(values_text))
    )
    (data / "values-keys.yaml").write_text(
        f"# Every key of {generation.source}: values.yaml, including\n"
        "# the keys its comments document; written by regenerate_arc_goldens.py.\n"
        + dump({"keys": value_keys(values_text)})
    )
    if arc_default_values(generation) != yaml.safe_load(values_text):
        raise SystemExit("default-values.yaml did not round-trip")
    for case in cases(generation):
        objects = render(chart, case.values, name=RELEASE, namespace=NAMESPACE)
        for obj in objects:
            obj[SOURCE] = obj[SOURCE].removeprefix(f"{ARC_CHART}/")
        golden = {
            "case": case.name,
            "release": RELEASE,
            "namespace": NAMESPACE,
            "values": case.values,
            "objects": objects,
        }
        (data / f"{case.name}.yaml").write_text(
            HEADER.format(source=generation.source) + dump(golden)
        )
        print(f"{case.name}: {len(objects)} objects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
