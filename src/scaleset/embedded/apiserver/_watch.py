"""Watch streams: newline-delimited JSON events over a chunked HTTP response.

A watch without a resourceVersion (or with "0") starts with synthetic ADDED events for what
exists; a watch from resourceVersion N replays the retained events after N, or — when N is older
than the retained window — sends one ERROR event carrying a 410 ``Expired`` Status and ends, as
the real watch cache does. BOOKMARK events (on request) come two seconds before the watch's
timeout and then every ``bookmark_interval`` seconds, but only once the resourceVersion has moved
past what the client has seen: on a quiet server there are none, as with the watch cache.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from typing import Any

from aiohttp import web

from scaleset.embedded.apiserver import _errors
from scaleset.embedded.apiserver._kinds import ResourceType
from scaleset.embedded.apiserver._rest import ListQuery, Rest
from scaleset.embedded.apiserver._store import StoredEvent, Watcher, WatchItem

JsonObj = dict[str, Any]

_DEFAULT_TIMEOUT_RANGE = (1800.0, 3600.0)
_BOOKMARK_LEAD = 2.0


def _line(event_type: str, obj: JsonObj) -> bytes:
    return (json.dumps({"type": event_type, "object": obj}, separators=(",", ":")) + "\n").encode()


class WatchSession:
    """One watch request from start to end."""

    def __init__(
        self,
        rest: Rest,
        rt: ResourceType,
        namespace: str,
        query: ListQuery,
        params: dict[str, str],
        bookmark_interval: float,
    ) -> None:
        self.rest = rest
        self.rt = rt
        self.namespace = namespace
        self.query = query
        self.bookmarks = params.get("allowWatchBookmarks", "").lower() in ("true", "1")
        self.bookmark_interval = bookmark_interval
        timeout_text = params.get("timeoutSeconds", "")
        try:
            self.timeout = (
                float(timeout_text) if timeout_text else random.uniform(*_DEFAULT_TIMEOUT_RANGE)  # noqa: S311
            )
        except ValueError:
            raise _errors.bad_request(f"invalid timeoutSeconds: {timeout_text}") from None
        self.abrupt = False
        self.last_rv = 0
        self.render: Callable[[JsonObj], JsonObj] = lambda obj: obj

    def _start(self) -> tuple[Watcher, list[StoredEvent], _errors.ApiError | None]:
        """Register the watcher and compute the initial events, with no await in between."""
        rest, rt = self.rest, self.rt
        watcher = rest.open_watch(rt, self.namespace, self.query)
        rv_text = self.query.resource_version
        if rv_text in ("", "0"):
            initial = [
                StoredEvent(int(obj["metadata"]["resourceVersion"]), "ADDED", obj, None)
                for _, obj in rest.store.sorted_items(rt.bucket)
                if watcher.matches(obj)
            ]
            return watcher, initial, None
        try:
            rv = int(rv_text)
        except ValueError:
            rest.close_watch(rt, watcher)
            raise _errors.bad_request(f"invalid resource version: {rv_text}") from None
        events = rest.store.events_since(rt.bucket, rv)
        if events is None:
            rest.close_watch(rt, watcher)
            gone = _errors.expired(
                f"too old resource version: {rv} ({rest.store.oldest_rv(rt.bucket)})"
            )
            return watcher, [], gone
        replay = Watcher(watcher.matches)
        for event in events:
            replay.offer(event)
        initial = []
        while not replay.queue.empty():
            item = replay.queue.get_nowait()
            if isinstance(item, StoredEvent):
                initial.append(item)
        return watcher, initial, None

    def _encode(self, item: StoredEvent) -> bytes:
        self.last_rv = max(self.last_rv, item.rv)
        return _line(item.type, self.render(self.rt.present(item.obj)))

    def _bookmark(self) -> bytes:
        return _line(
            "BOOKMARK",
            {
                "kind": self.rt.kind,
                "apiVersion": self.rt.api_version,
                "metadata": {"resourceVersion": str(self.rest.store.rv), "creationTimestamp": None},
            },
        )

    async def run(self, request: web.Request, active: set[WatchSession]) -> web.StreamResponse:
        watcher, initial, gone = self._start()
        start_rv = self.query.resource_version
        self.last_rv = (
            int(start_rv) if start_rv.isdigit() and start_rv != "0" else self.rest.store.rv
        )
        self.watcher = watcher
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + self.timeout
        next_bookmark = max(start, deadline - _BOOKMARK_LEAD) if self.bookmarks else None
        if self.bookmarks and self.bookmark_interval > 0:
            next_bookmark = min(next_bookmark or deadline, start + self.bookmark_interval)
        active.add(self)
        try:
            await response.prepare(request)
            if gone is not None:
                await response.write(_line("ERROR", gone.status()))
                await response.write_eof()
                return response
            if initial:
                await response.write(b"".join(self._encode(e) for e in initial))
            while True:
                now = loop.time()
                if now >= deadline:
                    break
                wait_until = deadline if next_bookmark is None else min(deadline, next_bookmark)
                if next_bookmark is not None and now >= next_bookmark:
                    if self.rest.store.rv > self.last_rv:
                        # like the watch cache: a bookmark only for a version the client lacks
                        self.last_rv = self.rest.store.rv
                        await response.write(self._bookmark())
                    next_bookmark = (
                        now + self.bookmark_interval if self.bookmark_interval > 0 else None
                    )
                    continue
                try:
                    item: WatchItem = await asyncio.wait_for(
                        watcher.queue.get(), timeout=max(wait_until - now, 0.0)
                    )
                except TimeoutError:
                    continue
                if item is None:
                    if self.abrupt and request.transport is not None:
                        request.transport.close()
                        return response
                    break
                chunk = [self._encode(item)] if isinstance(item, StoredEvent) else []
                while not watcher.queue.empty():
                    more = watcher.queue.get_nowait()
                    if more is None:
                        watcher.queue.put_nowait(None)
                        break
                    if isinstance(more, StoredEvent):
                        chunk.append(self._encode(more))
                if chunk:
                    await response.write(b"".join(chunk))
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away; nothing more to send
        finally:
            active.discard(self)
            self.rest.close_watch(self.rt, watcher)
        return response

    def drop(self, abrupt: bool) -> None:
        self.abrupt = abrupt
        self.watcher.close()
