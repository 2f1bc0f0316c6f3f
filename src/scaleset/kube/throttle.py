"""The client's QPS and burst, handed out in turn across lanes.

One token bucket (``--k8s-client-qps`` / ``--k8s-client-burst``) bounds every request a
``KubeClient`` sends, watches excepted. While requests wait for a token they wait in *lanes*:
a controller runs each reconcile in the lane of its name and the object's namespace
(``in_lane("ephemeralrunner/team-a")``, ``runtime.controller``); everything else shares the
default lane. Tokens go to the waiting lanes in turn, first come first served within a lane.

Why: the EphemeralRunnerSet controller creates a scale-up's runners with many requests in
flight at once. With one queue, each request of the EphemeralRunner controller that starts
those runners (JIT Secret, status record, pod) waited behind every queued creation, and the
runners already created started late; so did every request for another tenant's namespace.
In lanes a request waits behind at most one request of each other lane. The total rate is the
bucket's, whatever the lanes: this decides only the order.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from scaleset.clock import Clock
from scaleset.kube.ratelimit import TokenBucket

DEFAULT_LANE = ""

_LANE: ContextVar[str] = ContextVar("kube_request_lane", default=DEFAULT_LANE)


@contextmanager
def in_lane(name: str) -> Iterator[None]:
    """Requests sent inside this block (and by tasks it starts) wait in lane ``name``."""
    token = _LANE.set(name)
    try:
        yield
    finally:
        _LANE.reset(token)


def current_lane() -> str:
    """The lane a request sent here would wait in."""
    return _LANE.get()


class Throttle:
    """Takes the bucket's tokens for requests, in turn across lanes while any wait."""

    def __init__(self, bucket: TokenBucket, clock: Clock) -> None:
        self._bucket = bucket
        self._clock = clock
        self._lanes: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._dispatcher: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """Requests waiting for a token now."""
        return sum(1 for queue in self._lanes.values() for f in queue if not f.done())

    async def take(self) -> float:
        """Wait for a token in the current lane; return the seconds waited."""
        if not self._lanes and self._bucket.try_take() <= 0.0:
            return 0.0  # nobody waits and a token is there: no queue to keep in order
        started = self._clock.monotonic()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lanes.setdefault(current_lane(), deque()).append(future)
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.ensure_future(self._dispatch())
        try:
            await future
        except asyncio.CancelledError:
            if not self.waiting and self._dispatcher is not None:
                self._dispatcher.cancel()  # nobody left to hand a token to
                self._dispatcher = None  # the next waiter starts a new one
            raise
        return self._clock.monotonic() - started

    def _head(self) -> str | None:
        """The lane whose turn it is, with its cancelled waiters dropped; None: nobody waits."""
        while self._lanes:
            lane, queue = next(iter(self._lanes.items()))
            while queue and queue[0].done():
                queue.popleft()
            if queue:
                return lane
            del self._lanes[lane]
        return None

    async def _dispatch(self) -> None:
        while (lane := self._head()) is not None:
            wait = self._bucket.try_take()
            if wait > 0.0:
                await self._clock.sleep(wait)
                continue  # whose turn it is may have changed meanwhile
            queue = self._lanes[lane]
            queue.popleft().set_result(None)
            if queue:
                self._lanes.move_to_end(lane)
            else:
                del self._lanes[lane]
