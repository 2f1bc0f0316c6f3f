"""The work queue's token bucket limits rate-limited re-adds only, as client-go's default
controller rate limiter does (the larger of the key's back-off and the bucket's reservation);
a key added because its object changed, or a delayed requeue, is handed out at once.

Applied to every hand-out, the bucket (50/s, burst 200) made the first pass over 1,000 new
runners take at least 16 s and left a 5,000-runner resync undrained a minute later. All on the
injected clock: hand-outs at one instant, and the delays the queue chose.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.runtime.test_workqueue import get_now, key, make_queue, settle

from scaleset.clock import ManualClock
from scaleset.kube.objects import ObjectKey


async def test_a_burst_of_adds_beyond_the_bucket_is_handed_out_at_once() -> None:
    clock = ManualClock()
    start = clock.monotonic()
    queue, _ = make_queue(clock, rate=50.0, burst=200)
    for index in range(1000):
        queue.add(key(f"runner-{index}"))
    served = []
    for _ in range(1000):
        item = await get_now(queue)
        assert item is not None, f"held back after {len(served)} keys at one instant"
        served.append(item)
    assert len(set(served)) == 1000
    assert clock.monotonic() == start


async def test_rate_limited_re_adds_wait_for_the_bucket_beyond_its_burst() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock, rate=1.0, burst=2, backoff_base=0.005)
    delays = [queue.add_rate_limited(key(f"failed-{index}")) for index in range(5)]
    assert delays == [0.005, 0.005, 1.0, 2.0, 3.0]  # back-off, then one token a second


async def test_a_re_add_waits_for_the_larger_of_its_back_off_and_the_bucket() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock, rate=1.0, burst=1, backoff_base=4.0)
    assert queue.add_rate_limited(key("a")) == 4.0  # the bucket had a token: back-off only
    assert queue.add_rate_limited(key("b")) == 4.0  # the bucket's 1 s is shorter
    clock.advance(10.0)  # the bucket refills
    assert queue.add_rate_limited(key("c")) == 4.0


async def test_adds_are_not_held_while_re_adds_wait_for_the_bucket() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock, rate=1.0, burst=1, backoff_base=0.001)
    for index in range(3):
        queue.add_rate_limited(key(f"failed-{index}"))  # the bucket is spent for 2 s
    queue.add(key("changed"))
    assert await get_now(queue) == key("changed")


async def test_a_get_waiting_for_a_re_add_wakes_when_its_reservation_is_due() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock, rate=1.0, burst=1, backoff_base=0.001)
    queue.add_rate_limited(key("first"))
    assert queue.add_rate_limited(key("second")) == 1.0
    clock.advance(0.001)
    assert await get_now(queue) == key("first")
    waiter = asyncio.ensure_future(queue.get())
    await settle()
    assert not waiter.done()
    clock.advance(0.999)
    await settle()
    assert waiter.result() == key("second")


async def test_an_urgent_key_re_added_after_an_error_waits_only_for_its_back_off() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock, rate=1.0, burst=1, backoff_base=0.5)
    queue.set_priority(lambda k: 1 if k.name == "ending" else 0)
    queue.add_rate_limited(key("normal-0"))  # takes the token
    assert queue.add_rate_limited(key("normal-1")) == 1.0
    assert queue.add_rate_limited(key("ending")) == 0.5  # never waits for the bucket


@settings(max_examples=200, deadline=None)
@given(
    rate=st.sampled_from([0.5, 1.0, 10.0, 50.0]),
    burst=st.integers(min_value=1, max_value=20),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(0, 40)),
            st.tuples(st.just("retry"), st.integers(0, 40)),
            st.tuples(st.just("advance"), st.sampled_from([0.1, 0.5, 1.0, 3.0])),
        ),
        max_size=80,
    ),
)
def test_the_bucket_reserves_for_re_adds_and_never_holds_an_add(
    rate: float, burst: int, steps: list[tuple[str, float]]
) -> None:
    """Whatever the mix: every re-add's delay is the larger of its back-off and the bucket's
    reservation (client-go's ``MaxOf(ItemExponentialFailureRateLimiter,
    BucketRateLimiter)``, the bucket allowed to go into debt); and every key added plainly is
    ready at once."""
    asyncio.run(_bucket_against_model(rate, burst, steps))


async def _bucket_against_model(rate: float, burst: int, steps: list[tuple[str, float]]) -> None:
    clock = ManualClock()
    base = 0.01
    queue, _ = make_queue(clock, rate=rate, burst=burst, backoff_base=base, backoff_max=5.0)
    tokens, stamp = float(burst), clock.monotonic()
    failures: dict[str, int] = {}
    for op, arg in steps:
        now = clock.monotonic()
        if op == "advance":
            clock.advance(arg)
            continue
        name = f"k{int(arg)}"
        if op == "add":
            plain: ObjectKey = key(f"plain-{name}-{now}")
            queue.add(plain)
            while (item := await get_now(queue)) != plain:  # due re-adds may come first
                assert item is not None, "a plain add waits"
                queue.done(item)
            queue.done(plain)
            continue
        tokens = min(float(burst), tokens + (now - stamp) * rate)
        stamp = now
        tokens -= 1.0
        reservation = max(0.0, -tokens / rate)
        count = failures.get(name, 0)
        failures[name] = count + 1
        back_off = min(5.0, base * 2.0**count)
        assert queue.add_rate_limited(key(name)) == max(back_off, reservation)
