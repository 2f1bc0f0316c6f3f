"""Work queue: dedupe, one worker per key, back-off, requeue_after and fairness (the rate of
re-adds: ``test_workqueue_bucket.py``)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from scaleset.clock import ManualClock
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.runtime.workqueue import WorkQueue


def make_queue(clock: ManualClock, **kwargs: object) -> tuple[WorkQueue[ObjectKey], RuntimeMetrics]:
    metrics = RuntimeMetrics(CollectorRegistry())
    queue: WorkQueue[ObjectKey] = WorkQueue("test", clock=clock, metrics=metrics, **kwargs)  # type: ignore[arg-type]
    return queue, metrics


def key(name: str, namespace: str = "ns") -> ObjectKey:
    return ObjectKey(namespace, name)


async def settle() -> None:
    """Let every runnable task run until none is runnable (time does not move)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def get_now(queue: WorkQueue[ObjectKey]) -> ObjectKey | None:
    """A key that is ready right now, or None if get() would have to wait."""
    task = asyncio.ensure_future(queue.get())
    await settle()
    if task.done():
        return task.result()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return None


def sample(metrics: RuntimeMetrics, name: str) -> float:
    value = metrics.registry.get_sample_value(name, {"name": "test"})
    assert value is not None, name
    return value


async def test_adds_of_a_waiting_key_are_deduplicated() -> None:
    clock = ManualClock()
    queue, metrics = make_queue(clock)
    for _ in range(5):
        queue.add(key("a"))
    queue.add(key("b"))
    assert len(queue) == 2
    assert await get_now(queue) == key("a")
    assert await get_now(queue) == key("b")
    assert await get_now(queue) is None
    assert sample(metrics, "workqueue_adds_total") == 2


async def test_a_key_being_processed_is_not_handed_out_again_but_runs_again_after_done() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    queue.add(key("a"))
    first = await get_now(queue)
    assert first == key("a")
    queue.add(key("a"))  # changed while being processed
    assert await get_now(queue) is None  # no second worker gets it concurrently
    assert len(queue) == 1
    queue.done(key("a"))
    assert await get_now(queue) == key("a")  # the change is not lost
    queue.done(key("a"))
    assert await get_now(queue) is None


async def test_workers_never_process_one_key_concurrently() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    active: set[ObjectKey] = set()
    overlaps: list[ObjectKey] = []
    processed: list[ObjectKey] = []
    gate = asyncio.Event()

    async def worker() -> None:
        while (item := await queue.get()) is not None:
            if item in active:
                overlaps.append(item)
            active.add(item)
            await gate.wait()
            processed.append(item)
            active.discard(item)
            queue.done(item)

    workers = [asyncio.ensure_future(worker()) for _ in range(4)]
    for round_ in range(3):
        for name in ("a", "b", "a", "c", "a"):
            queue.add(key(name))
        await settle()
        if round_ == 2:
            gate.set()
    await settle()
    assert overlaps == []
    assert set(processed) == {key("a"), key("b"), key("c")}
    assert processed.count(key("a")) == 2  # once, then once more for adds during processing
    queue.shutdown()
    await asyncio.gather(*workers)


async def test_rate_limited_requeue_backs_off_exponentially_and_forget_resets() -> None:
    clock = ManualClock()
    queue, metrics = make_queue(clock, backoff_base=1.0, backoff_max=8.0)
    delays = [queue.add_rate_limited(key("a")) for _ in range(5)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert queue.num_requeues(key("a")) == 5
    assert sample(metrics, "workqueue_retries_total") == 5
    # The earliest pending request wins: ready after 1 s.
    assert await get_now(queue) is None
    clock.advance(0.999)
    assert await get_now(queue) is None
    clock.advance(0.001)
    assert await get_now(queue) == key("a")
    queue.done(key("a"))
    queue.forget(key("a"))
    assert queue.add_rate_limited(key("a")) == 1.0


async def test_a_key_that_fails_for_weeks_waits_the_cap_and_the_queue_keeps_working() -> None:
    """The failure count is not bounded (a key that fails for weeks, re-added at the 1000 s
    cap), but its back-off is: 2.0 ** 1024 does not fit a float, and the re-add must not
    raise."""
    clock = ManualClock()
    queue, _ = make_queue(clock, backoff_base=0.005, backoff_max=1000.0)
    delays = [queue.add_rate_limited(key("a")) for _ in range(1_100)]
    assert delays[:3] == [0.005, 0.01, 0.02]
    assert delays[-1] == 1000.0
    assert queue.num_requeues(key("a")) == 1_100


async def test_requeue_after_waits_on_the_injected_clock() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    queue.add_after(key("later"), 30.0)
    waiter = asyncio.ensure_future(queue.get())
    await settle()
    assert not waiter.done()
    clock.advance(29.0)
    await settle()
    assert not waiter.done()
    clock.advance(1.0)
    await settle()
    assert waiter.done()
    assert waiter.result() == key("later")


async def test_a_delayed_key_is_due_on_time_when_the_clock_moved_as_get_began_to_wait() -> None:
    """The clock moves after get() chose to wait for the next due key but before its sleep
    began: the key is still handed out at its due time, not a whole wait later (the wait is
    anchored to the due time, not to when the sleep happened to start)."""
    clock = ManualClock()
    queue, _ = make_queue(clock)
    queue.add_after(key("later"), 30.0)
    waiter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)  # get() ran up to its wait; the sleep it started has not run yet
    clock.advance(30.0)
    await settle()
    assert waiter.done()
    assert waiter.result() == key("later")


async def test_an_earlier_requeue_request_replaces_a_later_one() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    queue.add_after(key("a"), 60.0)
    queue.add_after(key("a"), 5.0)
    queue.add_after(key("a"), 90.0)  # later than the pending one: ignored
    clock.advance(5.0)
    assert await get_now(queue) == key("a")
    queue.done(key("a"))
    clock.advance(100.0)
    assert await get_now(queue) is None  # superseded entries do not fire again
    assert queue.delayed() == 0


async def test_a_busy_namespace_cannot_starve_another() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    for index in range(100):
        queue.add(key(f"runner-{index}", namespace="busy"))
    queue.add(key("only", namespace="quiet"))
    order = []
    for _ in range(4):
        item = await get_now(queue)
        assert item is not None
        order.append(item)
        queue.done(item)
    assert key("only", namespace="quiet") in order[:2]
    assert order[0] == key("runner-0", namespace="busy")


async def test_fair_share_across_three_namespaces() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    for index in range(10):
        queue.add(key(f"a{index}", namespace="a"))
    for index in range(3):
        queue.add(key(f"b{index}", namespace="b"))
    queue.add(key("c0", namespace="c"))
    served = []
    for _ in range(6):
        item = await get_now(queue)
        assert item is not None
        served.append(item.namespace)
        queue.done(item)
    assert served == ["a", "b", "c", "a", "b", "a"]


async def test_shutdown_releases_waiting_workers_and_drain_waits_for_in_flight() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    queue.add(key("a"))
    item = await get_now(queue)
    waiter = asyncio.ensure_future(queue.get())
    await settle()
    queue.shutdown()
    await settle()
    assert waiter.result() is None
    drained = asyncio.ensure_future(queue.drain())
    await settle()
    assert not drained.done()  # "a" is still in flight
    assert item is not None
    queue.done(item)
    await settle()
    assert drained.done()
    queue.add(key("b"))
    assert len(queue) == 0  # no adds after shutdown


async def test_metrics_use_client_go_names() -> None:
    clock = ManualClock()
    queue, metrics = make_queue(clock)
    queue.add(key("a"))
    clock.advance(2.0)
    item = await get_now(queue)
    assert item is not None
    assert sample(metrics, "workqueue_depth") == 0
    clock.advance(3.0)
    assert sample(metrics, "workqueue_unfinished_work_seconds") == pytest.approx(3.0)
    assert sample(metrics, "workqueue_longest_running_processor_seconds") == pytest.approx(3.0)
    queue.done(item)
    assert sample(metrics, "workqueue_queue_duration_seconds_sum") == pytest.approx(2.0)
    assert sample(metrics, "workqueue_work_duration_seconds_sum") == pytest.approx(3.0)
    assert sample(metrics, "workqueue_unfinished_work_seconds") == 0


async def test_progress_age_is_zero_when_idle_and_grows_when_work_is_stuck() -> None:
    clock = ManualClock()
    queue, _ = make_queue(clock)
    clock.advance(1000.0)
    assert queue.seconds_without_progress() == 0.0
    queue.add(key("a"))
    clock.advance(10.0)
    assert queue.seconds_without_progress() == pytest.approx(10.0)
    item = await get_now(queue)
    assert queue.seconds_without_progress() == 0.0
    clock.advance(50.0)
    assert queue.seconds_without_progress() == pytest.approx(50.0)  # stuck reconcile
    assert item is not None
    queue.done(item)
    assert queue.seconds_without_progress() == 0.0
