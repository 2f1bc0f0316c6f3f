"""CustomResourceDefinitions: establishing, serving, schema pruning/defaulting/validation,
printer columns, several versions, and deletion that takes the instances along."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from tests.integration.embedded_apiserver.rest import MERGE, STRATEGIC
from tests.support.waiting import eventually_sync

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP = "test.scaleset.dev"

GADGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1},
                "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def _crd(plural: str, kind: str, versions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": versions,
        },
    }


def _version(name: str, *, storage: bool, columns: bool = False) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": name,
        "served": True,
        "storage": storage,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": GADGET_SCHEMA},
    }
    if columns:
        version["additionalPrinterColumns"] = [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        ]
    return version


def _established(client: httpx2.Client, name: str) -> bool:
    crd = client.get(f"{CRDS}/{name}").json()
    return any(
        c["type"] == "Established" and c["status"] == "True"
        for c in crd.get("status", {}).get("conditions", [])
    )


@pytest.fixture
def gadgets(client: httpx2.Client) -> str:
    """A two-version Gadget CRD, established; returns the v1 collection path prefix."""
    name = f"gadgets.{GROUP}"
    if client.get(f"{CRDS}/{name}").status_code == 404:
        created = client.post(
            CRDS,
            json=_crd(
                "gadgets",
                "Gadget",
                [_version("v1", storage=True, columns=True), _version("v2", storage=False)],
            ),
        )
        assert created.status_code == 201, created.text
        assert created.json()["status"]["storedVersions"] == ["v1"]
    eventually_sync(lambda: _established(client, name), within=10.0)
    return f"/apis/{GROUP}/v1"


def _gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec or {"size": 1},
    }


def test_established_crd_is_discoverable(client: httpx2.Client, gadgets: str) -> None:
    crd = client.get(f"{CRDS}/gadgets.{GROUP}").json()
    group = client.get(f"/apis/{GROUP}").json()
    resources = client.get(gadgets).json()["resources"]

    assert crd["status"]["acceptedNames"]["listKind"] == "GadgetList"
    assert {c["type"] for c in crd["status"]["conditions"]} == {"NamesAccepted", "Established"}
    assert group["preferredVersion"]["version"] == "v2"
    assert {r["name"] for r in resources} == {"gadgets", "gadgets/status"}


def test_pruning_defaulting_and_validation(client: httpx2.Client, gadgets: str, ns: str) -> None:
    path = f"{gadgets}/namespaces/{ns}/gadgets"

    created = client.post(
        path,
        json=_gadget("g", size=2, unknown=True, extra={"free": {"form": 1}}, labels={"a": "b"}),
    )
    invalid = client.post(path, json=_gadget("bad", size=0, mode="medium"))
    missing = client.post(path, json={**_gadget("none"), "spec": {}})

    assert created.status_code == 201, created.text
    assert created.json()["spec"] == {
        "size": 2,
        "mode": "slow",
        "extra": {"free": {"form": 1}},
        "labels": {"a": "b"},
    }
    assert invalid.status_code == 422
    causes = {(c["field"], c["reason"]) for c in invalid.json()["details"]["causes"]}
    assert causes == {("spec.size", "FieldValueInvalid"), ("spec.mode", "FieldValueNotSupported")}
    assert missing.status_code == 422
    assert missing.json()["details"]["causes"][0]["field"] == "spec.size"


def test_generation_and_status_isolation(client: httpx2.Client, gadgets: str, ns: str) -> None:
    path = f"{gadgets}/namespaces/{ns}/gadgets"
    client.post(path, json=_gadget("g", size=1))

    status = client.patch(
        f"{path}/g/status",
        json={"status": {"phase": "Ready"}, "metadata": {"labels": {"dropped": "yes"}}},
        headers=MERGE,
    ).json()
    spec = client.patch(f"{path}/g", json={"spec": {"size": 5}}, headers=MERGE).json()
    smp = client.patch(f"{path}/g", json={"spec": {"size": 6}}, headers=STRATEGIC)

    assert status["metadata"]["generation"] == 1
    assert "labels" not in status["metadata"]
    assert spec["metadata"]["generation"] == 2
    assert spec["status"] == {"phase": "Ready"}
    assert smp.status_code == 415


def test_versions_share_storage(client: httpx2.Client, gadgets: str, ns: str) -> None:
    client.post(f"{gadgets}/namespaces/{ns}/gadgets", json=_gadget("g", size=3))

    as_v2 = client.get(f"/apis/{GROUP}/v2/namespaces/{ns}/gadgets/g").json()
    listed = client.get(f"/apis/{GROUP}/v2/namespaces/{ns}/gadgets").json()

    assert as_v2["apiVersion"] == f"{GROUP}/v2"
    assert as_v2["spec"]["size"] == 3
    assert listed["items"][0]["kind"] == "Gadget"  # custom resource list items carry kind


def test_printer_columns_make_the_table(client: httpx2.Client, gadgets: str, ns: str) -> None:
    path = f"{gadgets}/namespaces/{ns}/gadgets"
    client.post(path, json=_gadget("g", size=4))
    client.patch(f"{path}/g/status", json={"status": {"phase": "Ready"}}, headers=MERGE)

    table = client.get(
        path, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    ).json()

    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Phase"]
    assert table["rows"][0]["cells"] == ["g", 4, "Ready"]


def test_deleting_a_crd_removes_its_instances_and_stops_serving(
    client: httpx2.Client, ns: str
) -> None:
    name = f"widgets.{GROUP}"
    client.post(CRDS, json=_crd("widgets", "Widget", [_version("v1", storage=True)]))
    eventually_sync(lambda: _established(client, name), within=10.0)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/widgets"
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1},
    }
    assert client.post(path, json=body).status_code == 201

    deleted = client.delete(f"{CRDS}/{name}")

    assert deleted.status_code == 200
    assert "customresourcecleanup.apiextensions.k8s.io" in deleted.json()["metadata"]["finalizers"]
    eventually_sync(lambda: client.get(f"{CRDS}/{name}").status_code == 404, within=10.0)
    assert client.get(path).status_code == 404
    resources = client.get(f"/apis/{GROUP}/v1").json().get("resources", [])
    assert "widgets" not in {r["name"] for r in resources}


def test_invalid_crd_is_rejected(client: httpx2.Client) -> None:
    crd = _crd("things", "Thing", [_version("v1", storage=False)])
    crd["metadata"]["name"] = "wrong.name.dev"

    response = client.post(CRDS, json=crd)

    assert response.status_code == 422
    fields = {c["field"] for c in response.json()["details"]["causes"]}
    assert {"metadata.name", "spec.versions"} <= fields
