"""Fixtures for the simulated kubelet's tests, on both backends (``kube_backend``):
a ``KubeClient`` on the backend, a ``ManualClock`` for the kubelet, and a running kubelet
(one node, the test's namespace, pods labelled ``sim=yes``) whose status writes must all be
accepted by the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.integration.kubelet.pods import SELECTOR, KubeletFactory
from tests.plugins.kube_backends import KubeBackend

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import KubeletSettings, SimulatedKubelet
from scaleset.kube import ClientSettings, KubeClient


@pytest.fixture(scope="session")
async def client(kube_backend: KubeBackend) -> AsyncIterator[KubeClient]:
    settings = ClientSettings(qps=500.0, burst=1000, field_manager="scaleset-kubelet-tests")
    async with KubeClient.from_kubeconfig(kube_backend.kubeconfig_path, settings=settings) as kc:
        yield kc


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def start_kubelet(client: KubeClient, namespace: str, clock: ManualClock) -> KubeletFactory:
    """``async with start_kubelet(**overrides) as kubelet``; on exit, asserts that the server
    accepted every status write."""

    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[SimulatedKubelet]:
        options: dict[str, Any] = {
            "nodes": ["sim-node-1"],
            "namespaces": [namespace],
            "label_selector": SELECTOR,
            "clock": clock,
            "settings": KubeletSettings(),
            **overrides,
        }
        async with SimulatedKubelet(client, **options) as kubelet:
            yield kubelet
            assert kubelet.rejected_writes == []
            assert kubelet.directive_errors == []

    return start


@pytest.fixture
async def kubelet(start_kubelet: KubeletFactory) -> AsyncIterator[SimulatedKubelet]:
    async with start_kubelet() as running:
        yield running
