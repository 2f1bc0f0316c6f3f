"""The generated CRDs: structural, a superset of ARC's, declaring our status additions, with
printer columns that point at declared fields; deploy/crds and `scaleset crds` match the
generator."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.api.arc_facts import (
    FIXTURES,
    arc_kinds,
    arc_objects,
    arc_schema,
    fixture_paths,
    load_fixture,
)

from scaleset.api import KINDS, crds, keys
from scaleset.api.resources import BY_KIND
from scaleset.api.structural import (
    crd_problems,
    is_declared,
    openapi_to_jsonschema,
    structural_problems,
    superset_problems,
)

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy" / "crds"
KIND_IDS = [info.kind for info in KINDS]


def schema_of(kind: str) -> dict[str, Any]:
    return crds.object_schema(BY_KIND[kind])


def validator(kind: str, *, reject_unknown: bool = False) -> jsonschema.Draft4Validator:
    translated = openapi_to_jsonschema(schema_of(kind), reject_unknown=reject_unknown)
    jsonschema.Draft4Validator.check_schema(translated)
    return jsonschema.Draft4Validator(translated)


def errors(kind: str, obj: Any, *, reject_unknown: bool = False) -> list[str]:
    found = validator(kind, reject_unknown=reject_unknown).iter_errors(obj)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in found]


# --- checked-in files and the CLI --------------------------------------------------------------


def test_deploy_crds_match_the_generator() -> None:
    expected = crds.render_files()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in DEPLOY.glob("*.yaml")}
    assert sorted(on_disk) == sorted(expected), "regenerate: scaleset crds --output-dir deploy/crds"
    for name, text in expected.items():
        assert on_disk[name] == text, f"{name} is stale: scaleset crds --output-dir deploy/crds"


def test_cli_prints_the_stream_and_writes_the_same_files(tmp_path: Path) -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "scaleset", "crds"], capture_output=True, text=True, check=True
    )
    assert printed.stdout == crds.render_stream()
    assert printed.stdout.count("kind: CustomResourceDefinition") == 4
    subprocess.run(
        [sys.executable, "-m", "scaleset", "crds", "--output-dir", str(tmp_path / "out")],
        capture_output=True,
        check=True,
    )
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir()}
    assert written == crds.render_files()
    assert "".join(written[name] for name in sorted(written)) == printed.stdout


# --- shape of each CRD -------------------------------------------------------------------------


@pytest.mark.parametrize("info", KINDS, ids=KIND_IDS)
def test_crd_is_structural_and_well_formed(info: Any) -> None:
    crd = crds.crd(info)
    assert crd_problems(crd) == []
    spec = crd["spec"]
    assert spec["group"] == keys.GROUP
    assert spec["scope"] == "Namespaced"
    assert "shortNames" not in spec["names"]
    assert spec["names"]["plural"] == info.plural
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_the_yaml_round_trips_to_the_same_objects() -> None:
    import yaml

    documents = list(yaml.safe_load_all(crds.render_stream()))
    assert documents == crds.all_crds()


BROKEN_SCHEMAS: dict[str, dict[str, Any]] = {
    "property without type": {"type": "object", "properties": {"a": {"description": "x"}}},
    "items without type": {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"description": "x"}}},
    },
    "array without items": {"type": "object", "properties": {"a": {"type": "array"}}},
    "metadata restricted": {
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
        },
    },
    "type inside anyOf": {
        "type": "object",
        "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}},
    },
    "field only inside allOf": {
        "type": "object",
        "properties": {"a": {"type": "object", "allOf": [{"properties": {"b": {}}}]}},
    },
    "properties and additionalProperties": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "string"},
    },
    "additionalProperties false": {"type": "object", "additionalProperties": False},
    "CEL": {"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 0"}]},
    "ref": {"type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}},
    "uniqueItems": {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
    },
    "preserve false": {"type": "object", "x-kubernetes-preserve-unknown-fields": False},
    "root not object": {"type": "string"},
    "bad default": {"type": "object", "properties": {"a": {"type": "string", "default": 1}}},
}


@pytest.mark.parametrize("name", list(BROKEN_SCHEMAS))
def test_structural_checker_rejects(name: str) -> None:
    assert structural_problems(BROKEN_SCHEMAS[name]) != []


def test_structural_checker_accepts_the_exceptions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "port": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "raw": {"x-kubernetes-preserve-unknown-fields": True},
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 40}},
            },
        },
    }
    assert structural_problems(schema) == []


# --- printer columns ---------------------------------------------------------------------------


@pytest.mark.parametrize("info", KINDS, ids=KIND_IDS)
def test_every_printer_column_points_at_a_declared_field(info: Any) -> None:
    schema = crds.object_schema(info)
    for column in crds.PRINTER_COLUMNS[info.kind]:
        path = column["jsonPath"].removeprefix(".")
        assert path.startswith("metadata.") or is_declared(schema, path), column


def test_printer_columns_tell_idle_from_busy() -> None:
    paths = {c["jsonPath"] for c in crds.PRINTER_COLUMNS["EphemeralRunnerSet"]}
    assert {".status.idleEphemeralRunners", ".status.busyEphemeralRunners"} <= paths
    assert ".status.finishedEphemeralRunners" not in paths


def test_the_scale_set_prints_no_runner_count_nobody_writes() -> None:
    """The counts are the EphemeralRunnerSet's; the scale set's status no longer holds them, so
    a column for one would only ever be blank (or ARC's last number)."""
    paths = {c["jsonPath"] for c in crds.PRINTER_COLUMNS["AutoscalingRunnerSet"]}
    assert paths == {".spec.minRunners", ".spec.maxRunners", ".status.phase"}


def test_column_pointing_at_an_undeclared_field_is_reported() -> None:
    crd = copy.deepcopy(crds.crd(BY_KIND["EphemeralRunnerSet"]))
    crd["spec"]["versions"][0]["additionalPrinterColumns"].append(
        {"name": "Finished", "jsonPath": ".status.finishedEphemeralRunners", "type": "integer"}
    )
    assert crd_problems(crd) == [
        "versions[v1alpha1]: printer column 'Finished': .status.finishedEphemeralRunners is "
        "not declared in the schema"
    ]


# --- objects against the schemas ---------------------------------------------------------------


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: p.stem)
def test_fixtures_validate_against_the_generated_schema(path: Path) -> None:
    data = load_fixture(path)
    assert errors(data["kind"], data) == []


@pytest.mark.parametrize("kind", arc_kinds())
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_objects_arc_accepts_are_accepted(kind: str, data: st.DataObject) -> None:
    obj = data.draw(arc_objects(kind))
    assert jsonschema.Draft4Validator(arc_schema(kind)).is_valid(obj)
    assert errors(kind, obj) == []


@pytest.mark.parametrize("kind", arc_kinds())
def test_schema_is_a_superset_of_arcs(kind: str) -> None:
    assert superset_problems(schema_of(kind), arc_schema(kind)) == []


def test_superset_check_notices_a_narrower_schema() -> None:
    ours = copy.deepcopy(schema_of("AutoscalingRunnerSet"))
    spec = ours["properties"]["spec"]
    spec["required"] = ["githubConfigUrl"]
    spec["properties"]["maxRunners"]["minimum"] = 1
    spec["properties"]["runnerGroup"]["type"] = "integer"
    del spec["properties"]["runnerScaleSetName"]
    problems = superset_problems(ours, arc_schema("AutoscalingRunnerSet"))
    assert len(problems) == 4, problems


def test_scaleset_status_additions_are_declared() -> None:
    er = load_fixture(FIXTURES / "ephemeralrunner-scaleset-completed.yaml")
    assert errors("EphemeralRunner", er, reject_unknown=True) == []
    er["status"]["jobCompletion"]["undeclared"] = 1
    assert errors("EphemeralRunner", er, reject_unknown=True) != []
    for kind in ("EphemeralRunnerSet", "AutoscalingRunnerSet"):
        status = {
            "startingEphemeralRunners": 1,
            "idleEphemeralRunners": 2,
            "busyEphemeralRunners": 3,
            "terminalEphemeralRunners": 4,
            "deletingEphemeralRunners": 5,
            "pendingEphemeralRunners": 3,
            "runningEphemeralRunners": 3,
            "failedEphemeralRunners": 0,
            "phase": "Running",
            "conditions": [{"type": "Valid", "status": "False", "reason": "MinAboveMax"}],
        }
        status["currentReplicas" if kind == "EphemeralRunnerSet" else "currentRunners"] = 6
        obj = {"apiVersion": keys.API_VERSION, "kind": kind, "status": status}
        assert errors(kind, obj, reject_unknown=True) == []


def test_pod_templates_accept_any_pod_and_keep_every_field() -> None:
    template = {
        "metadata": {"labels": {"a": "b"}, "someFutureMeta": {"x": 1}},
        "spec": {
            "initContainers": [
                {"name": "dind", "image": "docker:dind", "restartPolicy": "Always"},
            ],
            "containers": [{"name": "runner", "image": "runner", "resizePolicy": [{"x": "y"}]}],
            "hostUsers": False,
            "aFieldFromKubernetes2030": {"nested": [1, 2, 3]},
        },
    }
    ars: dict[str, Any] = {"apiVersion": keys.API_VERSION, "kind": "AutoscalingRunnerSet"}
    ars["spec"] = {"template": template, "listenerTemplate": template}
    assert errors("AutoscalingRunnerSet", ars, reject_unknown=True) == []
    er: dict[str, Any] = {"apiVersion": keys.API_VERSION, "kind": "EphemeralRunner"}
    er["spec"] = {
        "githubConfigUrl": "https://github.com/o",
        "githubConfigSecret": "s",
        "runnerScaleSetId": 1,
        **template,
    }
    assert errors("EphemeralRunner", er, reject_unknown=True) == []
    schema = schema_of("EphemeralRunner")
    assert is_declared(schema, "spec.spec.aFieldFromKubernetes2030.nested")
    assert is_declared(schema, "spec.metadata.someFutureMeta")


def test_schema_still_rejects_what_arc_rejects() -> None:
    ars: dict[str, Any] = {"apiVersion": keys.API_VERSION, "kind": "AutoscalingRunnerSet"}
    ars["spec"] = {"maxRunners": -1}
    assert errors("AutoscalingRunnerSet", ars) != []
    er = {"apiVersion": keys.API_VERSION, "kind": "EphemeralRunner", "spec": {}}
    assert errors("EphemeralRunner", er) != [], "githubConfigUrl etc. are required, as in ARC"


# --- installed CRDs ----------------------------------------------------------------------------


@pytest.mark.parametrize("info", KINDS, ids=KIND_IDS)
def test_current_crds_have_no_gaps(info: Any) -> None:
    assert crds.installed_crd_gaps(crds.crd(info)) == []


def test_an_arc_era_crd_is_reported_with_the_fields_it_lacks() -> None:
    crd = copy.deepcopy(crds.crd(BY_KIND["EphemeralRunner"]))
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    for name in ("jobCompletion", "jobCompletionDeadline", "runnerStartedAt", "conditions"):
        del status["properties"][name]
    gaps = crds.installed_crd_gaps(crd)
    assert "status.runnerStartedAt" in gaps
    assert "status.jobCompletionDeadline" in gaps
    assert "status.jobCompletion.result" in gaps
    assert all(gap.startswith("status.") for gap in gaps)
    assert crds.installed_crd_gaps({"spec": {"names": {"kind": "Pod"}}}) == ["spec.names.kind"]
