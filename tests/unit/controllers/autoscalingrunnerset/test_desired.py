"""The runner set and listener a scale set asks for, and the patches that get there (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.controllers.autoscalingrunnerset.builders import (
    IMAGE,
    SCALE_SET_ID,
    SETTINGS,
    scale_set,
)

from scaleset.api import keys
from scaleset.controllers.autoscalingrunnerset import desired
from scaleset.controllers.autoscalingrunnerset.observed import scale_set_view
from scaleset.controllers.autoscalingrunnerset.settings import Settings


def test_merge_diff_sets_changed_keys_nests_objects_and_nulls_removed_keys() -> None:
    current = {"a": 1, "b": {"x": 1, "y": 2}, "c": [1, 2], "gone": "x", "same": {"k": "v"}}
    wanted = {"a": 2, "b": {"x": 1, "z": 3}, "c": [1], "same": {"k": "v"}, "new": {"n": 1}}
    assert desired.merge_diff(current, wanted) == {
        "a": 2,
        "b": {"y": None, "z": 3},
        "c": [1],
        "gone": None,
        "new": {"n": 1},
    }
    assert desired.merge_diff(wanted, wanted) == {}


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, to check that a diff really turns one object into the other."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


@pytest.mark.parametrize(
    ("current", "wanted"),
    [
        ({}, {"a": {"b": {"c": 1}}}),
        ({"a": {"b": {"c": 1}}}, {}),
        ({"spec": {"containers": [{"name": "runner"}]}}, {"spec": {"nodeSelector": {"x": "y"}}}),
        ({"a": "x", "b": {"c": [1]}}, {"a": {"now": "object"}, "b": "now a string"}),
    ],
)
def test_merge_diff_applied_gives_the_desired_object(
    current: dict[str, Any], wanted: dict[str, Any]
) -> None:
    assert apply_merge_patch(current, desired.merge_diff(current, wanted)) == wanted


def test_normalised_comparison_ignores_go_zero_values_but_not_real_values() -> None:
    chart = {"containers": [{"name": "runner", "image": "r:1"}]}
    go = {"containers": [{"name": "runner", "image": "r:1", "resources": {}, "env": []}]}
    assert desired.same(chart, go)
    assert desired.same({"metadata": {"creationTimestamp": None}}, {})
    assert not desired.same({"replicas": 0}, {})
    assert not desired.same({"privileged": False}, {})
    assert not desired.same(chart, {"containers": [{"name": "runner", "image": "r:2"}]})


def test_the_digest_is_stable_and_order_independent() -> None:
    assert desired.digest({"a": 1, "b": [1, 2]}) == desired.digest({"b": [1, 2], "a": 1})
    assert desired.digest({"a": 1}) != desired.digest({"a": 2})


def test_runner_set_labels_follow_arcs_merge_computed_labels_win() -> None:
    ars = scale_set(
        labels={
            keys.COMPONENT_LABEL: keys.COMPONENT_AUTOSCALING_RUNNER_SET,
            keys.VERSION_LABEL: "0.14.2",
            "team": "a",
        },
        spec={
            "ephemeralRunnerSetMetadata": {"labels": {keys.COMPONENT_LABEL: "mine", "extra": "x"}}
        },
    )
    wanted = desired.runner_set(scale_set_view(ars), SCALE_SET_ID, "arc", "Default", SETTINGS)
    assert wanted.labels[keys.COMPONENT_LABEL] == keys.COMPONENT_RUNNER_SET
    assert wanted.labels[keys.PART_OF_LABEL] == keys.PART_OF_VALUE
    assert wanted.labels[keys.VERSION_LABEL] == "0.14.2"
    assert wanted.labels[keys.SCALE_SET_NAME_LABEL] == "arc-runner-set"
    assert (wanted.labels["team"], wanted.labels["extra"]) == ("a", "x")


def test_the_runner_set_digest_moves_with_what_the_runner_set_holds() -> None:
    view = scale_set_view(scale_set())
    base = desired.runner_set(view, SCALE_SET_ID, "arc", "Default", SETTINGS)
    assert desired.runner_set(view, SCALE_SET_ID, "arc", "Default", SETTINGS).hash == base.hash
    assert desired.runner_set(view, SCALE_SET_ID + 1, "arc", "Default", SETTINGS).hash != base.hash
    assert desired.runner_set(view, SCALE_SET_ID, "arc", "Builders", SETTINGS).hash != base.hash


def test_the_listener_digest_moves_with_pull_secrets_and_runner_set_name() -> None:
    view = scale_set_view(scale_set())
    base = desired.listener(view, SCALE_SET_ID, "arc", SETTINGS)
    with_secret = Settings(SETTINGS.controller_namespace, IMAGE, image_pull_secrets=("r",))
    assert desired.listener(view, SCALE_SET_ID, "arc", SETTINGS).hash == base.hash
    assert desired.listener(view, SCALE_SET_ID, "arc", with_secret).hash != base.hash
    assert desired.listener(view, SCALE_SET_ID, "arc-2", SETTINGS).hash != base.hash


def test_warm_windows_are_copied_to_the_listener_and_absent_ones_change_nothing() -> None:
    window = {"start": "08:00", "end": "18:00", "timeZone": "UTC", "minRunners": 2}
    plain = desired.listener(scale_set_view(scale_set()), SCALE_SET_ID, "arc", SETTINGS)
    assert "warmWindows" not in plain.spec, "ARC's scale sets keep their listener spec and hash"
    warm = desired.listener(
        scale_set_view(scale_set(spec={"warmWindows": [window]})), SCALE_SET_ID, "arc", SETTINGS
    )
    assert warm.spec["warmWindows"] == [window]
    assert warm.hash != plain.hash


def test_scale_set_labels_are_its_name_then_the_chart_labels_without_duplicates() -> None:
    ars = scale_set(
        spec={"runnerScaleSetName": "x64", "runnerScaleSetLabels": ["gpu", "x64", "gpu", "big"]}
    )
    assert desired.scale_set_labels(scale_set_view(ars)) == ("x64", "gpu", "big")
    cased = scale_set(spec={"runnerScaleSetLabels": ["GPU", "gpu", "Linux"]})
    assert desired.scale_set_labels(scale_set_view(cased)) == ("arc-runner-set", "GPU", "Linux")
    assert desired.same_labels(["X64", "gpu"], ["gpu", "x64"])
    assert not desired.same_labels(["x64"], ["x64", "gpu"])
