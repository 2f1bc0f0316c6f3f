"""The client's token bucket handed out in turn across lanes (``scaleset.kube.throttle``)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.kube.ratelimit import TokenBucket
from scaleset.kube.throttle import DEFAULT_LANE, Throttle, current_lane, in_lane


async def _take(throttle: Throttle, lane: str, label: str, granted: list[str]) -> None:
    with in_lane(lane):
        await throttle.take()
    granted.append(label)


async def _drive(clock: ManualClock, tasks: list[asyncio.Task[None]]) -> None:
    """Advance the clock wake-up by wake-up until every task is done."""
    await eventually(lambda: all(t.done() for t in tasks), clock=clock, what="every take")
    for task in tasks:
        task.result()


async def test_waiting_lanes_take_turns_first_come_first_served_within_each() -> None:
    clock = ManualClock()
    throttle = Throttle(TokenBucket(rate=10.0, burst=1, clock=clock), clock)
    granted: list[str] = []
    tasks = [asyncio.create_task(_take(throttle, "sets", f"s{i}", granted)) for i in range(1, 7)]
    await eventually(lambda: throttle.waiting == 5, what="five creations waiting")
    tasks += [asyncio.create_task(_take(throttle, "runners", f"r{i}", granted)) for i in (1, 2)]
    await eventually(lambda: throttle.waiting == 7, what="two runner requests waiting too")
    await _drive(clock, tasks)
    # one queue would have served r1 and r2 after s6
    assert granted == ["s1", "s2", "r1", "s3", "r2", "s4", "s5", "s6"]


async def test_a_cancelled_waiter_takes_no_token_and_stops_nobody() -> None:
    clock = ManualClock()
    throttle = Throttle(TokenBucket(rate=1.0, burst=1, clock=clock), clock)
    granted: list[str] = []
    first = asyncio.create_task(_take(throttle, "a", "a1", granted))
    await eventually(lambda: granted == ["a1"], what="the burst token")
    gone = asyncio.create_task(_take(throttle, "a", "a2", granted))
    await eventually(lambda: throttle.waiting == 1, what="a2 waiting")
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    assert throttle.waiting == 0
    await eventually(lambda: clock.sleepers == 0, what="the dispatcher gone with its last waiter")
    later = asyncio.create_task(_take(throttle, "b", "b1", granted))
    await _drive(clock, [first, later])
    assert granted == ["a1", "b1"]
    assert clock.monotonic() == pytest.approx(1001.0)  # one token after the burst: a2 took none


async def test_no_wait_within_the_burst_and_the_lane_is_restored() -> None:
    clock = ManualClock()
    throttle = Throttle(TokenBucket(rate=1.0, burst=3, clock=clock), clock)
    with in_lane("x"):
        assert current_lane() == "x"
        assert [await throttle.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert current_lane() == DEFAULT_LANE
    assert clock.sleepers == 0


@settings(max_examples=60, deadline=None)
@given(
    lanes=st.lists(st.sampled_from("abc"), min_size=1, max_size=25),
    burst=st.integers(min_value=1, max_value=4),
)
def test_lanes_never_exceed_the_bucket_and_keep_each_lanes_order(
    lanes: list[str], burst: int
) -> None:
    async def run() -> list[tuple[str, int, float]]:
        clock = ManualClock()
        throttle = Throttle(TokenBucket(rate=5.0, burst=burst, clock=clock), clock)
        grants: list[tuple[str, int, float]] = []

        async def one(lane: str, index: int) -> None:
            with in_lane(lane):
                await throttle.take()
            grants.append((lane, index, clock.monotonic()))

        tasks = [asyncio.create_task(one(lane, i)) for i, lane in enumerate(lanes)]
        await _drive(clock, tasks)
        return grants

    grants = asyncio.run(run())
    assert len(grants) == len(lanes)
    start = 1000.0
    for k, (_, _, at) in enumerate(grants):
        # the k-th token (from 0) exists only (k + 1 - burst) / rate after the start
        assert at - start >= max(0, k + 1 - burst) / 5.0 - 1e-6
    for lane in set(lanes):
        order = [index for name, index, _ in grants if name == lane]
        assert order == sorted(order)
