"""Per-credential limiter: concurrency cap and token-bucket rate, on virtual time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import pytest

from scaleset.clock import ManualClock
from scaleset.github.limiter import CredentialLimiters, RequestLimiter

T = TypeVar("T")


async def on_manual_time(clock: ManualClock, work: Awaitable[T]) -> T:
    """Run ``work``, moving ``clock`` to each sleeper's deadline whenever one is waiting."""
    task = asyncio.ensure_future(work)
    for _ in range(10_000):
        await asyncio.sleep(0)
        if task.done():
            return task.result()
        deadline = clock.next_deadline()
        if deadline is not None:
            clock.advance(deadline - clock.monotonic())
    task.cancel()
    raise AssertionError("the work neither finished nor waited on the clock")


async def test_rate_allows_a_burst_then_one_call_per_interval() -> None:
    clock = ManualClock(start=0.0)
    limiter = RequestLimiter(rate_per_second=2.0, burst=3, clock=clock)
    started: list[float] = []

    async def calls() -> None:
        for _ in range(6):
            async with limiter.slot():
                started.append(clock.monotonic())

    await on_manual_time(clock, calls())
    assert started == [0.0, 0.0, 0.0, 0.5, 1.0, 1.5]


async def test_idle_time_refills_up_to_the_burst_only() -> None:
    clock = ManualClock(start=0.0)
    limiter = RequestLimiter(rate_per_second=1.0, burst=2, clock=clock)
    for _ in range(2):
        async with limiter.slot():
            pass
    clock.advance(100.0)
    started: list[float] = []

    async def calls() -> None:
        for _ in range(3):
            async with limiter.slot():
                started.append(clock.monotonic())

    await on_manual_time(clock, calls())
    assert started == [100.0, 100.0, 101.0]


async def test_concurrency_is_capped() -> None:
    limiter = RequestLimiter(max_concurrent=2)
    release = asyncio.Event()
    two_inside = asyncio.Event()
    peak = 0

    async def call() -> None:
        nonlocal peak
        async with limiter.slot():
            peak = max(peak, limiter.in_flight)
            if limiter.in_flight == 2:
                two_inside.set()
            await release.wait()

    tasks = [asyncio.create_task(call()) for _ in range(5)]
    async with asyncio.timeout(5):
        await two_inside.wait()
    for _ in range(10):  # give the other three every chance to (wrongly) enter
        await asyncio.sleep(0)
    assert limiter.in_flight == 2
    release.set()
    await asyncio.gather(*tasks)
    assert peak == 2
    assert limiter.in_flight == 0


async def test_slot_is_released_when_the_call_fails() -> None:
    limiter = RequestLimiter(max_concurrent=1)
    with pytest.raises(RuntimeError):
        async with limiter.slot():
            raise RuntimeError("boom")
    async with asyncio.timeout(5), limiter.slot():
        assert limiter.in_flight == 1


def test_invalid_settings() -> None:
    with pytest.raises(ValueError, match="max_concurrent"):
        RequestLimiter(max_concurrent=0)
    with pytest.raises(ValueError, match="rate_per_second"):
        RequestLimiter(rate_per_second=0)


def test_one_limiter_per_credential_identity() -> None:
    limiters = CredentialLimiters()
    assert limiters.for_identity("pat:a") is limiters.for_identity("pat:a")
    assert limiters.for_identity("pat:a") is not limiters.for_identity("pat:b")


def test_a_hold_keeps_its_service_waiting_until_it_ends() -> None:
    clock = ManualClock(start=0.0)
    limiter = RequestLimiter(max_concurrent=None, clock=clock)
    assert limiter.held_for("admin") == 0.0
    limiter.hold("admin", 30.0)
    limiter.hold("admin", 5.0)  # a shorter hold never cuts a longer one short
    assert limiter.held_for("admin") == 30.0
    assert limiter.held_for("github-api") == 0.0  # another service answers for itself
    clock.advance(12.0)
    assert limiter.held_for("admin") == 18.0
    limiter.hold("admin", 20.0)  # a later, longer hold extends it
    assert limiter.held_for("admin") == 20.0
    clock.advance(20.0)
    assert limiter.held_for("admin") == 0.0


async def test_without_a_cap_every_call_enters() -> None:
    limiter = RequestLimiter(max_concurrent=None)
    inside = 0

    async def call() -> None:
        nonlocal inside
        async with limiter.slot():
            inside = max(inside, limiter.in_flight)
            await asyncio.sleep(0)

    async with asyncio.timeout(5):
        await asyncio.gather(*(call() for _ in range(50)))
    assert inside == 50
