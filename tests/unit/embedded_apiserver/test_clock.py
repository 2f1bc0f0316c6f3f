"""An injected clock decides every timestamp the server writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from tests.unit.embedded_apiserver.conftest import pod, pod_path

from scaleset.embedded.apiserver import DEFAULT_TOKEN, serve_in_thread


class FixedClock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment


def test_timestamps_come_from_the_injected_clock() -> None:
    clock = FixedClock(datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC))
    with (
        serve_in_thread(clock=clock) as running,
        httpx.Client(
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
        clock.moment += timedelta(minutes=1)
        deleting = client.delete(pod_path("default", "p")).json()

    assert created.json()["metadata"]["creationTimestamp"] == "2030-01-02T03:04:05Z"
    assert deleting["metadata"]["deletionTimestamp"] == "2030-01-02T03:05:25Z"
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 20
