"""scaleset's own annotation keys (``scaleset.dev/``) are wire contracts between our processes
(the listener and the registration pass, the controller and the pods it made, the chart and the
controller): each is declared once, in ``scaleset.api.keys``, and every other place names it
from there. The simulated kubelet's ``scaleset.dev/sim-*`` directives are the test world's own
(the product never reads them) and stay with it in ``scaleset.embedded``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from scaleset.api import keys

REPOSITORY = Path(__file__).resolve().parents[3]
SOURCE = REPOSITORY / "src" / "scaleset"
TEMPLATES = REPOSITORY / "deploy" / "charts"
KEYS_MODULE = SOURCE / "api" / "keys.py"
TEST_WORLD = SOURCE / "embedded"
PREFIX = "scaleset.dev/"


def declared() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(keys).items()
        if isinstance(value, str) and value.startswith(PREFIX) and value != PREFIX
    }


def test_every_own_key_is_declared_in_api_keys() -> None:
    elsewhere = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path == KEYS_MODULE or TEST_WORLD in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith(PREFIX)
            ):
                elsewhere.append(f"{path.relative_to(REPOSITORY)}:{node.lineno} {node.value!r}")
    assert elsewhere == []


def test_the_keys_the_charts_write_are_declared_in_api_keys() -> None:
    known = set(declared().values())
    written = {
        match
        for path in TEMPLATES.rglob("templates/*")
        for match in re.findall(r"scaleset\.dev/[a-z0-9-]+", path.read_text())
    }
    assert written
    assert written <= known


def test_own_keys_are_distinct_annotation_keys() -> None:
    assert keys.OWN_KEY_PREFIX == PREFIX
    values = list(declared().values())
    assert len(values) == len(set(values)) >= 5
    for value in values:
        name = value.removeprefix(PREFIX)
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), value
