"""For every values case, our chart renders what ARC 0.14.2's chart renders, field for field,
except the differences ``compare.DIFFERENCES`` documents (each with its reason).

ARC's output is the golden file of the case (``tests/data/arc-0.14.2/controller``); the golden
must have been rendered from the case's current values. Every documented difference must show up
in some case, so the table cannot keep rows for differences that no longer exist.
"""

from __future__ import annotations

import pytest
from tests.deploy.controller_chart.cases import case, case_names, golden
from tests.deploy.controller_chart.compare import (
    DIFFERENCES,
    Context,
    Diff,
    differences,
    unexplained,
)
from tests.deploy.controller_chart.rendering import chart_meta, merged_values, render_ours


def _context(values: dict[str, object]) -> Context:
    meta = chart_meta()
    return Context(merged_values(dict(values)), str(meta["version"]), str(meta["appVersion"]))


def case_diffs(name: str) -> tuple[list[Diff], Context]:
    values = case(name).values
    recorded = golden(name)
    assert recorded["values"] == values, (
        f"the golden of {name} was rendered from other values: run regenerate_arc_goldens.py"
    )
    return differences(name, recorded["objects"], render_ours(values)), _context(values)


@pytest.mark.parametrize("name", case_names())
def test_renders_what_arc_renders_except_documented_differences(name: str) -> None:
    diffs, context = case_diffs(name)
    left, _ = unexplained(diffs, context)
    assert not left, "undocumented differences from ARC:\n" + "\n".join(map(str, left))


def test_every_documented_difference_occurs() -> None:
    used: set[int] = set()
    for name in case_names():
        diffs, context = case_diffs(name)
        used |= unexplained(diffs, context)[1]
    stale = [DIFFERENCES[i].reason for i in range(len(DIFFERENCES)) if i not in used]
    assert not stale, "rows that explain no difference in any case:\n" + "\n".join(stale)


def test_the_comparison_sees_a_changed_field() -> None:
    """The diff is not blind: one field changed in our output is reported and unexplained."""
    values = case("scheduling").values
    ours = render_ours(values)
    for obj in ours:
        if obj["kind"] == "Deployment":
            obj["spec"]["template"]["spec"]["nodeSelector"]["node-pool"] = "other"
    diffs = differences("scheduling", golden("scheduling")["objects"], ours)
    left, _ = unexplained(diffs, _context(values))
    assert [d.path for d in left] == ["spec.template.spec.nodeSelector.node-pool"]
