"""A built-in object's values are decoded into typed fields: a value of the wrong JSON type is a
400 BadRequest before defaulting and validation (never a 500) on create, and a patch whose result
has one is a 422 Invalid on the field ``patch`` (kube-apiserver v1.20.2 answers so); the
JSON forms Go's decoder accepts beyond the schema's type (a number for a quantity, a number or a
string for an int-or-string, null anywhere) are accepted.

Found by the API-server body fuzzer (tests/fuzz/test_fuzz_apiserver_bodies.py): the embedded
server answered ``spec.containers: true`` with a 500 TypeError.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

MERGE_PATCH = {"content-type": "application/merge-patch+json"}


def pod(spec: dict[str, Any], name: str = "typed") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "runner", "image": "runner:1", **fields}


def assert_bad_request(response: httpx2.Response) -> None:
    assert response.status_code == 400, response.text[:400]
    body = response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "BadRequest", 400)
    assert "cannot be handled as a Pod" in body["message"], body["message"]


@pytest.mark.parametrize(
    "spec",
    [
        {"containers": True},
        {"containers": [container(name=5)]},
        {"containers": [container(name=["runner"])]},
        {"containers": [container(ports=[{"containerPort": "80"}])]},
        {"containers": [container(ports=[{"containerPort": 80.5}])]},
        {"containers": [container()], "hostNetwork": "yes"},
        {"containers": [container()], "terminationGracePeriodSeconds": True},
        {"containers": [container(env={"A": "b"})]},
        {"containers": [container(resources={"limits": {"cpu": True}})]},
        {"containers": [container()], "nodeSelector": {"disk": 1}},
    ],
    ids=[
        "containers-true",
        "name-number",
        "name-list",
        "port-string",
        "port-fraction",
        "bool-as-string",
        "integer-as-bool",
        "env-map",
        "quantity-bool",
        "string-map-number",
    ],
)
async def test_a_wrong_typed_pod_field_is_a_400_on_create(
    kube_http: httpx2.AsyncClient, namespace: str, spec: dict[str, Any]
) -> None:
    response = await kube_http.post(f"/api/v1/namespaces/{namespace}/pods", json=pod(spec))
    assert_bad_request(response)


async def test_the_forms_go_accepts_beyond_the_schema_type_are_created(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    spec = {
        "containers": [
            container(
                resources={"limits": {"cpu": 1, "memory": "64Mi"}, "requests": {"cpu": 0.5}},
                readinessProbe={"httpGet": {"port": 8080}},
                livenessProbe={"httpGet": {"port": "http"}},
                ports=[{"name": "http", "containerPort": 8080}],
                workingDir=None,
            )
        ],
        "activeDeadlineSeconds": None,
    }
    response = await kube_http.post(f"/api/v1/namespaces/{namespace}/pods", json=pod(spec))
    assert response.status_code == 201, response.text[:400]
    limits = response.json()["spec"]["containers"][0]["resources"]["limits"]
    assert limits["memory"] == "64Mi"


async def test_a_merge_patch_that_makes_a_field_wrong_typed_is_invalid_on_the_patch(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    created = await kube_http.post(
        f"/api/v1/namespaces/{namespace}/pods", json=pod({"containers": [container()]})
    )
    assert created.status_code == 201, created.text[:400]
    patch = {"spec": {"containers": [{"name": ["runner"], "image": "x"}]}}
    response = await kube_http.patch(
        f"/api/v1/namespaces/{namespace}/pods/typed",
        content=json.dumps(patch),
        headers=MERGE_PATCH,
    )
    assert response.status_code == 422, response.text[:400]
    body = response.json()
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(' "" is invalid: patch: Invalid value: "{'), body["message"]
    assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == [
        ("patch", "FieldValueInvalid")
    ]
    stored = await kube_http.get(f"/api/v1/namespaces/{namespace}/pods/typed")
    assert stored.json()["spec"]["containers"][0]["name"] == "runner"
