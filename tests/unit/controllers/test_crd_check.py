"""The refusal line of the installed-CRD check (L8): what is missing, and the fix."""

from __future__ import annotations

from scaleset.controllers.crd_check import FIX_COMMAND, describe, summarise


def test_leaf_paths_are_folded_to_the_field_that_is_missing() -> None:
    assert summarise(
        ["status.jobCompletion.result", "status.jobCompletion.runnerId", "status.runnerStartedAt"]
    ) == ["status.jobCompletion", "status.runnerStartedAt"]


def test_nothing_missing_means_no_refusal() -> None:
    assert describe([], {}) is None


def test_one_line_names_missing_crds_and_fields_and_ends_with_the_fix() -> None:
    line = describe(
        ["autoscalinglisteners.actions.github.com"],
        {"ephemeralrunners.actions.github.com": ["status.jobCompletion.result"]},
    )
    assert line is not None
    assert "\n" not in line
    assert "autoscalinglisteners.actions.github.com is not installed" in line
    assert "ephemeralrunners.actions.github.com lacks status.jobCompletion" in line
    assert line.endswith(FIX_COMMAND)


def test_long_field_lists_are_cut_with_a_count() -> None:
    paths = [f"status.field{index}" for index in range(10)]
    line = describe([], {"x": paths})
    assert line is not None
    assert "status.field5" in line
    assert "status.field6" not in line
    assert "(+4 more)" in line
