"""A reconcile that overruns its deadline is cancelled, counted, logged and re-queued with
back-off, and the worker it held goes on to the next key: one hung object (a tenant whose
GitHub never answers) cannot hold a controller's workers for ever."""

from __future__ import annotations

import asyncio
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
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP
from scaleset.logs import event_fields
from scaleset.runtime.leader import LeaderElectionConfig
from scaleset.runtime.manager import ManagerSettings

DEADLINE = 0.3
"""Real seconds (the deadline bounds hung I/O, as the GitHub client's attempt deadlines do)."""


def labelled(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"deadline": "1"}}}


async def test_an_overrunning_reconcile_is_cancelled_and_the_worker_moves_on(
    kube_backend: KubeBackend,
    client: KubeClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    metrics = RuntimeMetrics(CollectorRegistry())
    history: list[str] = []
    never = asyncio.Event()

    async def reconcile(key: ObjectKey) -> None:
        history.append(f"start {key.name}")
        if key.name == "hung":
            try:
                await never.wait()  # a call that never answers
            except asyncio.CancelledError:
                history.append("cancelled hung")
                raise
        history.append(f"done {key.name}")

    def counted(result: str) -> float:
        value = metrics.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "tenants", "result": result}
        )
        return value or 0.0

    async with make_client(kube_backend, clock=clock) as own:
        manager = manual_manager(own, namespace, "deadline", clock, metrics=metrics)
        controller = manager.controller(
            "tenants",
            for_kind=CONFIG_MAP,
            reconcile=reconcile,
            label_selector="deadline=1",
            workers=1,
            reconcile_deadline=DEADLINE,
        )
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, labelled("hung", namespace))
            await eventually(lambda: "start hung" in history, what="the hung reconcile started")
            await client.create(CONFIG_MAP, labelled("other", namespace))
            await eventually(lambda: "done other" in history, what="'other' reconciled")
            # one worker: 'other' ran only once the deadline had freed it
            assert history[:3] == ["start hung", "cancelled hung", "start other"]
            assert counted("deadline") >= 1
            errors = metrics.registry.get_sample_value(
                "controller_runtime_reconcile_errors_total", {"controller": "tenants"}
            )
            assert errors is not None
            assert errors >= 1
            # re-queued with back-off (on the clock): it runs (and hangs) again
            await eventually(
                lambda: history.count("start hung") >= 2, clock=clock, max_step=1.0, what="retried"
            )
            never.set()  # let it finish, so the manager stops at once
            assert controller.workers == 1
    overran = [
        record
        for record in caplog.records
        if event_fields(record).get("event") == "reconcile ran past its deadline; cancelled"
    ]
    assert len(overran) >= 1, "the overrun was not logged"
    fields = event_fields(overran[0])
    assert (fields["name"], fields["deadline_seconds"]) == ("hung", DEADLINE)
    assert overran[0].levelno == logging.WARNING
    assert overran[0].exc_info is None  # an overrun is not a crash: no traceback


async def test_a_reconcile_that_raises_timeout_itself_is_an_error_not_an_overrun(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    clock = ManualClock()
    metrics = RuntimeMetrics(CollectorRegistry())
    calls: list[str] = []

    async def reconcile(key: ObjectKey) -> None:
        calls.append(key.name)
        raise TimeoutError("the reconcile's own call timed out")

    async with make_client(kube_backend, clock=clock) as own:
        manager = manual_manager(own, namespace, "own-timeout", clock, metrics=metrics)
        manager.controller(
            "own",
            for_kind=CONFIG_MAP,
            reconcile=reconcile,
            label_selector="deadline=1",
            reconcile_deadline=DEADLINE,
        )
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, labelled("x", namespace))
            await eventually(lambda: calls == ["x"], what="one reconcile")
            await eventually(
                lambda: (
                    metrics.registry.get_sample_value(
                        "controller_runtime_reconcile_total",
                        {"controller": "own", "result": "error"},
                    )
                    == 1
                ),
                what="counted as an error",
            )
    assert (
        metrics.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "own", "result": "deadline"}
        )
        is None
    )


def test_the_manager_default_deadline_is_inside_the_stall_detector() -> None:
    """A hung reconcile is cancelled before liveness would restart the pod for it."""
    settings = ManagerSettings(
        election=LeaderElectionConfig(lease_name="l", namespace="n", identity="i")
    )
    assert settings.reconcile_deadline is not None
    assert settings.reconcile_deadline < settings.stall_seconds
