"""The probe server over real HTTP: answers computed on the event loop (a check reads the loop's
state), a stalled loop answered with 503 rather than a stale 200, a check that raises answered
with its type and never its message, HEAD and 404, the registry in Prometheus' text format, and
the address free again after a stop."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter

from scaleset.runtime.probes import Check, ProbeServer


@asynccontextmanager
async def serving(server: ProbeServer) -> AsyncIterator[str]:
    await server.start()
    try:
        yield f"http://127.0.0.1:{server.bound_port}"
    finally:
        await server.stop()


async def get(url: str, method: str = "GET") -> httpx2.Response:
    async with httpx2.AsyncClient(trust_env=False) as http:
        return await http.request(method, url)


def fetch_in_thread(url: str) -> tuple[int, str]:
    """A request made from a thread of its own, so it can be answered while the loop is held."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - http://127.0.0.1
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def test_a_check_runs_on_the_event_loops_thread() -> None:
    threads: list[threading.Thread] = []

    def health() -> tuple[bool, str]:
        threads.append(threading.current_thread())
        return True, "ok"

    def ready() -> tuple[bool, str]:
        return False, "informers not synced: pods"

    async with serving(ProbeServer("127.0.0.1", 0, health=health, ready=ready)) as base:
        healthy = await get(base + "/healthz")
        unready = await get(base + "/readyz?verbose=1")

    assert (healthy.status_code, healthy.text) == (200, "ok\n")
    assert healthy.headers["content-type"] == "text/plain; charset=utf-8"
    assert threads == [threading.current_thread()]  # the loop's thread, not the server's
    assert (unready.status_code, unready.text) == (500, "informers not synced: pods\n")


async def test_a_stalled_loop_is_answered_with_503_not_a_stale_ok() -> None:
    server = ProbeServer("127.0.0.1", 0, health=lambda: (True, "ok"), answer_within=0.05)
    answered = threading.Event()
    result: list[tuple[int, str]] = []

    def probe(url: str) -> None:
        result.append(fetch_in_thread(url))
        answered.set()

    async with serving(server) as base:
        threading.Thread(target=probe, args=(base + "/healthz",), daemon=True).start()
        # The loop is held (a blocking call, as a stalled reconcile would) until the answer
        # is in: the server cannot run the check, and must say so.
        assert answered.wait(timeout=30)
        after = await get(base + "/healthz")  # the loop runs again: so does the check

    assert result == [(503, "the event loop did not answer within 0.05 s\n")]
    assert after.status_code == 200


async def test_a_check_that_raises_gives_its_type_never_its_message() -> None:
    def health() -> tuple[bool, str]:
        raise ValueError("token ghs_secret123 rejected")

    async with serving(ProbeServer("127.0.0.1", 0, health=health)) as base:
        answer = await get(base + "/healthz")

    assert answer.status_code == 500
    assert answer.text == "/healthz failed: ValueError\n"
    assert "ghs_secret123" not in answer.text


async def test_head_unknown_paths_and_the_metrics_format() -> None:
    registry = CollectorRegistry()
    Counter("probe_test_requests", "requests", registry=registry).inc(3)
    checks: dict[str, Check] = {"health": lambda: (True, "ok")}
    server = ProbeServer("127.0.0.1", 0, registry=registry, **checks)
    assert server.endpoints == ["/healthz", "/metrics"]

    async with serving(server) as base:
        head = await get(base + "/healthz", method="HEAD")
        missing = await get(base + "/readyz")  # no readiness check given
        metrics = await get(base + "/metrics")

    assert (head.status_code, head.content, head.headers["content-length"]) == (200, b"", "3")
    assert missing.status_code == 404
    assert metrics.headers["content-type"] == CONTENT_TYPE_LATEST
    assert "probe_test_requests_total 3.0" in metrics.text


async def test_the_address_is_free_after_stop_and_a_taken_one_is_an_oserror() -> None:
    server = ProbeServer("127.0.0.1", 0, health=lambda: (True, "ok"))
    async with serving(server) as base:
        port = server.bound_port
        taken = ProbeServer("127.0.0.1", port, health=lambda: (True, "ok"))
        with pytest.raises(OSError, match="already in use"):
            await taken.start()
        assert (await get(base + "/healthz")).status_code == 200

    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 5):
        pass
    again = ProbeServer("127.0.0.1", port, health=lambda: (True, "ok"))
    async with serving(again) as base:  # rebinding the same port works at once
        assert (await get(base + "/healthz")).status_code == 200


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
async def test_an_ipv6_address_is_bound_as_ipv6() -> None:
    server = ProbeServer("::1", 0, health=lambda: (True, "ok"))
    try:
        await server.start()
    except OSError as error:  # IPv6 compiled in but no ::1 configured
        pytest.skip(f"cannot bind ::1: {error}")
    try:
        answer = await get(f"http://[::1]:{server.bound_port}/healthz")
    finally:
        await server.stop()
    assert answer.status_code == 200
