"""Watch and paging details: consistent pages, replays, selector transitions, bookmarks,
timeouts, the legacy /watch/ path and the retained history window."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from tests.integration.embedded_apiserver.rest import MERGE, ROOT_CA, cm_path, configmap

from scaleset.embedded.apiserver import DEFAULT_TOKEN, serve_in_thread


def _stream(client: httpx2.Client, path: str, count: int | None = None, **params: str) -> list[Any]:
    events: list[Any] = []
    with client.stream("GET", path, params=params) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))
            if count is not None and len(events) == count:
                break
    return events


def test_pages_are_a_consistent_snapshot(client: httpx2.Client, ns: str) -> None:
    for name in ("b", "c", "d", "e", "f"):
        client.post(cm_path(ns), json=configmap(name))

    first = client.get(cm_path(ns), params={"limit": "2"}).json()
    client.post(cm_path(ns), json=configmap("a"))
    client.delete(cm_path(ns, "e"))
    second = client.get(
        cm_path(ns), params={"limit": "2", "continue": first["metadata"]["continue"]}
    )
    third = client.get(
        cm_path(ns), params={"limit": "2", "continue": second.json()["metadata"]["continue"]}
    ).json()

    assert [i["metadata"]["name"] for i in first["items"]] == ["b", "c"]
    assert first["metadata"]["remainingItemCount"] == 4
    assert [i["metadata"]["name"] for i in second.json()["items"]] == ["d", "e"]
    assert [i["metadata"]["name"] for i in third["items"]] == ["f", ROOT_CA]
    assert "continue" not in third["metadata"]
    assert second.json()["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_list_items_of_built_in_kinds_carry_no_kind(client: httpx2.Client, ns: str) -> None:
    client.post(cm_path(ns), json=configmap("a"))

    listed = client.get(cm_path(ns)).json()

    assert (listed["kind"], listed["apiVersion"]) == ("ConfigMapList", "v1")
    assert "kind" not in listed["items"][0]
    assert int(listed["metadata"]["resourceVersion"]) >= int(
        listed["items"][0]["metadata"]["resourceVersion"]
    )


def test_watch_replays_from_a_resource_version(client: httpx2.Client, ns: str) -> None:
    start = client.post(cm_path(ns), json=configmap("a")).json()["metadata"]["resourceVersion"]
    client.patch(cm_path(ns, "a"), json={"data": {"k": "1"}}, headers=MERGE)
    client.post(cm_path(ns), json=configmap("b"))
    client.delete(cm_path(ns, "a"))

    events = _stream(client, cm_path(ns), 3, watch="1", resourceVersion=start)

    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    assert events[0]["object"]["kind"] == "ConfigMap"
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert versions[0] > int(start)


def test_watch_without_a_version_starts_with_what_exists(client: httpx2.Client, ns: str) -> None:
    client.post(cm_path(ns), json=configmap("a"))
    client.post(cm_path(ns), json=configmap("b"))

    events = _stream(client, cm_path(ns), watch="true", timeoutSeconds="1")

    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("ADDED", ROOT_CA),
    ]


def test_label_selector_transitions_become_added_and_deleted(
    client: httpx2.Client, ns: str
) -> None:
    start = client.post(cm_path(ns), json=configmap("a")).json()["metadata"]["resourceVersion"]
    client.patch(cm_path(ns, "a"), json={"metadata": {"labels": {"team": "x"}}}, headers=MERGE)
    client.patch(cm_path(ns, "a"), json={"data": {"k": "v"}}, headers=MERGE)
    client.patch(cm_path(ns, "a"), json={"metadata": {"labels": {"team": "y"}}}, headers=MERGE)

    events = _stream(
        client, cm_path(ns), 3, watch="1", resourceVersion=start, labelSelector="team=x"
    )

    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]


def test_bookmarks_arrive_before_the_watch_times_out(client: httpx2.Client, ns: str) -> None:
    rv = client.post(cm_path(ns), json=configmap("a")).json()["metadata"]["resourceVersion"]
    params = {
        "watch": "1",
        "resourceVersion": rv,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "3",
    }
    events = []
    with client.stream("GET", cm_path(ns), params=params) as response:
        # progress elsewhere moves the version this watch has seen, as on a busy cluster
        client.post(cm_path("default"), json=configmap(f"elsewhere-{ns}"))
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))

    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) == 1
    assert bookmarks[0]["object"]["kind"] == "ConfigMap"
    assert set(bookmarks[0]["object"]["metadata"]) == {"resourceVersion", "creationTimestamp"}
    assert int(bookmarks[0]["object"]["metadata"]["resourceVersion"]) > int(rv)


def test_no_bookmark_without_progress(client: httpx2.Client, ns: str) -> None:
    rv = client.post(cm_path(ns), json=configmap("a")).json()["metadata"]["resourceVersion"]

    events = _stream(
        client,
        cm_path(ns),
        watch="1",
        resourceVersion=rv,
        allowWatchBookmarks="true",
        timeoutSeconds="3",
    )

    assert events == []


def test_legacy_watch_path_watches_one_object(client: httpx2.Client, ns: str) -> None:
    start = client.post(cm_path(ns), json=configmap("a")).json()["metadata"]["resourceVersion"]
    client.post(cm_path(ns), json=configmap("b"))
    client.patch(cm_path(ns, "a"), json={"data": {"k": "v"}}, headers=MERGE)

    events = _stream(
        client, f"/api/v1/watch/namespaces/{ns}/configmaps/a", 1, resourceVersion=start
    )

    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("MODIFIED", "a")]


def test_history_window_expires_old_versions() -> None:
    with (
        serve_in_thread(history_size=3) as running,
        httpx2.Client(
            base_url=running.url,
            headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"},
            trust_env=False,
        ) as client,
    ):
        first = client.post(cm_path("default"), json=configmap("a")).json()
        for i in range(5):
            client.patch(cm_path("default", "a"), json={"data": {"i": str(i)}}, headers=MERGE)
        recent = client.get(cm_path("default", "a")).json()["metadata"]["resourceVersion"]

        expired = _stream(
            client,
            cm_path("default"),
            watch="1",
            resourceVersion=first["metadata"]["resourceVersion"],
        )
        fine = _stream(
            client, cm_path("default"), watch="1", resourceVersion=recent, timeoutSeconds="1"
        )

    assert [e["type"] for e in expired] == ["ERROR"]
    assert expired[0]["object"]["code"] == 410
    assert expired[0]["object"]["message"].startswith("too old resource version:")
    assert fine == []


def test_future_resource_version_times_out_with_504(client: httpx2.Client, ns: str) -> None:
    response = client.get(cm_path(ns), params={"resourceVersion": "999999999"})

    assert response.status_code == 504
    assert response.json()["reason"] == "Timeout"


def test_exact_list_at_an_older_version_rolls_history_back(client: httpx2.Client, ns: str) -> None:
    client.post(cm_path(ns), json=configmap("a"))
    then = client.post(cm_path(ns), json=configmap("b")).json()["metadata"]["resourceVersion"]
    client.patch(cm_path(ns, "a"), json={"data": {"k": "changed"}}, headers=MERGE)
    client.delete(cm_path(ns, "b"))
    client.post(cm_path(ns), json=configmap("c"))

    exact = client.get(
        cm_path(ns), params={"resourceVersion": then, "resourceVersionMatch": "Exact"}
    ).json()

    assert exact["metadata"]["resourceVersion"] == then
    assert [(i["metadata"]["name"], i.get("data")) for i in exact["items"]][:2] == [
        ("a", None),
        ("b", None),
    ]
    assert [i["metadata"]["name"] for i in exact["items"]][2:] == [ROOT_CA]


def test_resource_version_match_needs_a_resource_version(client: httpx2.Client, ns: str) -> None:
    response = client.get(cm_path(ns), params={"resourceVersionMatch": "Exact"})

    assert response.status_code == 422
    assert response.json()["details"]["causes"][0]["field"] == "resourceVersionMatch"
