"""Stopping the server leaves no request handler behind: one whose client went away (a read
timeout while injected latency held it) is cancelled with its connection, as a real API server
cancels the request's context, instead of running on detached from any connection and being
destroyed pending when the server's loop closes (which the task guard reported in a later test).
"""

from __future__ import annotations

import gc
import logging

import httpx2
import pytest
from tests.integration.embedded_apiserver.rest import cm_path

from scaleset.embedded.apiserver import DEFAULT_TOKEN, serve_in_thread

ORPHANED = "Task was destroyed but it is pending"


def test_a_request_its_client_abandoned_does_not_outlive_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="asyncio")
    with serve_in_thread() as api:
        api.server.faults.add_latency(600.0, verb="get", resource="configmaps", name="slow")
        with (
            httpx2.Client(
                base_url=api.url,
                headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"},
                trust_env=False,
            ) as client,
            pytest.raises(httpx2.ReadTimeout),
        ):
            client.get(cm_path("default", "slow"), timeout=0.2)
    gc.collect()
    orphans = [r.getMessage() for r in caplog.records if r.getMessage().startswith(ORPHANED)]
    assert orphans == []
