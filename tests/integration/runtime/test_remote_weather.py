"""A reconcile ended by a remote service that did not answer (GitHub with its retries spent: the
manager's ``remote_weather``) is logged in one warning line without a traceback and retried with
back-off; any other error still logs its traceback, and the controller process counts GitHub's
transport failures as that weather."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.controllers import manager_process
from scaleset.github import RetriesExhausted
from scaleset.kube.client import KubeClient
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP
from scaleset.logs import event_fields


class _Unanswered(Exception):
    """A remote service's retries spent."""


class _Bug(Exception):
    """Anything else."""


def labelled(name: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"weather": "1"}}}


async def test_a_remote_service_that_did_not_answer_is_one_line_and_a_retry(
    kube_backend: KubeBackend,
    client: KubeClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    tries: dict[str, int] = {}

    async def reconcile(key: ObjectKey) -> None:
        tries[key.name] = tries.get(key.name, 0) + 1
        if key.name == "unanswered":
            raise _Unanswered("POST https://github.example/x: 3 attempts, last 503")
        raise _Bug("a bug")

    async with make_client(kube_backend, clock=clock) as own:
        manager = manual_manager(
            own,
            namespace,
            "weather",
            clock,
            metrics=RuntimeMetrics(CollectorRegistry()),
            remote_weather=(_Unanswered,),
        )
        manager.controller(
            "tenants", for_kind=CONFIG_MAP, reconcile=reconcile, label_selector="weather=1"
        )
        async with running(manager):
            await eventually(manager.leading.is_set, what="leading")
            await client.create(CONFIG_MAP, labelled("unanswered", namespace))
            await client.create(CONFIG_MAP, labelled("buggy", namespace))
            await eventually(
                lambda: tries.get("unanswered", 0) >= 2 and tries.get("buggy", 0) >= 1,
                clock=clock,
                max_step=1.0,
                what="the unanswered reconcile retried",
            )
    by_event: dict[str, list[logging.LogRecord]] = {}
    for record in caplog.records:
        by_event.setdefault(str(event_fields(record).get("event")), []).append(record)
    weather = by_event["reconcile interrupted: a remote service did not answer; retrying"]
    assert weather[0].levelno == logging.WARNING
    assert weather[0].exc_info is None  # no traceback
    assert "_Unanswered: POST https://github.example/x" in str(event_fields(weather[0])["error"])
    assert all(event_fields(r)["name"] == "unanswered" for r in weather)
    failed = by_event["reconcile failed"]
    assert failed[0].exc_info is not None  # a bug keeps its traceback
    assert all(event_fields(r)["name"] == "buggy" for r in failed)


async def test_the_controller_process_counts_github_transport_failures_as_weather(
    tmp_path: Path,
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    options = manager_process.ControllerOptions(
        controller_namespace="arc-systems", listener_image="ghcr.io/scaleset/scaleset:test"
    )
    unanswered = RetriesExhausted("POST", "https://api.github.com/x", 3, 503, "")
    async with KubeClient.from_kubeconfig(kubeconfig) as kube:
        manager = manager_process.build_manager(options, kube)
        assert isinstance(unanswered, manager.settings.remote_weather)
        assert all(c.remote_weather == manager.settings.remote_weather for c in manager.controllers)
