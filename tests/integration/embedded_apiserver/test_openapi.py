"""The OpenAPI v3 documents ``kubectl explain`` reads, fetched over HTTP from the embedded server.

Shape: every served kind has exactly one schema carrying its ``x-kubernetes-group-version-kind``
in its group/version's document, and every reference resolves inside that document. Content: a
CRD's ``openAPIV3Schema`` comes back as written (only ``metadata`` and the ``x-kubernetes-*``
kind marker are the server's), and the document follows the CRD through update and deletion.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from typing import Any

import httpx2
import pytest
from tests.support.waiting import eventually_sync

from scaleset.api.crds import all_crds
from scaleset.embedded.apiserver import _openapi_builtin

JsonObj = dict[str, Any]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
REF = "#/components/schemas/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _get(client: httpx2.Client, path: str) -> JsonObj:
    response = client.get(path)
    assert response.status_code == 200, (path, response.text)
    body: JsonObj = response.json()
    return body


def _index(client: httpx2.Client) -> dict[str, str]:
    paths: dict[str, JsonObj] = _get(client, "/openapi/v3")["paths"]
    return {gv: entry["serverRelativeURL"] for gv, entry in paths.items()}


def _document(client: httpx2.Client, gv_path: str) -> JsonObj:
    return _get(client, _index(client)[gv_path])


def _refs(node: object) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _schemas_with_gvk(document: JsonObj, gvk: JsonObj) -> list[str]:
    return [
        name
        for name, schema in document["components"]["schemas"].items()
        if gvk in (schema.get("x-kubernetes-group-version-kind") or [])
    ]


def _served_kinds(client: httpx2.Client, gv_path: str) -> list[str]:
    resources = _get(client, f"/{gv_path}")["resources"]
    return sorted({r["kind"] for r in resources if "/" not in r["name"]})


def _create_crds(client: httpx2.Client, crds: list[JsonObj]) -> None:
    for crd in crds:
        response = client.post(CRDS, json=crd)
        assert response.status_code in (201, 409), response.text
    eventually_sync(lambda: "apis/actions.github.com/v1alpha1" in _index(client), within=10.0)


def test_every_served_kind_has_one_schema_with_its_gvk(client: httpx2.Client) -> None:
    _create_crds(client, all_crds())
    index = _index(client)
    assert {"api/v1", "apis/actions.github.com/v1alpha1", "apis/rbac.authorization.k8s.io/v1"} <= (
        set(index)
    )

    for gv_path in index:
        document = _document(client, gv_path)
        group, _, version = gv_path.removeprefix("api/").removeprefix("apis/").rpartition("/")
        kinds = _served_kinds(client, gv_path)
        assert kinds, gv_path
        for kind in kinds:
            gvk = {"group": group, "kind": kind, "version": version}
            assert len(_schemas_with_gvk(document, gvk)) == 1, (gv_path, kind)
            operations = [
                op
                for path in document["paths"].values()
                for op in path.values()
                if isinstance(op, dict) and op.get("x-kubernetes-group-version-kind") == gvk
            ]
            assert operations, (gv_path, kind)  # explain finds the kind from the paths


def test_every_reference_resolves_inside_its_document(client: httpx2.Client) -> None:
    _create_crds(client, all_crds())

    for gv_path in _index(client):
        document = _document(client, gv_path)
        schemas = document["components"]["schemas"]
        refs = _refs(document)
        assert all(ref.startswith(REF) for ref in refs), gv_path
        missing = {ref for ref in refs if ref.removeprefix(REF) not in schemas}
        assert not missing, (gv_path, missing)


def test_a_crd_schema_is_published_as_written(client: httpx2.Client) -> None:
    crds = all_crds()
    _create_crds(client, crds)
    document = _document(client, "apis/actions.github.com/v1alpha1")
    schemas = document["components"]["schemas"]

    for crd in crds:
        kind = crd["spec"]["names"]["kind"]
        written = copy.deepcopy(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        published = copy.deepcopy(schemas[f"com.github.actions.v1alpha1.{kind}"])
        gvk = published.pop("x-kubernetes-group-version-kind")
        metadata = published["properties"].pop("metadata")
        written["properties"].pop("metadata")

        assert gvk == [{"group": "actions.github.com", "kind": kind, "version": "v1alpha1"}]
        assert published == written, kind
        assert metadata["allOf"] == [{"$ref": REF + OBJECT_META}]
        assert metadata["description"].startswith("Standard object's metadata.")
        listed = schemas[f"com.github.actions.v1alpha1.{kind}List"]
        assert listed["properties"]["items"]["items"] == {
            "$ref": f"{REF}com.github.actions.v1alpha1.{kind}"
        }
        assert listed["x-kubernetes-group-version-kind"][0]["kind"] == f"{kind}List"


GROUP = "openapi.scaleset.dev"


def _gizmo_crd(properties: JsonObj) -> JsonObj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gizmos.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "versions": [
                {
                    "name": "v2beta1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "A gizmo.",
                            "properties": properties,
                        }
                    },
                }
            ],
        },
    }


def _gizmo_schema(client: httpx2.Client) -> JsonObj | None:
    url = _index(client).get(f"apis/{GROUP}/v2beta1")
    if url is None:
        return None
    schema: JsonObj = _get(client, url)["components"]["schemas"][
        "dev.scaleset.openapi.v2beta1.Gizmo"
    ]
    return schema


def test_the_document_follows_a_crd_through_update_and_deletion(client: httpx2.Client) -> None:
    size = {"type": "integer", "description": "How big."}
    created = client.post(CRDS, json=_gizmo_crd({"size": size}))
    assert created.status_code == 201, created.text
    eventually_sync(lambda: _gizmo_schema(client) is not None, within=10.0)
    first_url = _index(client)[f"apis/{GROUP}/v2beta1"]
    schema = _gizmo_schema(client)
    assert schema is not None
    assert schema["description"] == "A gizmo."
    assert schema["properties"]["size"] == size
    # A CRD without apiVersion/kind descriptions gets the standard ones.
    assert schema["properties"]["apiVersion"]["description"].startswith("APIVersion defines")
    assert schema["properties"]["kind"]["type"] == "string"

    stored = _get(client, f"{CRDS}/gizmos.{GROUP}")
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["color"] = {
        "type": "string",
        "enum": ["red", "blue"],
    }
    updated = client.put(f"{CRDS}/gizmos.{GROUP}", json=stored)
    assert updated.status_code == 200, updated.text
    eventually_sync(
        lambda: "color" in ((_gizmo_schema(client) or {}).get("properties") or {}), within=10.0
    )
    assert _index(client)[f"apis/{GROUP}/v2beta1"] != first_url  # the hash moves

    deleted = client.delete(f"{CRDS}/gizmos.{GROUP}")
    assert deleted.status_code == 200, deleted.text
    eventually_sync(lambda: f"apis/{GROUP}/v2beta1" not in _index(client), within=10.0)
    assert client.get(first_url.partition("?")[0]).status_code == 404


def _real_server_definitions() -> JsonObj:
    kubeconfig = os.environ.get("SCALESET_TEST_KUBECONFIG")
    kubectl = shutil.which("kubectl")
    if not kubeconfig or kubectl is None:
        pytest.skip("needs SCALESET_TEST_KUBECONFIG (a real kube-apiserver) and kubectl")
    raw = subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/openapi/v2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    definitions: JsonObj = json.loads(raw)["definitions"]
    return definitions


def test_builtin_schemas_match_the_real_servers_definitions() -> None:
    """Every built-in schema here is the real server's: same fields, types and descriptions."""
    real = _real_server_definitions()

    for name, ours in _openapi_builtin.schemas().items():
        theirs = real[name]
        assert ours.get("description") == theirs.get("description"), name
        assert ours.get("x-kubernetes-group-version-kind") == theirs.get(
            "x-kubernetes-group-version-kind"
        ), name
        if "properties" not in ours:  # a type documented without its fields
            continue
        assert set(ours["properties"]) == set(theirs["properties"]), name
        assert ours.get("required") == theirs.get("required"), name
        for field, schema in ours["properties"].items():
            real_field = theirs["properties"][field]
            assert schema.get("description") == real_field.get("description"), (name, field)
            assert schema.get("type") == real_field.get("type"), (name, field)
            real_refs = {ref.removeprefix("#/definitions/") for ref in _refs(real_field)}
            assert _openapi_builtin.references(schema) == real_refs, (name, field)
