"""``helm lint --strict`` finds nothing in the runner scale set chart, for every parity case."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.deploy.runner_set_chart.cases import CHART, Case, render_cases
from tests.support.helm import lint


@pytest.mark.parametrize("case", render_cases(), ids=lambda case: case.name)
def test_lint_strict_is_clean(case: Case) -> None:
    assert lint(CHART, case.values) == []


def test_lint_reports_a_broken_copy_of_the_chart(tmp_path: Path) -> None:
    """The check can fail: a copy of the chart whose manager Role is not valid YAML is reported
    (Helm's lint counts a template's ``fail`` as information only, so values cannot show it)."""
    copy = tmp_path / CHART.name
    shutil.copytree(CHART, copy)
    role = copy / "templates" / "manager_role.yaml"
    role.write_text(role.read_text() + "\nrules: [\n")
    assert lint(copy, render_cases()[0].values) != []
