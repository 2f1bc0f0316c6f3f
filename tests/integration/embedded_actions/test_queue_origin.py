"""The message queue served apart from the tenant API, as github.com serves it (a broker host):
``FakeGitHub(message_queue_host=...)`` (ledger P-MQ-ORIGIN, A-MQ-ORIGIN-ONLY)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from tests.integration.embedded_actions.wire_client import PAT, ScaleSetClient
from tests.plugins.secret_guard import register_secret_source

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub


@pytest.fixture
async def apart() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub(
        clock=ManualClock(), poll_hold_seconds=0.05, message_queue_host="localhost"
    ) as server:
        server.add_pat(PAT)
        register_secret_source(server.control.issued_secrets)
        yield server


async def test_the_queue_has_its_own_host_and_port(apart: FakeGitHub) -> None:
    async with httpx2.AsyncClient(timeout=20.0) as http:
        org = await ScaleSetClient.register(http, apart, apart.config_url("acme"))
        scale_set_id = await org.create_scale_set("arc")
        session = await org.open_session(scale_set_id)
        queue = httpx2.URL(session.queue_url)
        api = httpx2.URL(apart.base_url)
        assert (queue.host, queue.port) != (api.host, api.port)
        assert queue.host == "localhost"
        assert apart.message_queue_base_url == f"http://localhost:{queue.port}"

        assert (await session.poll()).status_code == 202  # served on its origin
        on_api_origin = queue.copy_with(scheme=api.scheme, host=api.host, port=api.port)
        refused = await http.get(on_api_origin, headers=session._mq_headers())
        assert refused.status_code == 404
        admin_on_queue_origin = await http.get(
            f"{apart.message_queue_base_url}/api/v3/meta", headers={"Authorization": f"token {PAT}"}
        )
        assert admin_on_queue_origin.status_code == 404
    assert "A-MQ-ORIGIN-ONLY" in {e.key for e in apart.control.assumptions_relied_on()}


async def test_by_default_the_queue_shares_the_api_origin() -> None:
    async with FakeGitHub(clock=ManualClock(), poll_hold_seconds=0.05) as fake:
        assert fake.message_queue_base_url == fake.base_url
