"""Object storage: one dict per resource, one global resourceVersion counter, watch history.

Stands in for etcd plus the watch cache. Stored objects are plain JSON dicts that are never
mutated after they are stored (every write stores a new dict), so readers may serialize them
without copying. Each resource keeps a bounded history of events (the watch window); a watch
from a resourceVersion older than the window gets 410 Gone, as from the real watch cache.

Everything here runs on the server's event loop; nothing is thread-safe by itself.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

JsonObj = dict[str, Any]
BucketId = tuple[str, str]  # (group, plural) of the storage resource
ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped

DEFAULT_HISTORY = 1000
_SNAPSHOTS_KEPT = 256


@dataclass(frozen=True)
class StoredEvent:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    obj: JsonObj
    prev: JsonObj | None


# What a watcher's queue carries: a stored event, a bookmark rv, or None to end the stream.
WatchItem = StoredEvent | int | None


class Watcher:
    """One open watch: a filter and a queue the HTTP handler drains."""

    def __init__(self, matches: Callable[[JsonObj], bool]) -> None:
        self.matches = matches
        self.queue: asyncio.Queue[WatchItem] = asyncio.Queue()

    def offer(self, event: StoredEvent) -> None:
        now = self.matches(event.obj)
        if event.type == "MODIFIED" and event.prev is not None:
            before = self.matches(event.prev)
            if now and before:
                self.queue.put_nowait(event)
            elif now:
                self.queue.put_nowait(StoredEvent(event.rv, "ADDED", event.obj, event.prev))
            elif before:
                prev = _with_rv(event.prev, event.rv)
                self.queue.put_nowait(StoredEvent(event.rv, "DELETED", prev, None))
        elif now:
            self.queue.put_nowait(event)

    def close(self) -> None:
        self.queue.put_nowait(None)


def _with_rv(obj: JsonObj, rv: int) -> JsonObj:
    return {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(rv)}}


@dataclass
class Bucket:
    """The objects of one storage resource and their recent history."""

    objects: dict[ObjKey, JsonObj] = field(default_factory=dict)
    history: deque[StoredEvent] = field(default_factory=deque)
    floor_rv: int = 0  # events after floor_rv are all in history
    last_write_rv: int = 0
    watchers: set[Watcher] = field(default_factory=set)


class Store:
    """All buckets, the resourceVersion counter and list snapshots for paging."""

    def __init__(self, history_size: int = DEFAULT_HISTORY) -> None:
        self.rv = 1
        self.history_size = history_size
        self.buckets: dict[BucketId, Bucket] = {}
        self._snapshots: OrderedDict[tuple[BucketId, int], list[tuple[ObjKey, JsonObj]]] = (
            OrderedDict()
        )
        self.listeners: list[Callable[[BucketId, StoredEvent], None]] = []

    # -- buckets -------------------------------------------------------------------------------
    def bucket(self, bucket_id: BucketId) -> Bucket:
        found = self.buckets.get(bucket_id)
        if found is None:
            found = Bucket(floor_rv=self.rv)
            self.buckets[bucket_id] = found
        return found

    def drop_bucket(self, bucket_id: BucketId) -> None:
        gone = self.buckets.pop(bucket_id, None)
        if gone is not None:
            for watcher in list(gone.watchers):
                watcher.close()

    # -- reads ---------------------------------------------------------------------------------
    def get(self, bucket_id: BucketId, key: ObjKey) -> JsonObj | None:
        found = self.buckets.get(bucket_id)
        return None if found is None else found.objects.get(key)

    def sorted_items(self, bucket_id: BucketId) -> list[tuple[ObjKey, JsonObj]]:
        found = self.buckets.get(bucket_id)
        if found is None:
            return []
        return sorted(found.objects.items(), key=lambda kv: kv[0])

    def iter_namespace(self, bucket_id: BucketId, namespace: str) -> Iterator[JsonObj]:
        found = self.buckets.get(bucket_id)
        if found is None:
            return
        for (ns, _), obj in list(found.objects.items()):
            if ns == namespace:
                yield obj

    # -- writes --------------------------------------------------------------------------------
    def _record(self, bucket_id: BucketId, bucket: Bucket, event: StoredEvent) -> None:
        bucket.last_write_rv = event.rv
        bucket.history.append(event)
        while len(bucket.history) > self.history_size:
            dropped = bucket.history.popleft()
            bucket.floor_rv = dropped.rv
        for watcher in list(bucket.watchers):
            watcher.offer(event)
        for listener in self.listeners:
            listener(bucket_id, event)

    def put(self, bucket_id: BucketId, key: ObjKey, obj: JsonObj) -> JsonObj:
        """Store ``obj`` (which the store now owns) with a new resourceVersion."""
        bucket = self.bucket(bucket_id)
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        prev = bucket.objects.get(key)
        bucket.objects[key] = obj
        self._record(
            bucket_id,
            bucket,
            StoredEvent(self.rv, "MODIFIED" if prev is not None else "ADDED", obj, prev),
        )
        return obj

    def remove(self, bucket_id: BucketId, key: ObjKey) -> JsonObj | None:
        """Delete the object; the DELETED event carries its last state at a new version."""
        bucket = self.bucket(bucket_id)
        prev = bucket.objects.pop(key, None)
        if prev is None:
            return None
        self.rv += 1
        self._record(
            bucket_id, bucket, StoredEvent(self.rv, "DELETED", _with_rv(prev, self.rv), prev)
        )
        return prev

    # -- history -------------------------------------------------------------------------------
    def events_since(self, bucket_id: BucketId, rv: int) -> list[StoredEvent] | None:
        """Events after ``rv``, or None when ``rv`` is older than the retained window."""
        bucket = self.bucket(bucket_id)
        if rv < bucket.floor_rv:
            return None
        history = bucket.history
        if not history or history[-1].rv <= rv:
            return []
        rvs = [e.rv for e in history]
        start = bisect.bisect_right(rvs, rv)
        return list(history)[start:]

    def oldest_rv(self, bucket_id: BucketId) -> int:
        return self.bucket(bucket_id).floor_rv

    def compact(self) -> None:
        """Forget all history: watches from any earlier resourceVersion get 410 Gone."""
        for bucket in self.buckets.values():
            bucket.history.clear()
            bucket.floor_rv = self.rv
        self._snapshots.clear()

    # -- paging snapshots ----------------------------------------------------------------------
    def remember_snapshot(
        self, bucket_id: BucketId, rv: int, items: list[tuple[ObjKey, JsonObj]]
    ) -> None:
        self._snapshots[(bucket_id, rv)] = items
        self._snapshots.move_to_end((bucket_id, rv))
        while len(self._snapshots) > _SNAPSHOTS_KEPT:
            self._snapshots.popitem(last=False)

    def snapshot(self, bucket_id: BucketId, rv: int) -> list[tuple[ObjKey, JsonObj]] | None:
        """The sorted items as they were at ``rv`` (None when no longer known)."""
        found = self._snapshots.get((bucket_id, rv))
        if found is not None:
            return found
        bucket = self.bucket(bucket_id)
        if rv < bucket.floor_rv:
            return None
        if bucket.last_write_rv <= rv:
            return self.sorted_items(bucket_id)
        # roll the current state back through the retained history, like a read from etcd
        state = dict(bucket.objects)
        for event in reversed(bucket.history):
            if event.rv <= rv:
                break
            meta = event.obj.get("metadata", {})
            key = (meta.get("namespace", ""), meta.get("name", ""))
            if event.type == "ADDED" or event.prev is None:
                state.pop(key, None)
            else:
                state[key] = event.prev
        items = sorted(state.items(), key=lambda kv: kv[0])
        self.remember_snapshot(bucket_id, rv, items)
        return items
