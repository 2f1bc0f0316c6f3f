"""Work queue priorities: urgent keys first (higher priorities before lower), earliest due
first, never held by the token bucket (not even when re-added after an error), with workers kept
for the higher priorities.

The EphemeralRunner controller gives a runner that ends a hung runner (past its job) the highest
priority, one that frees a slot (being deleted) the next; these tests hold the queue's part of
that promise on the injected clock, with no timing assertions: only the order of hand-outs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.unit.runtime.test_workqueue import get_now, key, settle
from tests.unit.runtime.test_workqueue import make_queue as plain_queue

from scaleset.clock import ManualClock
from scaleset.kube.objects import ObjectKey
from scaleset.runtime.workqueue import WorkQueue


def make_queue(
    clock: ManualClock, urgent: set[ObjectKey], **kwargs: object
) -> WorkQueue[ObjectKey]:
    """A queue (``test_workqueue``'s) whose keys in ``urgent`` have priority 1."""
    queue, _ = plain_queue(clock, **kwargs)
    queue.set_priority(lambda key: 1 if key in urgent else 0)
    return queue


async def test_an_urgent_key_is_handed_out_before_a_backlog_of_normal_ones() -> None:
    clock = ManualClock()
    urgent = {key("ending")}
    queue = make_queue(clock, urgent)
    for index in range(50):
        queue.add(key(f"new-{index}"))
    queue.add(key("ending"))
    assert await get_now(queue) == key("ending")
    assert await get_now(queue) == key("new-0")


async def test_a_waiting_key_that_becomes_urgent_moves_up() -> None:
    clock = ManualClock()
    urgent: set[ObjectKey] = set()
    queue = make_queue(clock, urgent)
    for index in range(5):
        queue.add(key(f"runner-{index}"))
    urgent.add(key("runner-3"))  # its jobCompletion landed while it waited
    queue.add(key("runner-3"))
    served = [await get_now(queue) for _ in range(5)]
    assert served == [key(f"runner-{i}") for i in (3, 0, 1, 2, 4)]
    assert await get_now(queue) is None  # its old place in line does not hand it out again


async def test_due_urgent_keys_come_out_in_deadline_order_not_promotion_order() -> None:
    clock = ManualClock()
    names = ("third", "first", "second")
    urgent = {key(name) for name in names}
    queue = make_queue(clock, urgent)
    queue.add_after(key("third"), 3.0)
    queue.add_after(key("first"), 1.0)
    queue.add_after(key("second"), 2.0)
    for index in range(10):
        queue.add(key(f"new-{index}"))
    clock.advance(10.0)  # the queue promotes all three at once, late
    assert [await get_now(queue) for _ in range(4)] == [
        key("first"),
        key("second"),
        key("third"),
        key("new-0"),
    ]


async def test_a_key_that_became_urgent_is_ordered_by_when_it_was_first_added() -> None:
    clock = ManualClock()
    urgent = {key("later")}
    queue = make_queue(clock, urgent)
    queue.add(key("earlier"))  # waits, not urgent yet
    clock.advance(1.0)
    queue.add(key("later"))  # urgent from the start
    clock.advance(1.0)
    urgent.add(key("earlier"))  # its completion landed: re-added, urgent now
    queue.add(key("earlier"))
    assert [await get_now(queue) for _ in range(2)] == [key("earlier"), key("later")]


async def test_an_urgent_key_does_not_wait_for_the_token_bucket() -> None:
    clock = ManualClock()
    urgent = {key("ending")}
    queue = make_queue(clock, urgent, rate=1.0, burst=1, backoff_base=0.001)
    queue.add_rate_limited(key("new-0"))
    queue.add_rate_limited(key("new-1"))  # the bucket is spent: new-1 waits a second
    queue.add_rate_limited(key("ending"))  # its back-off only
    clock.advance(0.001)
    assert [await get_now(queue) for _ in range(2)] == [key("ending"), key("new-0")]
    assert await get_now(queue) is None
    clock.advance(1.0)
    assert await get_now(queue) == key("new-1")


async def test_a_get_waiting_for_a_re_add_serves_an_urgent_key_that_falls_due() -> None:
    clock = ManualClock()
    urgent = {key("deadline")}
    queue = make_queue(clock, urgent, rate=0.1, burst=1, backoff_base=0.001)
    queue.add_rate_limited(key("new-0"))
    queue.add_rate_limited(key("new-1"))  # waits 10 s for the bucket
    clock.advance(0.001)
    assert await get_now(queue) == key("new-0")
    queue.add_after(key("deadline"), 1.0)
    waiter = asyncio.ensure_future(queue.get())
    await settle()
    assert not waiter.done()
    clock.advance(1.0)
    await settle()
    assert waiter.done()
    assert waiter.result() == key("deadline")


async def test_urgency_is_asked_again_when_a_key_processed_meanwhile_is_queued_again() -> None:
    clock = ManualClock()
    urgent: set[ObjectKey] = set()
    queue = make_queue(clock, urgent)
    queue.add(key("runner"))
    assert await get_now(queue) == key("runner")
    queue.add(key("other"))
    queue.add(key("runner"))  # changed while being processed: deferred
    urgent.add(key("runner"))
    queue.done(key("runner"))
    assert await get_now(queue) == key("runner")
    assert await get_now(queue) == key("other")


async def test_a_higher_priority_goes_first_and_a_rise_moves_a_waiting_key_up() -> None:
    clock = ManualClock()
    priority: dict[ObjectKey, int] = {key("deleting"): 1, key("ending"): 2}
    queue = make_queue(clock, set())
    queue.set_priority(lambda k: priority.get(k, 0))
    for name in ("new", "deleting", "ending", "later"):
        queue.add(key(name))
    priority[key("later")] = 2
    queue.add(key("later"))  # its completion landed: due when it was first added
    served = [await get_now(queue) for _ in range(4)]
    assert served == [key("ending"), key("later"), key("deleting"), key("new")]


async def test_workers_beyond_a_limit_are_kept_for_higher_priorities() -> None:
    clock = ManualClock()
    priority: dict[ObjectKey, int] = {key("deleting"): 1}
    queue = make_queue(clock, set())
    queue.set_priority(lambda k: priority.get(k, 0), limits={1: 2})
    queue.add(key("new-0"))
    queue.add(key("deleting"))
    queue.add(key("new-1"))
    assert await get_now(queue) == key("deleting")
    assert await get_now(queue) == key("new-0")
    assert await get_now(queue) is None  # two of priority 1 or lower in flight: the limit
    priority[key("ending")] = 2
    queue.add(key("ending"))
    assert await get_now(queue) == key("ending")  # the kept worker takes it
    queue.done(key("ending"))  # frees no slot of the limited priorities
    assert await get_now(queue) is None
    queue.done(key("deleting"))
    assert await get_now(queue) == key("new-1")


async def test_workers_beyond_the_normal_limit_are_kept_for_urgent_keys() -> None:
    clock = ManualClock()
    urgent: set[ObjectKey] = set()
    queue = make_queue(clock, urgent)
    queue.set_priority(lambda k: 1 if k in urgent else 0, limits={0: 1})
    queue.add(key("new-0"))
    queue.add(key("new-1"))
    assert await get_now(queue) == key("new-0")
    assert await get_now(queue) is None  # new-1 waits: one normal key in flight is the limit
    urgent.add(key("ending"))
    queue.add(key("ending"))
    assert await get_now(queue) == key("ending")  # the kept worker takes it
    waiter = asyncio.ensure_future(queue.get())
    await settle()
    assert not waiter.done()
    queue.done(key("ending"))  # an urgent key's end frees no normal slot
    await settle()
    assert not waiter.done()
    queue.done(key("new-0"))
    await settle()
    assert waiter.result() == key("new-1")


def test_a_limit_is_at_least_one() -> None:
    queue = make_queue(ManualClock(), set())
    with pytest.raises(ValueError, match="at least 1"):
        queue.set_priority(lambda _: 0, limits={0: 0})


# --- the queue against a model, over random operations -----------------------------------------


@dataclass
class Model:
    """What the queue promises, kept by hand: which keys wait, which run, which are urgent."""

    priority_now: dict[str, int] = field(default_factory=dict)
    ready: dict[str, tuple[int, float, int]] = field(default_factory=dict)
    """Waiting key -> (priority, due, arrival number)."""
    processing: set[str] = field(default_factory=set)
    deferred: dict[str, float] = field(default_factory=dict)
    """Processing key re-added meanwhile -> when it fell due."""
    delayed: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Delayed key -> (when it falls due, the number of the request that set that time): keys
    due at the same instant arrive in the order of those requests (a later, earlier-due request
    for a key that already waits counts from itself)."""
    requests: int = 0
    arrivals: int = 0
    limits: dict[int, int] = field(default_factory=dict)
    processing_priority: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, now: float, due: float) -> None:
        if name in self.ready:
            priority, was_due, arrival = self.ready[name]
            priority = max(priority, self.priority_now.get(name, 0))
            self.ready[name] = (priority, min(was_due, due), arrival)
            return
        if name in self.processing:
            self.deferred[name] = min(due, self.deferred.get(name, due))
            return
        self._ready(name, due)

    def _ready(self, name: str, due: float) -> None:
        self.arrivals += 1
        self.ready[name] = (self.priority_now.get(name, 0), due, self.arrivals)

    def done(self, name: str) -> None:
        self.processing.discard(name)
        self.processing_priority.pop(name, None)
        if name in self.deferred:
            self._ready(name, self.deferred.pop(name))

    def add_after(self, name: str, at: float) -> None:
        self.requests += 1
        if name not in self.delayed or at < self.delayed[name][0]:
            self.delayed[name] = (at, self.requests)

    def promote(self, now: float) -> None:
        for name, (at, _) in sorted(self.delayed.items(), key=lambda item: item[1]):
            if at <= now:
                del self.delayed[name]
                self.add(name, now, at)

    def allowed(self) -> set[str]:
        """The keys the queue may hand out next."""
        if not self.ready:
            return set()
        top = max(priority for priority, _, _ in self.ready.values())
        for level, limit in self.limits.items():
            busy = sum(1 for p in self.processing_priority.values() if p <= level)
            if level >= top and busy >= limit:
                return set()  # the workers beyond the limit are kept for higher priorities
        if top > 0:
            first = min(due for p, due, _ in self.ready.values() if p == top)
            return {n for n, (p, due, _) in self.ready.items() if p == top and due == first}
        oldest = min(arrival for _, _, arrival in self.ready.values())
        return {n for n, (_, _, arrival) in self.ready.items() if arrival == oldest}


NAMES = ("a", "b", "c", "d", "e")
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(NAMES)),
        st.tuples(st.just("add_after"), st.sampled_from(NAMES), st.integers(1, 5)),
        st.tuples(st.just("priority"), st.sampled_from(NAMES), st.integers(0, 2)),
        st.tuples(st.just("get")),
        st.tuples(st.just("done")),
        st.tuples(st.just("advance"), st.integers(1, 3)),
    ),
    max_size=60,
)


LIMITS = ({}, {0: 1}, {1: 1}, {0: 2, 1: 2}, {0: 1, 1: 2})


@settings(max_examples=300, deadline=None)
@given(operations, st.sampled_from(LIMITS))
@example(  # c's second request is due with a's: c's wait counts from that request, after a's
    [("add_after", "c", 4), ("add_after", "a", 3), ("add_after", "c", 3), ("advance", 3), ("get",)],
    {},
)
def test_hand_outs_follow_priority_then_due_time_then_arrival(
    ops: list[tuple[object, ...]], limits: dict[int, int]
) -> None:
    """Whatever the order of adds, delays, priority changes and hand-outs: a waiting key of the
    highest priority is always served first, urgent keys of one priority earliest due first, the
    rest first come first served, and never more keys of a priority or lower at a time than its
    limit; no key is handed out while it is processed, none is lost or handed out twice."""
    asyncio.run(_run_against_model(ops, limits))


async def _run_against_model(ops: list[tuple[object, ...]], limits: dict[int, int]) -> None:
    clock = ManualClock()
    model = Model(limits=dict(limits))
    queue = make_queue(clock, set())
    queue.set_priority(lambda k: model.priority_now.get(k.name, 0), limits=limits)
    for op in ops:
        now = clock.monotonic()
        match op:
            case ("add", str(name)):
                queue.add(key(name))
                model.add(name, now, now)
            case ("add_after", str(name), int(seconds)):
                queue.add_after(key(name), float(seconds))
                model.add_after(name, now + seconds)
            case ("priority", str(name), int(priority)):
                model.priority_now[name] = priority
            case ("advance", int(seconds)):
                clock.advance(float(seconds))
            case ("get",):
                model.promote(now)
                allowed = model.allowed()
                got = await get_now(queue)
                if not allowed:
                    assert got is None
                    continue
                assert got is not None
                assert got.name in allowed
                priority, _, _ = model.ready.pop(got.name)
                model.processing.add(got.name)
                model.processing_priority[got.name] = priority
            case ("done",):
                if model.processing:
                    name = sorted(model.processing)[0]
                    queue.done(key(name))
                    model.done(name)
    # drain: every waiting, deferred and delayed key comes out exactly once more
    clock.advance(100.0)
    for name in sorted(model.processing):
        queue.done(key(name))
        model.done(name)
    model.promote(clock.monotonic())
    drained = []
    while (got := await get_now(queue)) is not None:
        drained.append(got.name)
        queue.done(got)
    assert sorted(drained) == sorted(model.ready)
