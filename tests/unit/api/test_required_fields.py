"""Our models always write the fields ARC's schema requires (``spec.patchID``,
``status.currentReplicas``, …), even when nobody set them: the CRDs reject an object without
them, and Go writes them without ``omitempty``."""

from __future__ import annotations

import jsonschema

from scaleset.api import (
    EphemeralRunnerSet,
    EphemeralRunnerSetSpec,
    EphemeralRunnerSetStatus,
    ObjectMeta,
    crds,
    load,
    to_json,
)
from scaleset.api.resources import BY_KIND
from scaleset.api.structural import openapi_to_jsonschema


def test_unset_patch_id_is_written() -> None:
    ers = EphemeralRunnerSet(
        metadata=ObjectMeta(name="set", namespace="ns"),
        spec=EphemeralRunnerSetSpec(replicas=2),
    )
    assert to_json(ers)["spec"] == {"replicas": 2, "patchID": 0}


def test_unset_current_replicas_is_written() -> None:
    status = EphemeralRunnerSetStatus(phase="Running", idle_ephemeral_runners=2)
    assert to_json(status) == {
        "phase": "Running",
        "idleEphemeralRunners": 2,
        "currentReplicas": 0,
    }


def test_required_fields_are_only_added_to_objects_that_are_written() -> None:
    ers = EphemeralRunnerSet(metadata=ObjectMeta(name="set", namespace="ns"))
    assert to_json(ers) == {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {"name": "set", "namespace": "ns"},
    }


def test_a_value_that_was_read_wins_over_the_default() -> None:
    ers = load(
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": "set"},
            "spec": {"patchID": "7"},
            "status": {"currentReplicas": 3},
        }
    )
    assert to_json(ers)["spec"] == {"patchID": "7"}, "an invalid value is written back as read"
    assert to_json(ers)["status"] == {"currentReplicas": 3}


def test_what_we_build_passes_the_schema_required_lists() -> None:
    schema = openapi_to_jsonschema(crds.object_schema(BY_KIND["EphemeralRunnerSet"]))
    ers = EphemeralRunnerSet(
        metadata=ObjectMeta(name="set", namespace="ns"),
        spec=EphemeralRunnerSetSpec(replicas=1),
        status=EphemeralRunnerSetStatus(phase="Running"),
    )
    jsonschema.validate(to_json(ers), schema)
