"""No value of ARC's gha-runner-scale-set chart is silently ignored, and every value of ours is
documented.

- Every key path of ARC 0.14.2's values.yaml (commented-out keys included, recorded in
  tests/data/arc-0.14.2/runner-set/values-keys.yaml) is either set in a parity case — where our
  output equals ARC's (test_arc_parity.py) — and taking it out of that case changes our output;
  or it is in ``IGNORED``, changes nothing (as in ARC's chart), and NOTES.txt warns when it is set.
- A top-level key neither chart knows is warned about in NOTES.txt.
- Every key of our values.yaml has a ``# --`` description (helm-docs style; docs/configuration.md
  is generated from them), and every top-level key of ARC's values is one of ours.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import yaml
from helm_python import HelmError
from tests.deploy.runner_set_chart.cases import (
    ARC_VALUES_KEYS,
    BASE,
    CHART,
    Case,
    notes,
    render_cases,
)
from tests.deploy.runner_set_chart.parity import VALUES_HASH, normalised

from scaleset.api import keys

ARC_KEYS: list[str] = yaml.safe_load(ARC_VALUES_KEYS.read_text())
CASES = render_cases()

IGNORED: dict[str, str] = {
    "keyVault.azure_key_vault": (
        "ARC's values.yaml documents keyVault.azure_key_vault.{url,client_id,tenant_id,"
        "certificate_path,proxy}, but ARC's chart reads keyVault.azureKeyVault and keyVault.proxy:"
        " these keys change nothing in ARC's output either. NOTES.txt says where they belong."
    ),
}
"""ARC value paths (prefixes) that change nothing, with the reason; NOTES.txt warns about each."""

WILDCARD = "key"
"""ARC documents free-form maps (labels, annotations) with a ``key: value`` example."""


def _find(values: Any, path: str) -> bool:
    node = values
    for part in path.split("."):
        if part == WILDCARD and isinstance(node, dict):
            return bool(node)
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _without(values: dict[str, Any], path: str) -> dict[str, Any]:
    result = copy.deepcopy(values)
    parts = path.split(".")
    if parts[-1] == WILDCARD:
        parts = parts[:-1]
    node = result
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]
    return result


def _output(case: Case, values: dict[str, Any]) -> Any:
    """The rendered objects, without the values hash (any change of the values changes it, so it
    would hide a value that changes nothing else), or the error."""
    try:
        objects = [normalised(obj) for obj in case.render(values=values)]
    except HelmError as error:
        return f"refused: {error}"
    for obj in objects:
        obj["metadata"].get("annotations", {}).pop(VALUES_HASH, None)
        obj["metadata"].get("annotations", {}).pop(keys.IGNORED_VALUES_ANNOTATION, None)
    return objects


def ignored_on_the_scale_set(values: dict[str, Any]) -> list[str]:
    """The keys the AutoscalingRunnerSet's annotation says the chart ignored."""
    scale_set = next(o for o in Case("x", values).render() if o["kind"] == "AutoscalingRunnerSet")
    listed = scale_set["metadata"].get("annotations", {}).get(keys.IGNORED_VALUES_ANNOTATION)
    return [entry["key"] for entry in json.loads(listed)] if listed else []


def _ignored(path: str) -> str | None:
    return next((prefix for prefix in IGNORED if path.startswith(prefix + ".")), None)


@pytest.mark.parametrize("path", [p for p in ARC_KEYS if _ignored(p) is None])
def test_an_arc_value_changes_our_output(path: str) -> None:
    cases = [case for case in CASES if _find(case.values, path)]
    assert cases, f"no parity case sets {path}: add one to values/ (and regenerate the goldens)"
    changed = [
        case.name
        for case in cases
        if _output(case, case.values) != _output(case, _without(case.values, path))
    ]
    assert changed, f"{path} is set in {[c.name for c in cases]} but taking it out changes nothing"


@pytest.mark.parametrize("path", [p for p in ARC_KEYS if _ignored(p) is not None])
def test_an_ignored_arc_value_changes_nothing_and_is_warned_about(path: str) -> None:
    values = copy.deepcopy(BASE)
    node = values
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = "set-by-test"
    case = Case("ignored", BASE)
    assert _output(case, values) == _output(case, BASE)
    prefix = _ignored(path)
    assert prefix is not None
    assert re.search(rf"WARNING.*\n(.*\n)*\s+- {re.escape(prefix)} is ignored", notes(values))
    assert prefix in ignored_on_the_scale_set(values)


def test_notes_warn_about_an_unknown_value_and_stay_quiet_without_one() -> None:
    assert "WARNING" not in notes(BASE)
    warned = notes({**BASE, "minRunner": 2})
    assert "- minRunner is ignored: neither this chart nor ARC's" in warned


def test_ignored_values_are_named_on_the_scale_set_for_its_controller() -> None:
    """Argo CD and Flux never show NOTES: the AutoscalingRunnerSet carries the ignored keys in
    an annotation, which its controller turns into a condition and a Warning Event."""
    assert ignored_on_the_scale_set(BASE) == []
    assert ignored_on_the_scale_set({**BASE, "minRunner": 2, "maxRunner": 5}) == [
        "maxRunner",
        "minRunner",
    ]


def test_notes_warn_that_key_vaults_are_not_read() -> None:
    text = notes({**BASE, "keyVault": {"type": "azure_key_vault"}})
    assert "scaleset's controller does not read key vaults" in text
    assert "VaultNotSupported" in text


def test_ignored_prefixes_are_arc_values() -> None:
    for prefix in IGNORED:
        assert any(path.startswith(prefix + ".") for path in ARC_KEYS), prefix


KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*):")


def _undocumented_keys(text: str) -> list[str]:
    """Keys of a values.yaml without a ``# --`` comment block right above them (keys inside
    ``template``, whose whole value is the described default, excepted)."""
    missing: list[str] = []
    comment: list[str] = []
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped)
            continue
        match = KEY.match(line)
        if match is None:
            if not stripped:
                comment = []
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([*(key for _, key in stack), match["key"]])
        stack.append((indent, match["key"]))
        described = any(entry.startswith("# --") for entry in comment)
        if not described and not path.startswith("template."):
            missing.append(path)
        comment = []
    return missing


def test_every_value_of_ours_is_documented() -> None:
    assert _undocumented_keys((CHART / "values.yaml").read_text()) == []


def test_the_documentation_check_finds_an_undocumented_key() -> None:
    text = "# -- described\na: 1\n\nb: 2\n# -- nested\nc:\n  d: 3\n"
    assert _undocumented_keys(text) == ["b", "c.d"]


def test_every_top_level_arc_value_is_one_of_ours() -> None:
    ours = set(yaml.safe_load((CHART / "values.yaml").read_text()))
    assert {path.split(".")[0] for path in ARC_KEYS} <= ours
