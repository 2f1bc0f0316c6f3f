"""The runner scale set chart renders, field for field, what ARC 0.14.2's gha-runner-scale-set
chart renders for the same values (golden output in tests/data/arc-0.14.2/runner-set/), except
the differences documented in ``parity.DIFFERENCES``; and it refuses the values ARC refuses, plus
those in ``parity.ERROR_DIFFERENCES``, with messages that say what to change.

The cases cover what ARC's own chart tests cover: secrets (token, app, existing), service
accounts per mode, dind / kubernetes / kubernetes-novolume with extra volumes, containers, init
containers and merged specs, the native dind sidecar and the pre-1.29 one, listener template and
metrics, proxy, TLS in every mode, labels, annotations and resourceMeta, runner group and scale
set name and labels, min/max, namespace override.
"""

from __future__ import annotations

import re

import pytest
import yaml
from helm_python import HelmError
from tests.deploy.runner_set_chart.cases import (
    ARC_ERRORS,
    ERROR_CASES,
    Case,
    ErrorCase,
    render_cases,
)
from tests.deploy.runner_set_chart.parity import (
    ERROR_DIFFERENCES,
    diff,
    expected_from_arc,
    golden_path,
    key_of,
    load_golden,
    normalised,
)

CASES = render_cases()


def test_every_case_has_a_golden_and_every_golden_a_case() -> None:
    goldens = {path.stem for path in golden_path("x").parent.glob("*.yaml")}
    goldens -= {"errors", "values-keys"}
    assert goldens == {case.name for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_renders_what_arc_renders(case: Case) -> None:
    ours = case.render()
    expected = expected_from_arc(load_golden(case.name), ours)
    actual = {key_of(obj): normalised(obj) for obj in ours}
    assert sorted(actual) == sorted(expected), "not the same objects"
    for key, obj in actual.items():
        assert obj == expected[key], f"{key[0]} {key[1]} differs:\n{diff(expected[key], obj)}"


ARC_OUTCOMES = yaml.safe_load(ARC_ERRORS.read_text())


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda case: case.name)
def test_refuses_with_a_clear_message(case: ErrorCase) -> None:
    with pytest.raises(HelmError) as raised:
        case.render()
    assert re.search(case.message, str(raised.value)), str(raised.value)
    arc = ARC_OUTCOMES[case.name]
    if "error" not in arc:
        assert case.name in ERROR_DIFFERENCES, (
            f"ARC renders {case.name} ({arc}) but ours refuses it: document why in "
            "parity.ERROR_DIFFERENCES"
        )
    else:
        assert case.name not in ERROR_DIFFERENCES, f"ARC refuses {case.name} too: not a difference"


def test_every_error_case_has_arcs_outcome() -> None:
    assert sorted(ARC_OUTCOMES) == sorted(case.name for case in ERROR_CASES)
    assert set(ERROR_DIFFERENCES) <= set(ARC_OUTCOMES)
