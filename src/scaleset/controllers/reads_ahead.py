"""GETs started before the read that decides whether they are needed (``ReadsAhead``).

A reconciler reads one object fresh, then others only when that object says so: one GET after
another. ``ReadsAhead`` starts the others at once, as a guess predicts them (the cached copy of
the first object), beside the first GET. ``take`` hands over a read started ahead of it, or
reads now what was not guessed. ``aclose`` cancels and collects what nobody took: a guess that
was wrong costs one GET more, never a different decision, because an answer is only used where
the reconciler would have read the same object anyway, and a read carries no precondition.
Answers are the API server's as of some moment during the reads rather than after the first:
a reconciler uses this only for objects that no other writer changes in a way its decision
depends on between the two moments (see the EphemeralRunner reconciler's ``observe``).
"""

from __future__ import annotations

import asyncio

from scaleset.controllers.rounds import get_or_none
from scaleset.kube.client import KubeClient
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import Kind


class ReadsAhead:
    """Fresh GETs under way beside another, each taken at most once (use it within
    ``contextlib.aclosing``: leaving that cancels the ones not taken)."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube
        self._reads: dict[tuple[str, ObjectKey], asyncio.Task[KubeObject | None]] = {}

    def start(self, kind: Kind, key: ObjectKey) -> None:
        """Start a GET of ``key`` (None when it is not found), unless one is under way."""
        slot = (kind.plural, key)
        if slot not in self._reads:
            self._reads[slot] = asyncio.ensure_future(get_or_none(self._kube, kind, key))

    def started(self, kind: Kind, key: ObjectKey) -> bool:
        return (kind.plural, key) in self._reads

    async def take(self, kind: Kind, key: ObjectKey) -> KubeObject | None:
        """The answer of the GET started ahead (its error raised here), or a GET now."""
        read = self._reads.pop((kind.plural, key), None)
        if read is None:
            return await get_or_none(self._kube, kind, key)
        return await read

    async def aclose(self) -> None:
        """Cancel the reads nobody took and collect them (their errors are dropped)."""
        reads = list(self._reads.values())
        self._reads.clear()
        for read in reads:
            read.cancel()
        await asyncio.gather(*reads, return_exceptions=True)
