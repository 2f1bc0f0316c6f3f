"""Garbage collection and namespace deletion, as kube-controller-manager would finish them
(the real test server has no controller manager, so these run on the embedded server only)."""

from __future__ import annotations

from typing import Any

import httpx2
from tests.integration.embedded_apiserver.rest import MERGE, cm_path, configmap
from tests.support.waiting import eventually_sync


def _owned(name: str, owner: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return configmap(name, ownerReferences=[ref])


def _exists(client: httpx2.Client, ns: str, name: str) -> bool:
    return client.get(cm_path(ns, name)).status_code == 200


def test_background_deletion_removes_dependents_recursively(client: httpx2.Client, ns: str) -> None:
    owner = client.post(cm_path(ns), json=configmap("owner")).json()
    child = client.post(cm_path(ns), json=_owned("child", owner)).json()
    client.post(cm_path(ns), json=_owned("grandchild", child))
    client.post(cm_path(ns), json=configmap("bystander"))

    deleted = client.delete(cm_path(ns, "owner"))

    assert deleted.status_code == 200
    eventually_sync(
        lambda: not _exists(client, ns, "child") and not _exists(client, ns, "grandchild"),
        within=10.0,
    )
    assert _exists(client, ns, "bystander")


def test_foreground_deletion_waits_for_blocking_dependents(client: httpx2.Client, ns: str) -> None:
    owner = client.post(cm_path(ns), json=configmap("owner")).json()
    client.post(
        cm_path(ns),
        json={
            **_owned("child", owner, block=True),
            "metadata": {
                **_owned("child", owner, block=True)["metadata"],
                "finalizers": ["test.scaleset.dev/hold"],
            },
        },
    )

    response = client.delete(cm_path(ns, "owner"), params={"propagationPolicy": "Foreground"})

    assert response.status_code == 200
    held = response.json()
    assert held["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert held["metadata"]["deletionTimestamp"]
    eventually_sync(
        lambda: bool(client.get(cm_path(ns, "child")).json()["metadata"].get("deletionTimestamp")),
        within=10.0,
    )
    assert _exists(client, ns, "owner")  # the blocking child is still there
    client.patch(cm_path(ns, "child"), json={"metadata": {"finalizers": None}}, headers=MERGE)
    eventually_sync(lambda: not _exists(client, ns, "owner"), within=10.0)


def test_orphan_deletion_keeps_dependents_without_the_reference(
    client: httpx2.Client, ns: str
) -> None:
    owner = client.post(cm_path(ns), json=configmap("owner")).json()
    client.post(cm_path(ns), json=_owned("child", owner))

    response = client.delete(cm_path(ns, "owner"), params={"propagationPolicy": "Orphan"})

    assert response.status_code == 200
    assert response.json()["metadata"]["finalizers"] == ["orphan"]
    eventually_sync(lambda: not _exists(client, ns, "owner"), within=10.0)
    child = client.get(cm_path(ns, "child")).json()
    assert "ownerReferences" not in child["metadata"]


def test_dependent_of_a_missing_owner_is_collected(client: httpx2.Client, ns: str) -> None:
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}}

    created = client.post(cm_path(ns), json=_owned("orphaned", ghost))

    assert created.status_code == 201
    eventually_sync(lambda: not _exists(client, ns, "orphaned"), within=10.0)


def test_dependent_keeps_living_while_another_owner_remains(client: httpx2.Client, ns: str) -> None:
    first = client.post(cm_path(ns), json=configmap("first")).json()
    second = client.post(cm_path(ns), json=configmap("second")).json()
    body = _owned("shared", first)
    body["metadata"]["ownerReferences"].append(
        _owned("x", second)["metadata"]["ownerReferences"][0]
    )
    client.post(cm_path(ns), json=body)

    client.delete(cm_path(ns, "first"))

    eventually_sync(
        lambda: (
            [
                r["name"]
                for r in client.get(cm_path(ns, "shared")).json()["metadata"]["ownerReferences"]
            ]
            == ["second"]
        ),
        within=10.0,
    )


def test_namespace_deletion_removes_content_then_the_namespace(
    client: httpx2.Client, ns: str
) -> None:
    client.post(cm_path(ns), json=configmap("a"))
    client.post(cm_path(ns), json=configmap("held", finalizers=["test.scaleset.dev/hold"]))

    response = client.delete(f"/api/v1/namespaces/{ns}")

    assert response.status_code == 200
    assert response.json()["status"]["phase"] == "Terminating"
    eventually_sync(lambda: not _exists(client, ns, "a"), within=10.0)
    again = client.delete(f"/api/v1/namespaces/{ns}")
    assert again.status_code == 200
    assert again.json()["status"]["phase"] == "Terminating"
    refused = client.post(cm_path(ns), json=configmap("late"))
    assert refused.status_code == 403
    assert refused.json()["reason"] == "Forbidden"
    assert client.get(f"/api/v1/namespaces/{ns}").status_code == 200  # held by the finalizer
    client.patch(cm_path(ns, "held"), json={"metadata": {"finalizers": None}}, headers=MERGE)
    eventually_sync(lambda: client.get(f"/api/v1/namespaces/{ns}").status_code == 404, within=10.0)
