"""Fuzz target 5: Helm values, through both charts under deploy/charts, rendered by Helm's own
engine (``tests.support.helm``, helm-python-sdk).

Values files a platform team writes — mutations of the charts' own defaults and of the values
files the chart tests use (wrong types, nulls, unknown keys, lists where maps belong, numbers as
strings, huge and tricky strings) — either render to well-formed Kubernetes objects (every YAML
document parses and names an apiVersion, a kind and a metadata.name) or are refused with
Helm's typed error for bad values (``HelmValuesError``: the values schema) or for a template that
refused them (``HelmRenderError``), carrying a message. Never a Go panic, another exception, a
document that is not YAML, or the GitHub token in the error text.

The runner set chart's refusals must all be clear (a schema error naming the key path, or a
template's ``fail`` sentence): its values.schema.json checks the types its templates read. The
controller chart may still answer a value of a type no template expects with Go's template
error, which names the template, line and expression.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from tests.fuzz.strategies import fuzz_settings, mutated
from tests.plugins.secret_guard import register_secret
from tests.support.helm import SOURCE, render

REPO = Path(__file__).resolve().parents[2]
CONTROLLER_CHART = REPO / "deploy" / "charts" / "scaleset-controller"
RUNNER_SET_CHART = REPO / "deploy" / "charts" / "scaleset-runner-set"
RUNNER_SET_VALUES = REPO / "tests" / "deploy" / "runner_set_chart" / "values"
CONTROLLER_VALUES = REPO / "tests" / "deploy" / "controller_chart" / "values"
TOKEN = register_secret("ghp_fuzzHelmValues0123456789abcdefXYZ")
EXAMPLES = 150  # per test: a render takes ~10 ms

REFUSED = (helm_python.HelmValuesError, helm_python.HelmRenderError)
CLEAR_REFUSALS = (
    "execution error at",  # a template's `fail`: our sentence follows
    "values don't meet the specifications of the schema",  # values.schema.json, per field
    "invalid values JSON",  # the SDK's own parse of a number Go cannot hold
)


def _values_files(folder: Path, names: tuple[str, ...]) -> list[dict[str, Any]]:
    loaded = [yaml.safe_load((folder / f"{name}.yaml").read_text()) or {} for name in names]
    for values in loaded:
        secret = values.get("githubConfigSecret")
        if isinstance(secret, dict) and "github_token" in secret:
            secret["github_token"] = TOKEN
    return loaded


with helm_python.Chart.load(CONTROLLER_CHART) as _chart:
    CONTROLLER_DEFAULTS: dict[str, Any] = _chart.values
with helm_python.Chart.load(RUNNER_SET_CHART) as _chart:
    RUNNER_SET_DEFAULTS: dict[str, Any] = _chart.values

CONTROLLER_STARTS = [
    CONTROLLER_DEFAULTS,
    *_values_files(CONTROLLER_VALUES, ("flags", "fullname")),
]
RUNNER_SET_STARTS = [
    RUNNER_SET_DEFAULTS,
    *_values_files(RUNNER_SET_VALUES, ("default", "kubernetes", "dind-merge-spec")),
]


def _check(chart: Path, values: dict[str, Any], *, go_errors_allowed: bool) -> None:
    refusal = ""
    try:
        objects = render(chart, values, name="arc", namespace="arc-runners")
    except REFUSED as error:
        event(f"refused: {type(error).__name__}")
        refusal = str(error).strip() or "(no message)"
        objects = []
    if refusal:
        assert refusal != "(no message)", "a refusal without a message"
        assert TOKEN not in refusal
        # Our templates refuse through `fail` with a sentence naming the value (Helm prints it
        # as "execution error at (...): <sentence>"), values.schema.json with the key path of
        # each wrong-typed value. Where a chart has no schema for a value of a type no template
        # expects (a map set to null, a number where a string goes), Go's template error names
        # the template, the line and the expression (`at <.Values.flags...>`).
        clear = refusal.startswith(CLEAR_REFUSALS)
        event("refusal: our sentence" if clear else "refusal: Go template error")
        if clear:
            return
        assert go_errors_allowed, f"a Go template error, not a clear refusal: {refusal[:600]}"
        assert "executing" in refusal, refusal[:600]
        assert " at <" in refusal, refusal[:600]
        return
    event("rendered")
    for obj in objects:
        where = obj.pop(SOURCE)
        assert obj.get("apiVersion"), where
        assert obj.get("kind"), where
        metadata = obj.get("metadata")
        assert isinstance(metadata, dict), where
        assert metadata.get("name"), where


@pytest.mark.parametrize("start", range(len(CONTROLLER_STARTS)))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_controller_chart_values_render_or_are_refused_clearly(start: int, data: Any) -> None:
    values = data.draw(mutated(CONTROLLER_STARTS[start], max_mutations=3))
    _check(CONTROLLER_CHART, values, go_errors_allowed=True)


@pytest.mark.parametrize("start", range(len(RUNNER_SET_STARTS)))
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_runner_set_chart_values_render_or_are_refused_clearly(start: int, data: Any) -> None:
    values = data.draw(mutated(RUNNER_SET_STARTS[start], max_mutations=3))
    _check(RUNNER_SET_CHART, values, go_errors_allowed=False)
