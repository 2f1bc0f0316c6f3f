"""The server takes ``scaleset.clock.Clock``: every timestamp it writes comes from that clock."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx2
from tests.integration.embedded_apiserver.rest import pod, pod_path

import scaleset.embedded.apiserver as embedded_apiserver
from scaleset.clock import ManualClock, SystemClock
from scaleset.embedded.apiserver import DEFAULT_TOKEN, EmbeddedApiServer, serve_in_thread


def test_timestamps_come_from_the_injected_manual_clock() -> None:
    clock = ManualClock(wall=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC))
    with (
        serve_in_thread(clock=clock) as running,
        httpx2.Client(
            base_url=running.url,
            headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"},
            trust_env=False,
        ) as client,
    ):
        created = client.post(pod_path("default"), json=pod("p", terminationGracePeriodSeconds=20))
        client.post(
            pod_path("default", "p", "binding"),
            json={"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n"}},
        )
        clock.advance(60)
        deleting = client.delete(pod_path("default", "p")).json()

    assert created.json()["metadata"]["creationTimestamp"] == "2030-01-02T03:04:05Z"
    assert deleting["metadata"]["deletionTimestamp"] == "2030-01-02T03:05:25Z"
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 20


def test_the_server_has_no_clock_of_its_own() -> None:
    # one model of time: the server takes scaleset.clock's Clock and defaults to its SystemClock
    assert not hasattr(embedded_apiserver, "Clock")
    assert not hasattr(embedded_apiserver, "SystemClock")
    assert isinstance(EmbeddedApiServer().clock, SystemClock)
