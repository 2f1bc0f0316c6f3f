"""Events: core/v1 and events.k8s.io/v1 objects can be created about an object and listed."""

from __future__ import annotations

import httpx2
from lightkube import AsyncClient
from lightkube.models.core_v1 import EventSource, ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Event

NOW = "2026-01-02T03:04:05Z"
MICRO_NOW = "2026-01-02T03:04:05.000001Z"


async def test_core_v1_event_create(kube: AsyncClient, namespace: str) -> None:
    subject = await kube.create(ConfigMap(metadata=ObjectMeta(name="c", namespace=namespace)))
    assert subject.metadata is not None
    event = Event(
        metadata=ObjectMeta(generateName="c.", namespace=namespace),
        involvedObject=ObjectReference(
            apiVersion="v1",
            kind="ConfigMap",
            name="c",
            namespace=namespace,
            uid=subject.metadata.uid,
        ),
        reason="RunnerCreated",
        message="created runner pod",
        type="Normal",
        source=EventSource(component="scaleset-controller"),
        count=1,
    )

    created = await kube.create(event)

    assert created.metadata is not None
    assert created.metadata.name
    assert created.metadata.name.startswith("c.")
    listed = [e async for e in kube.list(Event, namespace=namespace)]
    assert [(e.reason, e.involvedObject.name) for e in listed] == [("RunnerCreated", "c")]


async def test_events_k8s_io_v1_event_create(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await kube.create(ConfigMap(metadata=ObjectMeta(name="c", namespace=namespace)))
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "c.1", "namespace": namespace},
        "eventTime": MICRO_NOW,
        "reportingController": "scaleset.dev/controller",
        "reportingInstance": "scaleset-controller-0",
        "action": "Create",
        "reason": "RunnerCreated",
        "note": "created runner pod",
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": namespace},
    }

    response = await kube_http.post(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=body
    )

    assert response.status_code == 201, response.text
    created = response.json()
    assert created["reason"] == "RunnerCreated"
    assert created["regarding"]["name"] == "c"
    # the same event is visible through core/v1
    core = await kube.get(Event, "c.1", namespace=namespace)
    assert (core.reason, core.message, core.involvedObject.name) == (
        "RunnerCreated",
        "created runner pod",
        "c",
    )


async def test_events_k8s_io_v1_event_without_event_time_is_invalid(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "c.1", "namespace": namespace},
        "reportingController": "scaleset.dev/controller",
        "reportingInstance": "scaleset-controller-0",
        "action": "Create",
        "reason": "RunnerCreated",
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": namespace},
    }

    response = await kube_http.post(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=body
    )

    assert response.status_code == 422
    assert response.json()["reason"] == "Invalid"
