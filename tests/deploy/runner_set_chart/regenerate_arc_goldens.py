"""Re-render the ARC 0.14.2 goldens of the runner scale set chart tests.

ARC's chart is not part of this repository; what it renders for our test cases is, as data, in
``tests/data/arc-0.14.2/runner-set/``:

- ``<case>.yaml``: the objects ARC's ``gha-runner-scale-set`` chart renders for
  ``values/<case>.yaml`` (release ``arc-runner-set`` in ``arc-runners``);
- ``errors.yaml``: for each of ``cases.ERROR_CASES``, ARC's error message, or that it rendered;
- ``values-keys.yaml``: every key path of ARC's ``values.yaml``, including the keys it documents
  commented out (``# key: value`` lines; ``##`` lines are prose), lists and maps of examples
  counted as one value.

Usage, with ARC's charts unpacked from its release tag::

    git -C <ARC mirror> archive gha-runner-scale-set-0.14.2 charts | tar -x -C /tmp/arc
    .venv/bin/python -m tests.deploy.runner_set_chart.regenerate_arc_goldens --arc-charts /tmp/arc
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import helm_python
import yaml
from tests.deploy.runner_set_chart.cases import (
    ARC_ERRORS,
    ARC_VALUES_KEYS,
    ERROR_CASES,
    GOLDENS,
    render_cases,
)
from tests.support.helm import SOURCE

HEADER = (
    "# Rendered by ARC's gha-runner-scale-set chart 0.14.2 for "
    "tests/deploy/runner_set_chart/values/{case}.yaml\n"
    "# (release arc-runner-set, namespace arc-runners{kube}). Regenerate with\n"
    "# tests/deploy/runner_set_chart/regenerate_arc_goldens.py; do not edit.\n"
)

KEY_LINE = re.compile(r"^(?P<key>[a-z_][A-Za-z0-9_]*):(?:\s+(?P<value>\S.*))?$")


def chart_dir(arc_charts: Path) -> Path:
    for candidate in (
        arc_charts / "charts" / "gha-runner-scale-set",
        arc_charts / "gha-runner-scale-set",
    ):
        if (candidate / "Chart.yaml").is_file():
            return candidate
    raise SystemExit(f"no gha-runner-scale-set chart under {arc_charts}")


def _logical_line(raw: str) -> tuple[int, str] | None:
    """(indentation, text) of a line of values.yaml as YAML, comment markers removed: ``# key:``
    lines are keys ARC documents commented out; ``##`` lines, ``# #`` lines and blank lines are
    prose (None)."""
    stripped = raw.lstrip(" ")
    before = len(raw) - len(stripped)
    if not stripped.strip():
        return None
    if not stripped.startswith("#"):
        return before, stripped.rstrip()
    if stripped.startswith("##"):
        return None
    body = stripped[1:]
    if body.startswith(" "):
        body = body[1:]
    text = body.lstrip(" ")
    if not text or text.startswith("#"):
        return None
    return before + len(body) - len(text), text.rstrip()


def values_key_paths(values_text: str) -> list[str]:
    """Every leaf key path of a values file, commented-out keys included (module docstring)."""
    stack: list[tuple[int, str]] = []
    parents: set[str] = set()
    paths: set[str] = set()
    scalars: set[str] = set()
    list_owner_indent: int | None = None
    for raw in values_text.splitlines():
        line = _logical_line(raw)
        if line is None:
            continue
        indent, text = line
        if list_owner_indent is not None:
            if indent > list_owner_indent or (indent == list_owner_indent and text.startswith("-")):
                continue
            list_owner_indent = None
        if text.startswith("-"):
            if stack:
                list_owner_indent = stack[-1][0]
            continue
        match = KEY_LINE.match(text)
        if match is None:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([*(key for _, key in stack), match["key"]])
        if stack:
            parents.add(".".join(key for _, key in stack))
        paths.add(path)
        if match["value"] and match["value"][0] not in "|>":
            scalars.add(path)
        stack.append((indent, match["key"]))
    # a key documented both with a value and as a map (githubConfigSecret: a name, or the
    # credentials) is a leaf too
    return sorted((paths - parents) | scalars)


def dump_objects(objects: list[dict[str, Any]]) -> str:
    documents = []
    for obj in objects:
        clean = {key: value for key, value in obj.items() if key != SOURCE}
        documents.append(yaml.safe_dump(clean, sort_keys=True, default_flow_style=False))
    return "---\n".join(documents)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--arc-charts", type=Path, required=True, help="ARC's charts/ directory (or its parent)"
    )
    args = parser.parse_args(argv)
    arc = chart_dir(args.arc_charts)
    GOLDENS.mkdir(parents=True, exist_ok=True)
    for case in render_cases():
        objects = case.render(arc)
        kube = f", Kubernetes {case.kube_version}" if case.kube_version else ""
        text = HEADER.format(case=case.name, kube=kube) + dump_objects(objects)
        (GOLDENS / f"{case.name}.yaml").write_text(text)
        print(f"{case.name}: {len(objects)} objects")
    outcomes: dict[str, Any] = {}
    for error_case in ERROR_CASES:
        try:
            rendered = error_case.render(arc)
        except helm_python.HelmError as error:
            outcomes[error_case.name] = {"error": str(error)}
        else:
            outcomes[error_case.name] = {"rendered": sorted(obj["kind"] for obj in rendered)}
        print(f"{error_case.name}: {next(iter(outcomes[error_case.name]))}")
    ARC_ERRORS.write_text(
        "# ARC 0.14.2's outcome for each of tests/deploy/runner_set_chart/cases.py ERROR_CASES.\n"
        "# Regenerate with tests/deploy/runner_set_chart/regenerate_arc_goldens.py; do not edit.\n"
        + yaml.safe_dump(outcomes, sort_keys=True, width=1000)
    )
    keys = values_key_paths((arc / "values.yaml").read_text())
    ARC_VALUES_KEYS.write_text(
        "# Every key path of ARC 0.14.2's gha-runner-scale-set values.yaml, commented-out keys\n"
        "# included. Regenerate with tests/deploy/runner_set_chart/regenerate_arc_goldens.py.\n"
        + yaml.safe_dump(keys, sort_keys=False)
    )
    print(f"values-keys: {len(keys)} paths")
    return 0


if __name__ == "__main__":
    sys.exit(main())
