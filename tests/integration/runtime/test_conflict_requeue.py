"""A Conflict ending a reconcile is the optimistic lock doing its job (someone else wrote
first): the key is re-queued with back-off and the line says so at debug level, without a
traceback — never an error-level "reconcile failed" (the demo printed one, traceback and all,
for every such race)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP
from scaleset.logs import event_fields


def labelled(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"conflict": "1"}}}


async def test_a_conflict_is_a_quiet_requeue(
    kube_backend: KubeBackend,
    client: KubeClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    clock = ManualClock()
    metrics = RuntimeMetrics(CollectorRegistry())
    calls: list[str] = []

    async def reconcile(key: ObjectKey) -> None:
        calls.append(key.name)
        if len(calls) == 1:
            raise Conflict(409, "Conflict", 'Operation cannot be fulfilled on configmaps "c"')

    async with make_client(kube_backend, clock=clock) as own:
        manager = manual_manager(own, namespace, "conflicts", clock, metrics=metrics)
        manager.controller(
            "racy", for_kind=CONFIG_MAP, reconcile=reconcile, label_selector="conflict=1"
        )
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, labelled("c", namespace))
            await eventually(
                lambda: len(calls) == 2, clock=clock, max_step=1.0, what="re-queued and retried"
            )
    ours = [r for r in caplog.records if r.name == "scaleset.runtime.controller"]
    assert not [r for r in ours if r.levelno >= logging.WARNING], "a conflict is not a failure"
    requeued = [r for r in ours if event_fields(r).get("event") == "reconcile met a conflict"]
    assert len(requeued) == 1
    assert requeued[0].levelno == logging.DEBUG
    assert requeued[0].exc_info is None
    assert "Operation cannot be fulfilled" in str(event_fields(requeued[0])["conflict"])
    counted = metrics.registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "racy", "result": "conflict"}
    )
    assert counted == 1
