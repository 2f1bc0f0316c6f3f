"""Bad input gets the real server's Status error — never a crash, never a corrupted object."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from tests.integration.embedded_apiserver.rest import MERGE, STRATEGIC, cm_path, configmap

from scaleset.embedded.apiserver import RunningApiServer


def _status(response: httpx2.Response, code: int, reason: str) -> dict[str, Any]:
    assert response.status_code == code, response.text
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status"
    assert (body["code"], body["reason"], body["status"]) == (code, reason, "Failure")
    return body


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"[1, 2, 3]", "application/json"),
        (b"", "application/json"),
        (b"\xff\xfe", "application/json"),
        (b"key: [unclosed", "application/yaml"),
    ],
)
def test_malformed_bodies_are_bad_requests(
    client: httpx2.Client, ns: str, raw: bytes, content_type: str
) -> None:
    response = client.post(cm_path(ns), content=raw, headers={"Content-Type": content_type})

    _status(response, 400, "BadRequest")


def test_yaml_bodies_are_accepted(client: httpx2.Client, ns: str) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n"

    response = client.post(cm_path(ns), content=body, headers={"Content-Type": "application/yaml"})

    assert response.status_code == 201
    assert response.json()["data"] == {"k": "v"}


def test_unknown_content_type_is_415(client: httpx2.Client, ns: str) -> None:
    create = client.post(cm_path(ns), content=b"name=x", headers={"Content-Type": "text/plain"})
    client.post(cm_path(ns), json=configmap("a"))
    patch = client.patch(cm_path(ns, "a"), json={}, headers={"Content-Type": "application/json"})

    _status(create, 415, "UnsupportedMediaType")
    _status(patch, 415, "UnsupportedMediaType")


def test_unknown_resources_and_groups(client: httpx2.Client, ns: str) -> None:
    unknown_resource = client.get(f"/api/v1/namespaces/{ns}/gadgets")
    unknown_group = client.get("/apis/nope.example.com/v1/things")
    unknown_subresource = client.get(f"/api/v1/namespaces/{ns}/configmaps/a/scale")

    _status(unknown_resource, 404, "NotFound")
    assert unknown_group.status_code == 404
    assert unknown_group.text == "404 page not found\n"
    _status(unknown_subresource, 404, "NotFound")


def test_method_not_allowed(client: httpx2.Client, ns: str) -> None:
    response = client.post(cm_path(ns, "a"), json=configmap("a"))
    collection = client.delete("/api/v1/namespaces")

    _status(response, 405, "MethodNotAllowed")
    _status(collection, 405, "MethodNotAllowed")


@pytest.mark.parametrize(
    ("path", "name", "field"),
    [
        ("/api/v1/namespaces/{ns}/configmaps", "Upper_Case", "metadata.name"),
        ("/api/v1/namespaces/{ns}/configmaps", "a" * 254, "metadata.name"),
        ("/api/v1/namespaces", "dots.not.allowed", "metadata.name"),
        ("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", "..", "metadata.name"),
    ],
)
def test_invalid_names_are_422_with_causes(
    client: httpx2.Client, ns: str, path: str, name: str, field: str
) -> None:
    response = client.post(path.format(ns=ns), json={"metadata": {"name": name}})

    body = _status(response, 422, "Invalid")
    assert [cause["field"] for cause in body["details"]["causes"]] == [field]


def test_role_names_follow_path_segment_rules(client: httpx2.Client, ns: str) -> None:
    path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"

    response = client.post(path, json={"metadata": {"name": "system:Controller_X"}, "rules": []})

    assert response.status_code == 201


def test_invalid_labels_and_missing_name(client: httpx2.Client, ns: str) -> None:
    bad_label = client.post(cm_path(ns), json=configmap("a", labels={"bad key!": "v"}))
    no_name = client.post(cm_path(ns), json={"metadata": {}})

    assert _status(bad_label, 422, "Invalid")["details"]["causes"][0]["field"] == "metadata.labels"
    assert _status(no_name, 422, "Invalid")["details"]["causes"][0]["field"] == "metadata.name"


def test_oversized_body_is_413_and_stores_nothing(client: httpx2.Client, ns: str) -> None:
    huge = configmap("big")
    huge["data"] = {"blob": "x" * (3 * 1024 * 1024 + 10)}

    response = client.post(cm_path(ns), json=huge)

    _status(response, 413, "RequestEntityTooLarge")
    assert client.get(cm_path(ns, "big")).status_code == 404


def test_configmap_over_one_mebibyte_is_invalid(client: httpx2.Client, ns: str) -> None:
    body = configmap("big")
    body["data"] = {"blob": "x" * (1024 * 1024 + 1)}

    _status(client.post(cm_path(ns), json=body), 422, "Invalid")


def test_mismatched_name_and_namespace_are_bad_requests(client: httpx2.Client, ns: str) -> None:
    client.post(cm_path(ns), json=configmap("a"))

    renamed = client.put(cm_path(ns, "a"), json=configmap("b"))
    elsewhere = client.post(cm_path(ns), json=configmap("c", namespace="other"))
    wrong_kind = client.post(cm_path(ns), json={**configmap("d"), "kind": "Secret"})

    _status(renamed, 400, "BadRequest")
    _status(elsewhere, 400, "BadRequest")
    _status(wrong_kind, 400, "BadRequest")


def test_wrong_field_types_are_rejected_without_touching_the_object(
    client: httpx2.Client, ns: str
) -> None:
    original = client.post(cm_path(ns), json=configmap("a", labels={"k": "v"})).json()

    bad_data = client.patch(cm_path(ns, "a"), json={"data": {"n": 1}}, headers=MERGE)
    bad_labels = client.patch(cm_path(ns, "a"), json={"metadata": {"labels": ["x"]}}, headers=MERGE)
    bad_patch = client.patch(
        cm_path(ns, "a"), content=b"{oops", headers={"Content-Type": "application/merge-patch+json"}
    )

    _status(bad_data, 400, "BadRequest")
    _status(bad_labels, 400, "BadRequest")
    # the real server answers a merge patch that is not JSON with a reason-less 500
    assert bad_patch.status_code == 500
    assert bad_patch.json()["message"] == "Invalid JSON Patch"
    assert client.get(cm_path(ns, "a")).json() == original


def test_json_patch_test_op_failure_is_422_and_changes_nothing(
    client: httpx2.Client, ns: str
) -> None:
    original = client.post(cm_path(ns), json=configmap("a")).json()

    response = client.patch(
        cm_path(ns, "a"),
        json=[
            {"op": "add", "path": "/data", "value": {"k": "v"}},
            {"op": "test", "path": "/metadata/name", "value": "someone-else"},
        ],
        headers={"Content-Type": "application/json-patch+json"},
    )

    _status(response, 422, "Invalid")
    assert client.get(cm_path(ns, "a")).json() == original


def test_selector_errors_are_bad_requests(client: httpx2.Client, ns: str) -> None:
    bad_labels = client.get(cm_path(ns), params={"labelSelector": "a in (b"})
    bad_field = client.get(cm_path(ns), params={"fieldSelector": "spec.nodeName=x"})
    bad_continue = client.get(cm_path(ns), params={"limit": "1", "continue": "garbage"})

    _status(bad_labels, 400, "BadRequest")
    assert _status(bad_field, 400, "BadRequest")["message"] == (
        '"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    _status(bad_continue, 400, "BadRequest")


def test_create_in_a_missing_namespace_is_404(client: httpx2.Client) -> None:
    response = client.post(cm_path("no-such-namespace"), json=configmap("a"))

    body = _status(response, 404, "NotFound")
    assert body["details"] == {"name": "no-such-namespace", "kind": "namespaces"}


def test_strategic_merge_patch_of_a_namespace_finalizer_list(
    client: httpx2.Client, ns: str
) -> None:
    client.post(cm_path(ns), json=configmap("a", finalizers=["x.scaleset.dev/one"]))

    patched = client.patch(
        cm_path(ns, "a"),
        json={"metadata": {"$deleteFromPrimitiveList/finalizers": ["x.scaleset.dev/one"]}},
        headers=STRATEGIC,
    ).json()

    assert "finalizers" not in patched["metadata"]


def test_unauthenticated_requests_are_401(api: RunningApiServer) -> None:
    with httpx2.Client(base_url=api.url, trust_env=False) as anonymous:
        missing = anonymous.get("/api/v1/namespaces")
        wrong = anonymous.get("/api/v1/namespaces", headers={"Authorization": "Bearer nope"})

    _status(missing, 401, "Unauthorized")
    _status(wrong, 401, "Unauthorized")
