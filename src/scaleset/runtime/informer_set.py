"""The shared informers of one process: one informer per (kind, selectors, namespaces).

Controllers ask the ``InformerSet`` for the informers they read and watch; asking twice for the
same kind and selectors returns the same informer, so every kind is listed and watched once per
process however many controllers use it. ``synced`` (all informers listed once) is ``/readyz``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

from scaleset.clock import Clock, SystemClock
from scaleset.kube.client import DEFAULT_PAGE_SIZE, KubeClient
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import Projection
from scaleset.kube.resources import Kind
from scaleset.runtime.informer import ALL_NAMESPACES, DEFAULT_WATCH_TIMEOUT, Informer

_InformerId = tuple[Kind, str | None, str | None, tuple[str, ...]]


class InformerSet:
    """Creates informers on demand and runs them together."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespaces: Sequence[str] = ALL_NAMESPACES,
        watch_timeout: int = DEFAULT_WATCH_TIMEOUT,
        page_size: int = DEFAULT_PAGE_SIZE,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        rng: random.Random | None = None,
        freeze_gc: bool = True,
    ) -> None:
        self.client = client
        self._freeze_gc = freeze_gc
        self.namespaces = tuple(namespaces)
        self._watch_timeout = watch_timeout
        self._page_size = page_size
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._rng = rng
        self._informers: dict[_InformerId, Informer] = {}
        self._started = False

    def informer(
        self,
        kind: Kind,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        namespaces: Sequence[str] | None = None,
        label_index: Sequence[str] = (),
        projection: Projection | None = None,
    ) -> Informer:
        """The informer for ``kind`` with these selectors (created on first request)."""
        scope = tuple(namespaces) if namespaces is not None else self.namespaces
        if not kind.namespaced:
            scope = ALL_NAMESPACES
        ident: _InformerId = (kind, label_selector, field_selector, scope)
        existing = self._informers.get(ident)
        if existing is not None:
            for label in label_index:
                existing.store.add_label_index(label)
            return existing
        if self._started:
            raise RuntimeError(f"informer for {kind.kind} requested after the informers started")
        informer = Informer(
            self.client,
            kind,
            namespaces=scope,
            label_selector=label_selector,
            field_selector=field_selector,
            projection=projection,
            label_index=label_index,
            page_size=self._page_size,
            watch_timeout=self._watch_timeout,
            clock=self._clock,
            metrics=self._metrics,
            rng=self._rng,
            freeze_gc=self._freeze_gc,
        )
        self._informers[ident] = informer
        return informer

    def all(self) -> list[Informer]:
        return list(self._informers.values())

    @property
    def synced(self) -> bool:
        return all(informer.synced for informer in self._informers.values())

    def unsynced(self) -> list[Informer]:
        return [informer for informer in self._informers.values() if not informer.synced]

    async def wait_synced(self) -> None:
        for informer in list(self._informers.values()):
            await informer.wait_synced()

    async def run(self) -> None:
        """Run every informer until cancelled (no informer may be added afterwards)."""
        self._started = True
        async with asyncio.TaskGroup() as group:
            for informer in self._informers.values():
                group.create_task(informer.run(), name=repr(informer))
