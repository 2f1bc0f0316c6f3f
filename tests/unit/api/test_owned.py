"""The one owner reference builder and the one string-map reader (``scaleset.api.owned``), and
the callers that read labels and annotations out of a user's spec: values that are not strings
are left out everywhere (Kubernetes refuses them; turning them into text invents values nobody
wrote, and an invalid one made every creation of the runner pod fail)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tests.unit.controllers.autoscalingrunnerset.builders import SCALE_SET_ID, SETTINGS, scale_set
from tests.unit.controllers.ephemeralrunner.builders import runner, template
from tests.unit.controllers.ephemeralrunnerset.test_runner_body import runner_set

from scaleset.api import EphemeralRunner, keys
from scaleset.api.owned import controller_reference, string_map
from scaleset.controllers.autoscalingrunnerset import desired
from scaleset.controllers.autoscalingrunnerset.observed import scale_set_view
from scaleset.controllers.ephemeralrunner.pod import runner_pod
from scaleset.controllers.ephemeralrunnerset.runner_body import runner_body

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
NOT_STRINGS: dict[str, Any] = {
    "count": 1,
    "ratio": 0.5,
    "enabled": True,
    "unset": None,
    "nested": {"a": 1},
    "listed": ["a"],
}


def test_a_controller_reference_names_the_owner_controls_and_blocks_deletion() -> None:
    assert controller_reference("EphemeralRunner", "arc-runner-x", "uid-1") == {
        "apiVersion": keys.API_VERSION,
        "kind": "EphemeralRunner",
        "name": "arc-runner-x",
        "uid": "uid-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }


@given(st.dictionaries(st.text(), JSON) | JSON)
def test_a_string_map_keeps_exactly_the_string_values(value: Any) -> None:
    read = string_map(value)
    expected = (
        {k: v for k, v in value.items() if isinstance(v, str)} if isinstance(value, dict) else {}
    )
    assert read == expected
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in read.items())


def test_the_runner_pod_leaves_out_template_labels_and_annotations_that_are_not_strings() -> None:
    er = EphemeralRunner.model_validate(
        runner(
            spec={
                "metadata": {
                    "labels": {"team": "a", **NOT_STRINGS},
                    "annotations": {"note": "x", **NOT_STRINGS},
                },
                "spec": template(),
            }
        )
    )
    meta = runner_pod(er, user_agent="scaleset/1.0")["metadata"]
    assert meta["labels"]["team"] == "a"
    assert meta["annotations"]["note"] == "x"
    for key in NOT_STRINGS:
        assert key not in meta["labels"]
        assert key not in meta.get("annotations", {})


def test_a_new_runner_leaves_out_extra_labels_and_annotations_that_are_not_strings() -> None:
    extra = {"labels": {"team": "b", **NOT_STRINGS}, "annotations": {"cost": "42", **NOT_STRINGS}}
    meta = runner_body(runner_set(ephemeralRunnerMetadata=extra), patch_id=4)["metadata"]
    assert meta["labels"]["team"] == "b"
    assert meta["annotations"]["cost"] == "42"
    for key in NOT_STRINGS:
        assert key not in meta["labels"]
        assert key not in meta["annotations"]


def test_a_scale_sets_objects_leave_out_extra_labels_and_annotations_that_are_not_strings() -> None:
    extra = {"labels": {"team": "c", **NOT_STRINGS}, "annotations": {"cost": "7", **NOT_STRINGS}}
    view = scale_set_view(
        scale_set(spec={"ephemeralRunnerSetMetadata": extra, "autoscalingListener": extra})
    )
    for wanted in (
        desired.runner_set(view, SCALE_SET_ID, "arc", "Default", SETTINGS),
        desired.listener(view, SCALE_SET_ID, "arc", SETTINGS),
    ):
        assert (wanted.labels["team"], wanted.annotations["cost"]) == ("c", "7")
        for key in NOT_STRINGS:
            assert key not in wanted.labels
            assert key not in wanted.annotations
