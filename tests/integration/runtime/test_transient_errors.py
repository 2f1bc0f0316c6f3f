"""An API server that is briefly unwell (a 5xx, a 429, no answer at all) ends a reconcile with
one warning naming what the server said, and the key is retried with back-off: it is the
weather of a production cluster, not a defect, and a platform engineer reading the controller's
log must not meet a Python traceback for it (the chaos soak printed one, error level, for every
injected 503). Anything else still logs "reconcile failed" with its traceback."""

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
from scaleset.kube.errors import KubeTimeout, ServerError, TooManyRequests
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP
from scaleset.logs import event_fields

TRANSIENT = [
    ServerError(503, "ServiceUnavailable", "the server is currently unable to handle the request"),
    TooManyRequests(429, "TooManyRequests", "the server has received too many requests"),
    KubeTimeout("read timed out after 30 s"),
]


def labelled(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"weather": "1"}}}


async def reconcile_twice_failing_first(
    kube_backend: KubeBackend,
    client: KubeClient,
    namespace: str,
    controller: str,
    error: Exception,
    metrics: RuntimeMetrics | None = None,
) -> None:
    """Run a controller whose first reconcile of one ConfigMap raises ``error``, until the
    back-off has brought the key back for a second reconcile."""
    clock = ManualClock()
    calls: list[str] = []

    async def reconcile(key: ObjectKey) -> None:
        calls.append(key.name)
        if len(calls) == 1:
            raise error

    async with make_client(kube_backend, clock=clock) as own:
        manager = manual_manager(own, namespace, controller, clock, metrics=metrics)
        manager.controller(
            controller, for_kind=CONFIG_MAP, reconcile=reconcile, label_selector="weather=1"
        )
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, labelled("c", namespace))
            await eventually(
                lambda: len(calls) == 2, clock=clock, max_step=1.0, what="retried with back-off"
            )


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: type(e).__name__)
async def test_a_transient_api_error_is_one_warning_without_a_traceback(
    kube_backend: KubeBackend,
    client: KubeClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
) -> None:
    caplog.set_level(logging.DEBUG)
    metrics = RuntimeMetrics(CollectorRegistry())
    await reconcile_twice_failing_first(
        kube_backend, client, namespace, "unwell", error, metrics=metrics
    )
    ours = [r for r in caplog.records if r.name == "scaleset.runtime.controller"]
    assert not [r for r in ours if r.levelno >= logging.ERROR]
    warned = [r for r in ours if r.levelno == logging.WARNING]
    assert len(warned) == 1, [event_fields(r) for r in warned]
    assert warned[0].exc_info is None
    assert str(error) in str(event_fields(warned[0]).get("error"))
    counted = metrics.registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "unwell", "result": "error"}
    )
    assert counted == 1


async def test_an_unexpected_error_still_logs_its_traceback(
    kube_backend: KubeBackend,
    client: KubeClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    await reconcile_twice_failing_first(
        kube_backend, client, namespace, "buggy", KeyError("a defect of ours")
    )
    failed = [
        r
        for r in caplog.records
        if r.name == "scaleset.runtime.controller"
        and event_fields(r).get("event") == "reconcile failed"
    ]
    assert len(failed) == 1
    assert failed[0].levelno == logging.ERROR
    assert failed[0].exc_info is not None
