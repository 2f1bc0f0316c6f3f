"""Pods as the real registry treats them: defaults, binding, status isolation, graceful delete."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from tests.integration.embedded_apiserver.rest import MERGE, STRATEGIC, pod, pod_path


def _bind(client: httpx2.Client, ns: str, name: str, node: str = "node-1") -> httpx2.Response:
    return client.post(
        pod_path(ns, name, "binding"),
        json={
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        },
    )


def _events_after(client: httpx2.Client, ns: str, rv: str, count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with client.stream(
        "GET",
        pod_path(ns),
        params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "10"},
    ) as response:
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def test_create_applies_the_real_defaults(client: httpx2.Client, ns: str) -> None:
    created = client.post(pod_path(ns), json=pod("p")).json()

    spec = created["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert {t["key"] for t in spec["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert "generation" not in created["metadata"]


def test_unbound_pod_is_deleted_at_once(client: httpx2.Client, ns: str) -> None:
    rv = client.post(pod_path(ns), json=pod("p")).json()["metadata"]["resourceVersion"]

    deleted = client.delete(pod_path(ns, "p"))

    assert deleted.status_code == 200
    assert client.get(pod_path(ns, "p")).status_code == 404
    events = _events_after(client, ns, rv, 2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert events[0]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0


def test_bound_pod_waits_for_a_grace_zero_delete(client: httpx2.Client, ns: str) -> None:
    client.post(pod_path(ns), json=pod("p", terminationGracePeriodSeconds=45))
    assert _bind(client, ns, "p").status_code == 201
    bound = client.get(pod_path(ns, "p")).json()
    assert bound["spec"]["nodeName"] == "node-1"
    assert [c["type"] for c in bound["status"]["conditions"]] == ["PodScheduled"]

    first = client.delete(pod_path(ns, "p"))
    still = client.get(pod_path(ns, "p"))
    shorter = client.delete(pod_path(ns, "p"), params={"gracePeriodSeconds": "10"})
    confirmed = client.delete(pod_path(ns, "p"), params={"gracePeriodSeconds": "0"})

    assert first.status_code == 200
    assert first.json()["metadata"]["deletionGracePeriodSeconds"] == 45
    assert still.status_code == 200
    assert still.json()["metadata"]["deletionTimestamp"]
    assert shorter.json()["metadata"]["deletionGracePeriodSeconds"] == 10
    assert confirmed.status_code == 200
    assert client.get(pod_path(ns, "p")).status_code == 404


def test_binding_an_already_bound_pod_conflicts(client: httpx2.Client, ns: str) -> None:
    client.post(pod_path(ns), json=pod("p"))
    _bind(client, ns, "p")

    again = _bind(client, ns, "p", "node-2")

    assert again.status_code == 409
    assert again.json()["reason"] == "Conflict"


def test_finished_bound_pod_is_deleted_at_once(client: httpx2.Client, ns: str) -> None:
    client.post(pod_path(ns), json=pod("p"))
    _bind(client, ns, "p")
    current = client.get(pod_path(ns, "p")).json()
    client.put(pod_path(ns, "p", "status"), json={**current, "status": {"phase": "Succeeded"}})

    client.delete(pod_path(ns, "p"))

    assert client.get(pod_path(ns, "p")).status_code == 404


def test_status_writes_keep_the_spec_and_main_writes_keep_the_status(
    client: httpx2.Client, ns: str
) -> None:
    client.post(pod_path(ns), json=pod("p"))

    via_status = client.patch(
        pod_path(ns, "p", "status"),
        json={
            "spec": {"activeDeadlineSeconds": 5},
            "status": {"phase": "Running"},
            "metadata": {"labels": {"seen": "yes"}},
        },
        headers=MERGE,
    ).json()
    via_main = client.patch(
        pod_path(ns, "p"), json={"status": {"phase": "Failed"}}, headers=MERGE
    ).json()

    assert "activeDeadlineSeconds" not in via_status["spec"]
    assert via_status["status"]["phase"] == "Running"
    assert via_status["metadata"]["labels"] == {"seen": "yes"}  # pods/status keeps labels
    assert via_main["status"]["phase"] == "Running"


def test_spec_is_immutable_except_images(client: httpx2.Client, ns: str) -> None:
    client.post(pod_path(ns), json=pod("p"))

    image = client.patch(
        pod_path(ns, "p"),
        json={"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}},
        headers=STRATEGIC,
    )
    env = client.patch(
        pod_path(ns, "p"),
        json={"spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}},
        headers=STRATEGIC,
    )

    assert image.status_code == 200
    assert image.json()["spec"]["containers"][0]["image"] == "busybox:1.37"
    assert env.status_code == 422
    assert env.json()["details"]["causes"][0]["field"] == "spec"


def test_strategic_merge_patch_merges_containers_by_name(client: httpx2.Client, ns: str) -> None:
    body = pod("p")
    body["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
    client.post(pod_path(ns), json=body)

    patched = client.patch(
        pod_path(ns, "p"),
        json={
            "metadata": {"finalizers": ["a.scaleset.dev/x"]},
            "spec": {"containers": [{"name": "side", "image": "busybox:1.37"}]},
        },
        headers=STRATEGIC,
    ).json()

    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [
        ("c", "busybox:1.36"),
        ("side", "busybox:1.37"),
    ]
    assert patched["metadata"]["finalizers"] == ["a.scaleset.dev/x"]


def test_field_selectors_on_pods(client: httpx2.Client, ns: str) -> None:
    client.post(pod_path(ns), json=pod("bound"))
    client.post(pod_path(ns), json=pod("loose"))
    _bind(client, ns, "bound", "node-7")

    on_node = client.get(pod_path(ns), params={"fieldSelector": "spec.nodeName=node-7"}).json()
    unbound = client.get(pod_path(ns), params={"fieldSelector": "spec.nodeName="}).json()
    pending = client.get(
        pod_path(ns), params={"fieldSelector": "status.phase=Pending,metadata.name!=bound"}
    ).json()

    assert [p["metadata"]["name"] for p in on_node["items"]] == ["bound"]
    assert [p["metadata"]["name"] for p in unbound["items"]] == ["loose"]
    assert [p["metadata"]["name"] for p in pending["items"]] == ["loose"]
