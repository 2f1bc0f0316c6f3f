"""Helpers for the simulated kubelet's tests: the ``start_kubelet`` fixture's type, pod
manifests, bounded waits on the API server (event-driven: a watch on the one pod), and readers
for the status shapes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey, WatchEvent
from scaleset.kube.resources import EVENT, POD

SIM_LABEL = {"sim": "yes"}
SELECTOR = "sim=yes"
BUSYBOX = "busybox:1.36"

KubeletFactory = Callable[..., AbstractAsyncContextManager[SimulatedKubelet]]
"""The ``start_kubelet`` fixture: ``async with start_kubelet(**overrides) as kubelet``."""


def container(name: str = "main", image: str = BUSYBOX, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **fields}


def pod_manifest(
    name: str,
    *,
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    restart_policy: str = "Never",
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    node_name: str | None = None,
    grace: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "containers": containers or [container()],
    }
    if init:
        spec["initContainers"] = init
    if volumes:
        spec["volumes"] = volumes
    if node_name:
        spec["nodeName"] = node_name
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    metadata: dict[str, Any] = {
        "name": name,
        "labels": dict(SIM_LABEL if labels is None else labels),
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


async def create_pod(client: KubeClient, namespace: str, manifest: dict[str, Any]) -> KubeObject:
    return await client.create(POD, manifest, namespace=namespace)


def _watch_pod(
    client: KubeClient, namespace: str, name: str, seen: KubeObject, within: float
) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
    """Changes to one pod after the version ``seen``, for at most ``within`` seconds."""
    return client.watch(
        POD,
        namespace=namespace,
        resource_version=seen.resource_version,
        field_selector=f"metadata.name={name}",
        timeout_seconds=max(1, int(within)),
    )


async def wait_pod(
    client: KubeClient,
    namespace: str,
    name: str,
    condition: Callable[[KubeObject], bool],
    what: str,
    *,
    within: float = 15.0,
) -> KubeObject:
    """The pod once ``condition`` holds for it (watching it; at most ``within`` seconds).
    A condition that raises ``AssertionError`` (a status field not there yet) does not hold."""
    key = ObjectKey(namespace, name)

    def holds(pod: KubeObject) -> bool:
        try:
            return condition(pod)
        except AssertionError:
            return False

    last: KubeObject | None = None
    try:
        async with asyncio.timeout(within):
            while True:
                last = await client.get(POD, key)
                if holds(last):
                    return last
                async with _watch_pod(client, namespace, name, last, within) as events:
                    async for event in events:
                        if event.type in ("ADDED", "MODIFIED"):
                            last = event.object
                            if holds(last):
                                return last
    except TimeoutError:
        status = last.status if last is not None else None
        message = f"pod {namespace}/{name}: {what} not reached; last status {status}"
        raise AssertionError(message) from None


async def wait_gone(client: KubeClient, namespace: str, name: str, *, within: float = 15.0) -> None:
    key = ObjectKey(namespace, name)
    try:
        async with asyncio.timeout(within):
            while True:
                try:
                    pod = await client.get(POD, key)
                except NotFound:
                    return
                async with _watch_pod(client, namespace, name, pod, within) as events:
                    async for event in events:
                        if event.type == "DELETED":
                            return
    except TimeoutError:
        raise AssertionError(f"pod {namespace}/{name} still exists after {within}s") from None


async def wait_event(
    client: KubeClient, namespace: str, reason: str, message: str, *, within: float = 15.0
) -> KubeObject:
    """The Event with ``reason`` and ``message`` in ``namespace`` (watching; bounded)."""

    def matches(event: KubeObject) -> bool:
        return event.raw.get("reason") == reason and event.raw.get("message") == message

    try:
        async with asyncio.timeout(within):
            while True:
                listed = await client.list(EVENT, namespace=namespace)
                for item in listed.items:
                    if matches(item):
                        return item
                async with client.watch(
                    EVENT,
                    namespace=namespace,
                    resource_version=listed.resource_version,
                    timeout_seconds=max(1, int(within)),
                ) as events:
                    async for change in events:
                        if change.type in ("ADDED", "MODIFIED") and matches(change.object):
                            return change.object
    except TimeoutError:
        raise AssertionError(f"no {reason} event {message!r} in {namespace}") from None


async def advance(clock: ManualClock, seconds: float) -> None:
    """Move the kubelet's clock once something sleeps on it (the kubelet parked on a timer)."""
    await eventually(
        lambda: clock.sleepers > 0, within=10.0, what="the kubelet waiting on its clock"
    )
    clock.advance(seconds)


def phase(pod: KubeObject) -> str:
    return str(pod.status.get("phase", ""))


def condition(pod: KubeObject, kind: str) -> dict[str, Any]:
    for entry in pod.status.get("conditions") or []:
        if entry.get("type") == kind:
            return dict(entry)
    raise AssertionError(f"pod {pod.key} has no {kind} condition: {pod.status}")


def statuses(pod: KubeObject, field: str = "containerStatuses") -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in pod.status.get(field) or []}


def container_status(pod: KubeObject, name: str, *, init: bool = False) -> dict[str, Any]:
    field = "initContainerStatuses" if init else "containerStatuses"
    found = statuses(pod, field).get(name)
    if found is None:
        raise AssertionError(f"pod {pod.key} has no {field} entry {name!r}: {pod.status}")
    return found


def state_of(pod: KubeObject, name: str, *, init: bool = False) -> tuple[str, dict[str, Any]]:
    """(``waiting``/``running``/``terminated``, its body) of one container."""
    state = container_status(pod, name, init=init).get("state") or {}
    assert len(state) == 1, f"a container state has exactly one key: {state}"
    kind, body = next(iter(state.items()))
    return kind, body


def waiting_reason(pod: KubeObject, name: str, *, init: bool = False) -> str | None:
    kind, body = state_of(pod, name, init=init)
    return str(body.get("reason")) if kind == "waiting" else None


def terminated(pod: KubeObject, name: str, *, init: bool = False) -> dict[str, Any] | None:
    kind, body = state_of(pod, name, init=init)
    return body if kind == "terminated" else None


def is_running(pod: KubeObject, name: str = "main", *, init: bool = False) -> bool:
    try:
        return state_of(pod, name, init=init)[0] == "running"
    except AssertionError:
        return False
