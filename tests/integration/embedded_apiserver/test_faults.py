"""Fault hooks: injected failures, forced conflicts, read-modify-write races, dropped watches,
compacted history, latency and request counts — through the Python API and the HTTP endpoint."""

from __future__ import annotations

import json

import httpx2
import pytest
from tests.integration.embedded_apiserver.rest import MERGE, ROOT_CA, cm_path, configmap

from scaleset.embedded.apiserver import RunningApiServer


def test_fail_next_answers_n_matching_requests_then_recovers(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    api.server.faults.fail_next(2, 503, verb="create", resource="configmaps", namespace=ns)

    first = client.post(cm_path(ns), json=configmap("a"))
    second = client.post(cm_path(ns), json=configmap("a"))
    third = client.post(cm_path(ns), json=configmap("a"))

    assert [first.status_code, second.status_code, third.status_code] == [503, 503, 201]
    assert first.json()["kind"] == "Status"
    assert first.json()["reason"] == "ServiceUnavailable"
    # the failed attempts stored nothing
    listed = client.get(cm_path(ns)).json()["items"]
    assert [item["metadata"]["name"] for item in listed] == ["a", ROOT_CA]


def test_fail_next_leaves_other_requests_alone(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    api.server.faults.fail_next(1, 500, verb="delete", resource="pods")

    created = client.post(cm_path(ns), json=configmap("a"))
    read = client.get(cm_path(ns, "a"))

    assert (created.status_code, read.status_code) == (201, 200)


def test_conflict_next_forces_409_conflict_on_a_write(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    client.post(cm_path(ns), json=configmap("a"))
    api.server.faults.conflict_next(resource="configmaps", name="a")

    forced = client.patch(cm_path(ns, "a"), json={"data": {"k": "v"}}, headers=MERGE)
    retried = client.patch(cm_path(ns, "a"), json={"data": {"k": "v"}}, headers=MERGE)

    assert forced.status_code == 409
    assert forced.json()["reason"] == "Conflict"
    assert retried.status_code == 200
    assert retried.json()["data"] == {"k": "v"}


def test_race_callback_runs_between_read_and_write(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    client.post(cm_path(ns), json=configmap("a", labels={"owner": "none"}))
    ran: list[str] = []

    def intruder() -> None:
        with httpx2.Client(base_url=api.url, headers=client.headers, trust_env=False) as other:
            other.patch(cm_path(ns, "a"), json={"data": {"by": "intruder"}}, headers=MERGE)
        ran.append("intruder")

    api.server.faults.between_read_and_write(intruder, resource="configmaps", name="a")
    read = client.get(cm_path(ns, "a")).json()
    stale_rv = read["metadata"]["resourceVersion"]
    write = client.patch(
        cm_path(ns, "a"),
        json={"metadata": {"resourceVersion": stale_rv}, "data": {"by": "me"}},
        headers=MERGE,
    )

    assert ran == ["intruder"]
    assert write.status_code == 409
    assert client.get(cm_path(ns, "a")).json()["data"] == {"by": "intruder"}
    # one-shot: the next read-modify-write goes through
    fresh = client.get(cm_path(ns, "a")).json()["metadata"]["resourceVersion"]
    again = client.patch(
        cm_path(ns, "a"),
        json={"metadata": {"resourceVersion": fresh}, "data": {"by": "me"}},
        headers=MERGE,
    )
    assert again.status_code == 200


def test_race_callback_waits_for_a_read_first(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    client.post(cm_path(ns), json=configmap("a"))
    ran: list[str] = []
    api.server.faults.between_read_and_write(
        lambda: ran.append("x"), resource="configmaps", name="a"
    )

    client.patch(cm_path(ns, "a"), json={"data": {"k": "1"}}, headers=MERGE)
    assert ran == []
    client.get(cm_path(ns, "a"))
    client.patch(cm_path(ns, "a"), json={"data": {"k": "2"}}, headers=MERGE)
    assert ran == ["x"]


def test_request_counts_by_verb_and_resource(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    faults = api.server.faults
    before_create = faults.request_count("create", "configmaps")
    before_get = faults.request_count("get", "configmaps")

    client.post(cm_path(ns), json=configmap("a"))
    client.post(cm_path(ns), json=configmap("b"))
    client.get(cm_path(ns, "a"))

    assert faults.request_count("create", "configmaps") == before_create + 2
    assert faults.request_count("get", "configmaps") == before_get + 1
    assert faults.request_counts()[("create", "configmaps")] == before_create + 2


def test_latency_delays_matching_requests(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    api.server.faults.add_latency(5.0, verb="get", resource="configmaps", name="slow")

    with pytest.raises(httpx2.ReadTimeout):
        client.get(cm_path(ns, "slow"), timeout=0.2)
    fast = client.get(cm_path(ns, "other"), timeout=5.0)
    assert fast.status_code == 404


def _watch_lines(client: httpx2.Client, path: str, **params: str) -> list[dict[str, object]]:
    events = []
    with client.stream("GET", path, params={"watch": "true", **params}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))
    return events


def test_drop_watches_ends_open_streams(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    created = client.post(cm_path(ns), json=configmap("a")).json()
    rv = created["metadata"]["resourceVersion"]
    received: list[dict[str, object]] = []
    with client.stream(
        "GET", cm_path(ns), params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "60"}
    ) as response:
        client.patch(cm_path(ns, "a"), json={"data": {"k": "v"}}, headers=MERGE)
        for line in response.iter_lines():
            if line:
                received.append(json.loads(line))
                api.server.faults.drop_watches()
    assert [event["type"] for event in received] == ["MODIFIED"]


def test_compact_makes_older_watches_gone(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    old_rv = client.post(cm_path(ns), json=configmap("a")).json()["metadata"]["resourceVersion"]
    client.patch(cm_path(ns, "a"), json={"data": {"k": "v"}}, headers=MERGE)

    api.server.faults.compact()
    events = _watch_lines(client, cm_path(ns), resourceVersion=old_rv, timeoutSeconds="5")

    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert isinstance(status, dict)
    assert (status["code"], status["reason"]) == (410, "Expired")


def test_http_control_endpoint(api: RunningApiServer, client: httpx2.Client, ns: str) -> None:
    command = {"action": "fail", "count": 1, "code": 500, "verb": "create", "namespace": ns}
    assert client.post("/_scaleset/faults", json=command).json() == {"ok": True}

    failed = client.post(cm_path(ns), json=configmap("a"))
    succeeded = client.post(cm_path(ns), json=configmap("a"))
    counts = client.get("/_scaleset/faults/counts").json()["counts"]
    bad = client.post("/_scaleset/faults", json={"action": "explode"})

    assert (failed.status_code, succeeded.status_code) == (500, 201)
    assert {"verb": "create", "resource": "configmaps"}.items() <= next(
        c for c in counts if c["verb"] == "create" and c["resource"] == "configmaps"
    ).items()
    assert bad.status_code == 400


def test_http_control_endpoint_compacts(
    api: RunningApiServer, client: httpx2.Client, ns: str
) -> None:
    old_rv = client.post(cm_path(ns), json=configmap("a")).json()["metadata"]["resourceVersion"]
    client.patch(cm_path(ns, "a"), json={"data": {"k": "v"}}, headers=MERGE)

    assert client.post("/_scaleset/faults", json={"action": "compact"}).status_code == 200
    events = _watch_lines(client, cm_path(ns), resourceVersion=old_rv, timeoutSeconds="5")

    assert [e["type"] for e in events] == ["ERROR"]
