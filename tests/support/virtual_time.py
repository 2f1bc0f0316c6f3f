"""Driving a ``ManualClock`` while real requests are answered by a real API server.

Code under test mixes virtual time (retry periods, deadlines, back-off on the ``ManualClock``)
with real I/O (HTTP to the embedded or real API server). Advancing the clock while a request is
on the wire would fire a deadline the real server never missed. So:

- ``InFlight`` counts requests sent and not yet fully answered (watch streams, which stay open
  by design, are not counted); call it on a transport to get the counting wrapper
  (``make_client(..., in_flight=InFlight())``);
- ``run_until(clock, done, in_flight=...)`` advances the clock one wake-up at a time, and only
  when nothing is in flight and the set of sleepers has stayed the same for one poll, until
  ``done()`` — so each step is exactly "the next thing that would happen in virtual time".

A request held back *before* ``InFlight`` (a ``RequestHook`` that never returns, say) is not in
flight: it is a hung request, and the clock may run past it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx2

from scaleset.clock import ManualClock
from tests.support.waiting import eventually


class InFlight:
    """Counts non-watch requests from send until their response body is closed, over every
    transport it wrapped (``in_flight(transport)``)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        return _Counting(inner, self)


class _Counting(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, tracker: InFlight) -> None:
        self._inner = inner
        self._tracker = tracker

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch") == "true":
            return await self._inner.handle_async_request(request)
        tracker = self._tracker
        tracker.count += 1
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            tracker.count -= 1
            raise
        source = response.stream
        if not isinstance(source, httpx2.AsyncByteStream):
            raise TypeError("an async transport answered with a sync stream")
        closed = False

        class Tracked(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in source:
                    yield chunk

            async def aclose(self) -> None:
                nonlocal closed
                try:
                    await source.aclose()
                finally:
                    if not closed:
                        closed = True
                        tracker.count -= 1

        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=Tracked(),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


async def run_until(
    clock: ManualClock,
    done: Callable[[], bool],
    *,
    in_flight: InFlight,
    limit: float,
    what: str,
) -> float:
    """Advance ``clock`` wake-up by wake-up (never with a request in flight) until ``done()``;
    fail if that needs more than ``limit`` virtual seconds. Returns the clock's time then."""
    start = clock.monotonic()
    seen: list[tuple[int, float | None]] = []

    def settled() -> bool:
        if done():
            return True
        state = (in_flight.count, clock.next_deadline())
        steady = bool(seen) and seen[-1] == state
        seen.append(state)
        return steady and state[0] == 0 and state[1] is not None

    while not done():
        seen.clear()
        await eventually(settled, what=f"{what}: the next wake-up")
        if done():
            break
        wake = clock.next_deadline()
        assert wake is not None
        if wake - start > limit:
            raise AssertionError(f"{what}: not done within {limit}s of clock time")
        advance_to(clock, wake)
    return clock.monotonic()


def advance_to(clock: ManualClock, wake: float) -> None:
    """Advance ``clock`` to at least ``wake`` (``now + (wake - now)`` can fall one float step
    short of ``wake``, which would leave that sleeper asleep)."""
    clock.advance(max(0.0, wake - clock.monotonic()) + 1e-9)
