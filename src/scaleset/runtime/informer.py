"""List+watch of one kind into a slim, indexed cache, with change notifications.

Per namespace (or once for all namespaces) an informer runs the reflector loop:

1. **List** in pages of ``page_size`` (``limit``/``continue``), yielding to the event loop between
   pages, each page applied to the cache as it arrives (an object unchanged since it was cached
   keeps its cached copy) and what the list did not show removed at its end, so the cache holds
   one copy of each object throughout — never a whole list beside it; handlers see the
   difference as ADDED/MODIFIED/DELETED events. The first complete list marks the scope
   *synced* — the readiness signal does not depend on bookmarks, which old servers send rarely.
2. **Watch** from the list's ``resourceVersion`` with ``allowWatchBookmarks`` and a jittered
   ``timeoutSeconds`` (``watch_timeout`` .. 2x), applying events to the cache and remembering the
   last ``resourceVersion`` seen (events and bookmarks).
3. **Re-watch from the last seen version** when the server ends the stream, when the connection
   breaks (after a back-off), and when the stream has been silent for ``idle_timeout`` (70 s, on
   the injected clock): the server replays everything after that version, so nothing is lost and
   nothing is listed again. A dead connection (a NAT entry dropped, a peer gone without a reset)
   sends nothing, so silence is the only sign of it; kube-apiserver sends a bookmark about every
   minute once anything changed, but nothing at all on an idle kind, so a healthy idle stream is
   re-opened too — at the cost of one watch request, not of a list.
4. **Relist** only when the server says the version is gone (410, in the stream or on the
   request): what happened meanwhile cannot be known from the stream, so the list is the truth
   again. Other errors (403, 5xx) back off and retry. A watch answered 410 right after its list
   is listed again at once the first time: kube-apiserver does that when the resource's watch
   cache started after the list it served from etcd (seen when a CustomResourceDefinition's spec
   changed in between: its resource is then served from new storage), and a second list is
   served at a version the new cache holds. Only a second 410 in a row with no event between
   backs off, so a server that keeps answering so is not listed in a loop.

An error of a type in ``give_up_on`` (a list or watch refused with 403, for a watch that has a
fallback) ends ``run`` with that error instead of backing off and retrying.

Handlers are plain functions called synchronously for every change; they must only enqueue work
(a slow handler stalls the informer). A handler that raises is logged and does not stop others.

``freeze_gc=True`` (the default, as production runs it) decodes each list page with the cycle
collector paused and then ``gc.freeze()``s it (``KubeClient.list_page``), so no full collection
walks the whole cache in the middle of a relist — bench/kube_informer.py measures the event-loop
pause with and without. When the last relist in progress ends, everything is unfrozen and
collected once (``runtime.collector``): nothing stays frozen, so no garbage is kept for good.
"""

from __future__ import annotations

import asyncio
import builtins
import random
from collections.abc import AsyncIterator, Callable, Sequence

from scaleset.backoff import Backoff
from scaleset.clock import Clock, SystemClock
from scaleset.kube.client import DEFAULT_PAGE_SIZE, KubeClient, WatchEvent
from scaleset.kube.errors import (
    ApiStatusError,
    Gone,
    KubeError,
    KubeResponseError,
    KubeTimeout,
    KubeTransportError,
    NotFound,
)
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import (
    KubeObject,
    ObjectKey,
    Projection,
    drop_managed_fields,
    share_subtrees,
    slim_pod,
)
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD, Kind
from scaleset.logs import get_logger
from scaleset.runtime.collector import relisting
from scaleset.runtime.store import InformerEvent, Store

log = get_logger(__name__)

Handler = Callable[[InformerEvent], None]

ALL_NAMESPACES: tuple[str, ...] = ("",)
"""Pass as ``namespaces`` to list and watch across the whole cluster."""
DEFAULT_WATCH_TIMEOUT = 300
"""Seconds a watch asks the server to keep it open (``timeoutSeconds``) before it is made
again from the last resourceVersion."""


def default_projection(kind: Kind) -> Projection:
    """Pods: ``slim_pod``; EphemeralRunners: ``share_subtrees``; others: ``drop_managed_fields``."""
    if kind == POD:
        return slim_pod
    if kind == EPHEMERAL_RUNNER:
        return share_subtrees
    return drop_managed_fields


class Informer:
    """A cache of one kind (optionally filtered by label/field selector) kept current by watch."""

    def __init__(
        self,
        client: KubeClient,
        kind: Kind,
        *,
        namespaces: Sequence[str] = ALL_NAMESPACES,
        label_selector: str | None = None,
        field_selector: str | None = None,
        projection: Projection | None = None,
        label_index: Sequence[str] = (),
        page_size: int = DEFAULT_PAGE_SIZE,
        watch_timeout: int = DEFAULT_WATCH_TIMEOUT,
        idle_timeout: float = 70.0,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        rng: random.Random | None = None,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        freeze_gc: bool = True,
        give_up_on: tuple[type[KubeError], ...] = (),
    ) -> None:
        if not namespaces:
            raise ValueError("an informer needs at least one namespace (ALL_NAMESPACES for all)")
        if "" in namespaces and len(namespaces) > 1:
            raise ValueError("ALL_NAMESPACES cannot be combined with named namespaces")
        self.client = client
        self.kind = kind
        self.namespaces = tuple(dict.fromkeys(namespaces))
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.projection = projection or default_projection(kind)
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.idle_timeout = idle_timeout
        self.store = Store(label_index=label_index)
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._freeze_gc = freeze_gc
        self._give_up_on = give_up_on
        self._handlers: list[Handler] = []
        self._synced_scopes: set[str] = set()
        self._synced = asyncio.Event()
        self.resource_versions: dict[str, str] = {}

    def __repr__(self) -> str:
        selector = f" {self.label_selector}" if self.label_selector else ""
        return f"Informer({self.kind.kind}{selector} in {self._scope_text()})"

    def _scope_text(self) -> str:
        return "all namespaces" if self.namespaces == ALL_NAMESPACES else ",".join(self.namespaces)

    # ----------------------------------------------------------------- API

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler`` for every change; existing objects arrive as ADDED on first sync."""
        self._handlers.append(handler)

    @property
    def synced(self) -> bool:
        """True once every scope has completed its first list."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def get(self, key: ObjectKey) -> KubeObject | None:
        return self.store.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        return self.store.list(namespace)

    def by_owner(self, owner_uid: str) -> builtins.list[KubeObject]:
        return self.store.by_owner(owner_uid)

    def by_label(self, key: str, value: str) -> builtins.list[KubeObject]:
        return self.store.by_label(key, value)

    async def run(self) -> None:
        """Run the reflector loops until cancelled."""
        async with asyncio.TaskGroup() as group:
            for namespace in self.namespaces:
                group.create_task(self._reflect(namespace), name=f"{self!r}:{namespace or '*'}")

    # ----------------------------------------------------------- internals

    def _notify(self, event: InformerEvent) -> None:
        self._metrics.informer_events.labels(self.kind.kind, event.type).inc()
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:
                log.exception(
                    "informer handler failed", kind=self.kind.kind, key=str(event.obj.key)
                )

    async def _relist(self, namespace: str) -> str:
        self._metrics.informer_relists.labels(self.kind.kind).inc()
        with relisting(self._freeze_gc):
            listed: set[ObjectKey] = set()
            token: str | None = None
            resource_version = ""
            while True:
                page = await self.client.list_page(
                    self.kind,
                    namespace=namespace or None,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    limit=self.page_size,
                    continue_token=token,
                    projection=self.projection,
                    freeze_gc=self._freeze_gc,
                )
                resource_version = resource_version or page.resource_version
                token = page.continue_token
                # each page into the cache as it arrives: one copy of each object at a time
                for step, obj in enumerate(page.items):
                    listed.add(obj.key)
                    event = self.store.apply_listed(obj)
                    if event is not None:
                        self._notify(event)
                    if step % 250 == 249:
                        await asyncio.sleep(0)
                del page
                await asyncio.sleep(0)  # let lease renewal and the long poll run between pages
                if token is None:
                    break
            for step, event in enumerate(self.store.remove_unlisted(listed, namespace or None)):
                self._notify(event)
                if step % 250 == 249:
                    await asyncio.sleep(0)
        self._mark_synced(namespace)
        log.debug(
            "informer listed",
            kind=self.kind.kind,
            namespace=namespace or "*",
            objects=len(listed),
            resource_version=resource_version,
        )
        return resource_version

    def _mark_synced(self, namespace: str) -> None:
        self._synced_scopes.add(namespace)
        if len(self._synced_scopes) == len(self.namespaces):
            self._synced.set()

    def _apply(self, event: WatchEvent) -> None:
        obj = event.object
        if event.type == "DELETED":
            old = self.store.delete(obj.key)
            self._notify(InformerEvent("DELETED", obj, old))
        elif event.type in ("ADDED", "MODIFIED"):
            old = self.store.upsert(obj)
            self._notify(InformerEvent("ADDED" if old is None else "MODIFIED", obj, old))

    async def _reflect(self, namespace: str) -> None:
        backoff = Backoff(self._backoff_initial, self._backoff_max, rng=self._rng)
        scope = namespace or "*"
        self.resource_versions.pop(namespace, None)
        fresh_list = False  # no event seen since the last list
        gone_after_list = 0  # watches answered 410 right after a list, with no event between

        def heard() -> None:  # the first event of a stream: the connection works
            nonlocal fresh_list, gone_after_list
            fresh_list = False
            gone_after_list = 0
            backoff.reset()

        while True:
            try:
                if namespace not in self.resource_versions:
                    self.resource_versions[namespace] = await self._relist(namespace)
                    fresh_list = True
                timeout = int(self.watch_timeout * (1.0 + self._rng.random()))
                async with self.client.watch(
                    self.kind,
                    namespace=namespace or None,
                    resource_version=self.resource_versions[namespace],
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    timeout_seconds=timeout,
                    projection=self.projection,
                ) as events:
                    await self._follow(events, namespace, heard)
                self._metrics.informer_watch_restarts.labels(self.kind.kind, "ended").inc()
            except self._give_up_on:
                raise
            except _Silent:
                log.debug(
                    "informer watch silent, re-watching",
                    kind=self.kind.kind,
                    scope=scope,
                    idle_seconds=self.idle_timeout,
                )
                self._metrics.informer_watch_restarts.labels(self.kind.kind, "silent").inc()
            except Gone:
                log.info("informer history expired, relisting", kind=self.kind.kind, scope=scope)
                self._metrics.informer_watch_restarts.labels(self.kind.kind, "gone").inc()
                relisting = namespace not in self.resource_versions  # the list itself expired
                self.resource_versions.pop(namespace, None)
                if fresh_list or relisting:  # gone right after (or during) a list
                    gone_after_list += 1
                    if gone_after_list > 1:  # once is a watch cache younger than the list
                        await self._clock.sleep(backoff.next())  # more often: do not spin
            except (KubeTransportError, KubeResponseError) as error:
                cause = "timeout" if isinstance(error, KubeTimeout) else "broken"
                log.info(
                    "informer watch broken, re-watching from the last seen version",
                    kind=self.kind.kind,
                    scope=scope,
                    resource_version=self.resource_versions.get(namespace, "(relist)"),
                    error=str(error),
                )
                self._metrics.informer_watch_restarts.labels(self.kind.kind, cause).inc()
                await self._clock.sleep(backoff.next())
            except NotFound as error:
                log.warning(
                    "informer: resource type not served (CustomResourceDefinition missing?)",
                    kind=self.kind.kind,
                    resource=self.kind.resource_name,
                    scope=scope,
                    error=error.message,
                )
                self._metrics.informer_watch_restarts.labels(self.kind.kind, "error").inc()
                await self._clock.sleep(backoff.next())
            except ApiStatusError as error:
                log.warning(
                    "informer request failed",
                    kind=self.kind.kind,
                    scope=scope,
                    code=error.code,
                    reason=error.reason,
                    error=error.message,
                )
                self._metrics.informer_watch_restarts.labels(self.kind.kind, "error").inc()
                await self._clock.sleep(backoff.next())
            except KubeError as error:  # configuration problems surface here too
                log.error("informer failed", kind=self.kind.kind, scope=scope, error=str(error))
                await self._clock.sleep(backoff.next())

    async def _follow(
        self, events: AsyncIterator[WatchEvent], namespace: str, heard: Callable[[], None]
    ) -> None:
        """Apply ``events`` until the stream ends, or raise its error; ``heard()`` at the first
        event; raise ``_Silent`` when nothing (not even a bookmark) arrives for
        ``idle_timeout`` on the injected clock."""
        last_heard = self._clock.monotonic()

        async def read() -> None:
            nonlocal last_heard
            first = True
            async for event in events:
                last_heard = self._clock.monotonic()
                if first:
                    first = False
                    heard()
                if event.object.resource_version:
                    self.resource_versions[namespace] = event.object.resource_version
                if event.type != "BOOKMARK":
                    self._apply(event)

        reader = asyncio.ensure_future(read())
        try:
            while not reader.done():
                left = last_heard + self.idle_timeout - self._clock.monotonic()
                if left <= 0:
                    raise _Silent
                watchdog = asyncio.ensure_future(self._clock.sleep(left))
                try:
                    await asyncio.wait({reader, watchdog}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    watchdog.cancel()
            reader.result()  # the stream's own error, if it failed
        finally:
            # ended and its outcome retrieved however we leave (cancelled while it failed too:
            # the error would otherwise be reported as never retrieved)
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


class _Silent(Exception):
    """A watch stream sent nothing (not even a bookmark) for ``idle_timeout``."""
