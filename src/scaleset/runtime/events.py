"""Kubernetes Events for every lifecycle decision (lifecycle.md L9): aggregated, rate-limited,
and never able to fail a reconcile.

``emit()`` only enqueues (it never blocks and never raises); ``run()`` posts in the background.
Like client-go's recorder:

- **Aggregation**: the same (object, type, reason, message) within ``aggregate_seconds`` bumps
  ``count`` and ``lastTimestamp`` of the existing Event with a merge patch instead of creating a
  new one (a new Event is created if the old one is gone);
- **Rate limit**: a token bucket per involved object (burst 25, one token per 5 minutes), so a
  crash-looping object cannot flood the API server;
- **Failure tolerance**: a post that fails (403 because RBAC lacks ``events``, 5xx, timeout) is
  logged and counted in ``scaleset_kube_events_dropped_total{cause="post_failed"}`` — it never
  propagates. A full queue drops the event (``cause="queue_full"``).
"""

from __future__ import annotations

import asyncio
import secrets
import socket
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NamedTuple

from scaleset.clock import Clock, SystemClock
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import AlreadyExists, KubeError, NotFound
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import JsonObject, KubeObject, ObjectKey
from scaleset.kube.ratelimit import TokenBucket
from scaleset.kube.resources import EVENT
from scaleset.logs import get_logger

log = get_logger(__name__)

EventType = Literal["Normal", "Warning"]

MAX_MESSAGE = 1024


class _Pending(NamedTuple):
    involved: JsonObject
    namespace: str
    type: EventType
    reason: str
    message: str


@dataclass
class _Aggregate:
    name: str
    namespace: str
    count: int
    first_timestamp: str
    seen_at: float


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Posts Events about objects on behalf of ``component``."""

    def __init__(
        self,
        client: KubeClient,
        *,
        component: str = "scaleset-controller",
        instance: str | None = None,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        burst: int = 25,
        refill_seconds: float = 300.0,
        aggregate_seconds: float = 600.0,
        cache_size: int = 4096,
        queue_size: int = 1000,
    ) -> None:
        self.client = client
        self.component = component
        self.instance = instance or socket.gethostname()
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._burst = burst
        self._refill = refill_seconds
        self._aggregate_seconds = aggregate_seconds
        self._cache_size = cache_size
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=queue_size)
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._aggregates: OrderedDict[tuple[str, str, str, str], _Aggregate] = OrderedDict()
        self._last_nanos = 0

    # ------------------------------------------------------------------ API

    def emit(self, obj: KubeObject, type_: EventType, reason: str, message: str) -> None:
        """Record an Event about ``obj`` (non-blocking; dropped with a metric if over limits)."""
        involved: JsonObject = {
            "apiVersion": obj.kind.api_version,
            "kind": obj.kind.kind,
            "name": obj.name,
            "uid": obj.uid,
            "resourceVersion": obj.resource_version,
        }
        if obj.namespace:
            involved["namespace"] = obj.namespace
        pending = _Pending(
            involved, obj.namespace or "default", type_, reason, message[:MAX_MESSAGE]
        )
        try:
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            self._metrics.events_dropped.labels("queue_full").inc()

    async def run(self) -> None:
        """Post queued events until cancelled."""
        while True:
            pending = await self._queue.get()
            try:
                await self._post(pending)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Wait until every event emitted so far has been posted or dropped."""
        await self._queue.join()

    # ------------------------------------------------------------ internals

    def _allowed(self, involved: JsonObject) -> bool:
        ident = str(involved.get("uid") or f"{involved.get('namespace')}/{involved.get('name')}")
        bucket = self._buckets.get(ident)
        if bucket is None:
            bucket = TokenBucket(1.0 / self._refill, self._burst, self._clock)
            self._buckets[ident] = bucket
            if len(self._buckets) > self._cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(ident)
        return bucket.try_take() == 0.0

    async def _post(self, pending: _Pending) -> None:
        if not self._allowed(pending.involved):
            self._metrics.events_dropped.labels("rate_limited").inc()
            return
        ident = str(pending.involved.get("uid") or pending.involved.get("name"))
        cache_key = (ident, pending.type, pending.reason, pending.message)
        now = self._clock.monotonic()
        wall = _timestamp(self._clock.now())
        try:
            aggregate = self._aggregates.get(cache_key)
            if aggregate is not None and now - aggregate.seen_at < self._aggregate_seconds:
                try:
                    await self.client.patch_merge(
                        EVENT,
                        ObjectKey(aggregate.namespace, aggregate.name),
                        {"count": aggregate.count + 1, "lastTimestamp": wall},
                    )
                except NotFound:
                    pass
                else:
                    aggregate.count += 1
                    aggregate.seen_at = now
                    self._aggregates.move_to_end(cache_key)
                    self._metrics.events_posted.labels("aggregated").inc()
                    return
            body = self._body(pending, wall)
            try:
                created = await self.client.create(EVENT, body)
            except AlreadyExists:
                # Another recorder (a second process, a restarted one, the kubelet for a pod of
                # the same name) took the name at the same clock instant: a unique name instead.
                body["metadata"]["name"] += f".{secrets.token_hex(4)}"
                created = await self.client.create(EVENT, body)
            self._aggregates[cache_key] = _Aggregate(created.name, created.namespace, 1, wall, now)
            self._aggregates.move_to_end(cache_key)
            if len(self._aggregates) > self._cache_size:
                self._aggregates.popitem(last=False)
            self._metrics.events_posted.labels("created").inc()
        except KubeError as error:
            self._metrics.events_dropped.labels("post_failed").inc()
            log.warning(
                "could not post event",
                reason=pending.reason,
                involved=f"{pending.involved.get('kind')} {pending.namespace}/"
                f"{pending.involved.get('name')}",
                error=str(error),
            )

    def _event_name(self, involved_name: str) -> str:
        """``<object>.<nanoseconds in hex>`` (client-go's naming), unique within this recorder."""
        nanos = int(self._clock.now().timestamp() * 1_000_000_000)
        self._last_nanos = max(nanos, self._last_nanos + 1)
        return f"{involved_name}.{self._last_nanos:x}"

    def _body(self, pending: _Pending, wall: str) -> JsonObject:
        return {
            "metadata": {
                "name": self._event_name(str(pending.involved.get("name"))),
                "namespace": pending.namespace,
            },
            "involvedObject": pending.involved,
            "reason": pending.reason,
            "message": pending.message,
            "type": pending.type,
            "source": {"component": self.component, "host": self.instance},
            "firstTimestamp": wall,
            "lastTimestamp": wall,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
        }
