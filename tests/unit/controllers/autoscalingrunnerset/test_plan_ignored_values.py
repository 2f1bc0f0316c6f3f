"""Values the runner-set chart ignored reach the user where Argo CD and Flux look: the chart
lists them in an annotation on the AutoscalingRunnerSet, and the plan turns it into the
``ValuesIgnored`` condition and a Warning Event (and clears it once the values are fixed)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from tests.unit.controllers.autoscalingrunnerset.builders import (
    condition,
    notes,
    plan_now,
    scale_set,
    status_write,
    steady,
)

from scaleset.api import keys
from scaleset.controllers.autoscalingrunnerset.plan import VALUES_IGNORED

UNKNOWN = {"key": "minRunner", "why": "neither this chart nor ARC's chart has such a value"}


def listing(*entries: dict[str, str]) -> dict[str, str]:
    return {keys.IGNORED_VALUES_ANNOTATION: json.dumps(list(entries))}


def test_ignored_values_are_a_condition_and_a_warning_event() -> None:
    actions = plan_now(steady(scale_set(annotations=listing(UNKNOWN))))
    cond = condition(actions, VALUES_IGNORED)
    assert (cond["status"], cond["reason"]) == ("True", "ChartValuesIgnored")
    assert "minRunner" in cond["message"]
    assert UNKNOWN["why"] in cond["message"]
    note = next(n for n in notes(actions) if n.reason == "ChartValuesIgnored")
    assert note.warning


def test_without_ignored_values_there_is_no_such_condition() -> None:
    actions = plan_now(steady(scale_set()))
    written = [a for a in actions if type(a).__name__ == "WriteStatus"]
    types = [c["type"] for a in written for c in a.changes.get("conditions", [])]
    assert VALUES_IGNORED not in types


def test_the_condition_clears_once_the_values_are_fixed() -> None:
    before = plan_now(steady(scale_set(annotations=listing(UNKNOWN))))
    status = {"conditions": status_write(before).changes["conditions"]}
    after = plan_now(steady(scale_set(status=status)))
    cond = condition(after, VALUES_IGNORED)
    assert (cond["status"], cond["reason"]) == ("False", "NoChartValuesIgnored")


def test_an_unreadable_list_is_reported_not_a_crash() -> None:
    ars = scale_set(annotations={keys.IGNORED_VALUES_ANNOTATION: "{not json"})
    cond = condition(plan_now(steady(ars)), VALUES_IGNORED)
    assert cond["status"] == "True"
    assert keys.IGNORED_VALUES_ANNOTATION in cond["message"]


@given(st.text(max_size=200))
def test_any_annotation_text_plans_without_raising(text: str) -> None:
    ars = scale_set(annotations={keys.IGNORED_VALUES_ANNOTATION: text})
    plan_now(steady(ars))
