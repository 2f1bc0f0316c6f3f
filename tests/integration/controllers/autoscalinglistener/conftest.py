"""Fixtures of the AutoscalingListener controller tests: the ``ManualClock``, the fake GitHub
service, and the ``World`` (``world.py``) in a fresh namespace (``split_world``: the scale set
namespace apart from the controller namespace)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from tests.integration.controllers.autoscalinglistener.world import PAT, SCALE_SET, World
from tests.plugins.kube_backends import KubeBackend, provide_namespace_defaults
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube_fixtures import actions_crds, client

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import NAMESPACE

__all__ = ["actions_crds", "client"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def fake(clock: ManualClock) -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub(clock=clock, poll_hold_seconds=0.05) as server:
        server.add_pat(register_secret(PAT))
        register_secret_source(server.control.issued_secrets)
        yield server


@pytest.fixture
async def world(
    kube_backend: KubeBackend,
    client: KubeClient,
    actions_crds: None,
    namespace: str,
    clock: ManualClock,
    fake: FakeGitHub,
) -> World:
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), SCALE_SET)
    world = World(kube_backend, client, namespace, clock, fake, scale_set_id)
    await world.github_secret()
    await world.scale_set_objects()
    return world


@pytest.fixture
async def split_world(
    kube_backend: KubeBackend,
    kube_http: httpx2.AsyncClient,
    client: KubeClient,
    actions_crds: None,
    namespace: str,
    clock: ManualClock,
    fake: FakeGitHub,
) -> AsyncIterator[World]:
    """As ``world``, with the scale set in its own namespace (ARC's usual layout: listeners in
    ``arc-systems``, runners in ``arc-runners``)."""
    runners = f"{namespace[:50]}-runners"
    await client.create(NAMESPACE, {"metadata": {"name": runners}})
    await provide_namespace_defaults(kube_backend, kube_http, runners)
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), SCALE_SET)
    world = World(kube_backend, client, namespace, clock, fake, scale_set_id, runners)
    await world.github_secret()
    await world.scale_set_objects()
    yield world
    await client.delete(NAMESPACE, ObjectKey("", runners))
