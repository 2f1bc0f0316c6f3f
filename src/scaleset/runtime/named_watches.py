"""Watches of single named objects, started and stopped as reconciles come to need them.

An ``InformerSet`` holds the caches a process declares before it starts: whole kinds, or the
objects a label selects. Some objects a controller reads are known only by name, from a user's
spec, in a namespace where nothing else of that kind is ours: the GitHub config Secret of a
scale set, its proxy credential Secrets. Caching every Secret of such a namespace would hold
every tenant credential in the controller's memory; reading each one fresh at every resync costs
a request per object and period, and sees a change only at the next resync.

``NamedWatches`` watches exactly the objects someone follows: one list+watch per object, scoped
to its namespace and selected by ``metadata.name`` (an ``Informer`` with a field selector). An
*owner* (a reconciled object) ``follow``s the keys it reads; a change of one of them calls the
owner's ``on_change`` (enqueue it), and ``cached`` answers from the watch once it has listed.
A watch nobody follows any more is stopped. ``run`` runs the watches (while leading: a manager's
leader task); when it stops, every watch stops and ``cached`` answers nothing until they have
listed again.

A namespace where the list or watch is refused (403: the Role grants ``get`` but not
``list``/``watch`` on the kind — ARC's runner-set chart does so for Secrets) is not watched again
for ``retry_forbidden_after`` seconds (1 hour on the clock), logged once each time: its owners
read fresh, as without a watch. ``cached`` never answers an absence: a key the watch does not
hold is read fresh by the caller, which decides whether it is gone.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from scaleset.clock import Clock, SystemClock
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Forbidden
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import Kind
from scaleset.logs import get_logger
from scaleset.runtime.informer import DEFAULT_WATCH_TIMEOUT, Informer
from scaleset.runtime.store import InformerEvent

log = get_logger(__name__)

WatchedRead = Callable[[Kind, str, str], KubeObject | None]
"""``NamedWatches.holds`` for a reader of any kind (kind, namespace, name): the object as a watch
holds it; None: read it fresh."""

DEFAULT_RETRY_FORBIDDEN_AFTER = 3600.0
"""Seconds a namespace whose watch was refused (403) is read fresh before a watch is tried
again."""


@dataclass
class _Watch:
    """The watch of one key: its informer (None while not running) and who follows it."""

    owners: set[Hashable] = field(default_factory=set)
    informer: Informer | None = None
    task: asyncio.Task[None] | None = None

    @property
    def listed(self) -> bool:
        return (
            self.informer is not None
            and self.informer.synced
            and self.task is not None
            and not self.task.done()
        )


@dataclass
class _Owner:
    keys: frozenset[ObjectKey]
    on_change: Callable[[], None]


class NamedWatches:
    """Watches of named objects of one ``kind``, each running while someone follows it."""

    def __init__(
        self,
        client: KubeClient,
        kind: Kind,
        *,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        rng: random.Random | None = None,
        watch_timeout: int = DEFAULT_WATCH_TIMEOUT,
        retry_forbidden_after: float = DEFAULT_RETRY_FORBIDDEN_AFTER,
    ) -> None:
        if not kind.namespaced:
            raise ValueError(f"named watches need a namespaced kind, not {kind.kind}")
        self.client = client
        self.kind = kind
        self.retry_forbidden_after = retry_forbidden_after
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._rng = rng
        self._watch_timeout = watch_timeout
        self._watches: dict[ObjectKey, _Watch] = {}
        self._owners: dict[Hashable, _Owner] = {}
        self._forbidden: dict[str, float] = {}
        """namespace -> when (the clock's monotonic seconds) a watch there was refused"""
        self._group: asyncio.TaskGroup | None = None

    def __repr__(self) -> str:
        return f"NamedWatches({self.kind.kind}, {len(self._watches)} watched)"

    # ----------------------------------------------------------------- API

    def follow(
        self, owner: Hashable, keys: Iterable[ObjectKey], on_change: Callable[[], None]
    ) -> None:
        """``owner`` reads ``keys`` (replacing what it read before): watch each of them, and
        call ``on_change`` when one changes."""
        wanted = frozenset(key for key in keys if key.namespace and key.name)
        before = self._owners.get(owner)
        self._owners[owner] = _Owner(wanted, on_change)
        for key in before.keys - wanted if before is not None else ():
            self._unfollow(owner, key)
        for key in wanted:
            watch = self._watches.get(key)
            if watch is None:
                watch = self._watches[key] = _Watch()
            watch.owners.add(owner)
            if watch.task is None:
                self._start(key, watch)

    def forget(self, owner: Hashable) -> None:
        """``owner`` reads nothing any more (it is gone): stop what only it watched."""
        before = self._owners.pop(owner, None)
        for key in before.keys if before is not None else ():
            self._unfollow(owner, key)

    def cached(self, key: ObjectKey) -> KubeObject | None:
        """The object as its running, listed watch holds it; None when no such watch holds it
        (not followed, not listed yet, refused, or the object is absent): read it fresh."""
        watch = self._watches.get(key)
        if watch is None or not watch.listed or watch.informer is None:
            return None
        return watch.informer.get(key)

    def holds(self, kind: Kind, namespace: str, name: str) -> KubeObject | None:
        """``cached`` for a reader that reads more kinds than this one: None for another kind
        (``WatchedRead``)."""
        if kind is not self.kind or not name:
            return None
        return self.cached(ObjectKey(namespace, name))

    @property
    def running(self) -> bool:
        """True while ``run`` runs (followed keys are watched)."""
        return self._group is not None

    @property
    def watched(self) -> tuple[ObjectKey, ...]:
        """The keys with a running watch."""
        return tuple(key for key, watch in self._watches.items() if watch.task is not None)

    async def run(self) -> None:
        """Run the followed watches until cancelled (new ones start as they are followed)."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for key, watch in self._watches.items():
                    self._start(key, watch)
                await asyncio.Event().wait()
        finally:
            self._group = None
            for watch in self._watches.values():
                watch.informer = None
                watch.task = None

    # ----------------------------------------------------------- internals

    def _unfollow(self, owner: Hashable, key: ObjectKey) -> None:
        watch = self._watches.get(key)
        if watch is None:
            return
        watch.owners.discard(owner)
        if not watch.owners:
            del self._watches[key]
            if watch.task is not None:
                watch.task.cancel()

    def _refused(self, namespace: str) -> bool:
        refused_at = self._forbidden.get(namespace)
        if refused_at is None:
            return False
        if self._clock.monotonic() - refused_at < self.retry_forbidden_after:
            return True
        del self._forbidden[namespace]
        return False

    def _start(self, key: ObjectKey, watch: _Watch) -> None:
        if self._group is None or self._refused(key.namespace):
            return
        informer = Informer(
            self.client,
            self.kind,
            namespaces=(key.namespace,),
            field_selector=f"metadata.name={key.name}",
            watch_timeout=self._watch_timeout,
            clock=self._clock,
            metrics=self._metrics,
            rng=self._rng,
            freeze_gc=False,
            give_up_on=(Forbidden,),
        )

        def changed(event: InformerEvent) -> None:
            for owner in tuple(watch.owners):
                following = self._owners.get(owner)
                if following is not None:
                    following.on_change()

        informer.add_handler(changed)
        watch.informer = informer
        watch.task = self._group.create_task(
            self._watch(key, watch, informer), name=f"watch {self.kind.kind} {key}"
        )

    async def _watch(self, key: ObjectKey, watch: _Watch, informer: Informer) -> None:
        try:
            await informer.run()
        except* Forbidden as refused:
            error = refused.exceptions[0]
            if key.namespace not in self._forbidden:
                log.warning(
                    "may not list and watch this kind in the namespace: its objects are read "
                    "fresh at each reconcile instead (grant list and watch to see a change at "
                    "once); tried again later",
                    kind=self.kind.kind,
                    namespace=key.namespace,
                    retry_after_seconds=self.retry_forbidden_after,
                    error=getattr(error, "message", str(error)),
                )
            self._forbidden[key.namespace] = self._clock.monotonic()
            for other_key, other in self._watches.items():  # the refusal holds for them all
                if other_key.namespace != key.namespace or other.task is None:
                    continue
                if other is not watch:
                    other.task.cancel()
                other.task = None
                other.informer = None
