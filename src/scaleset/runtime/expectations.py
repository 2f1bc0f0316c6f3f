"""Expectations: creations and deletions an owner has issued but its cache has not yet shown.

A reconcile works from the informer cache, which lags the API server. An EphemeralRunnerSet that
creates three runners and is reconciled again before the cache shows them would count too few and
create three more (``generateName`` makes every create a new object). So, as Kubernetes'
ReplicaSet controller does, an owner records what it issued (``expect_creations``,
``expect_deletions``) and the informer handlers record what the cache shows
(``creation_observed``, ``deletion_observed``); the owner's reconcile acts on counts only when
``satisfied(owner)``, and otherwise waits for the events (they requeue it).

Creations are counted (names are unknown before the server answers), each observed object
(by UID) once; deletions are tracked by key, so a repeated delete event cannot over-count.
Expectations expire after ``ttl`` seconds (a lost event must not block an owner forever): expired
counts as satisfied, and the next ``expect_*`` call *resets* an expired record instead of adding to
it, as the ReplicaSet controller's ``SetExpectations`` does — otherwise one lost ADDED (an object
created and deleted inside a watch gap) would make every later round of that owner wait the full
TTL. A failed create or delete must be reported with ``creation_failed`` / ``deletion_failed``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from scaleset.clock import Clock, SystemClock
from scaleset.kube.objects import ObjectKey
from scaleset.runtime.store import InformerEvent

O = TypeVar("O", bound=Hashable)  # noqa: E741 - the owner's id (a UID string, usually)

DEFAULT_TTL = 300.0


@dataclass
class _Pending:
    creations: int = 0
    observed: set[str] = field(default_factory=set)  # UIDs (names when a UID is unknown)
    deletions: set[ObjectKey] = field(default_factory=set)
    stamp: float = 0.0


class Expectations(Generic[O]):
    """Per-owner outstanding creations (counted) and deletions (by key)."""

    def __init__(self, *, clock: Clock | None = None, ttl: float = DEFAULT_TTL) -> None:
        self._clock = clock or SystemClock()
        self._ttl = ttl
        self._pending: dict[O, _Pending] = {}

    def _entry(self, owner: O) -> _Pending:
        """The owner's record for new expectations: a fresh one if absent or expired."""
        now = self._clock.monotonic()
        entry = self._pending.get(owner)
        if entry is None or now - entry.stamp >= self._ttl:
            entry = self._pending[owner] = _Pending()
        entry.stamp = now
        return entry

    # ------------------------------------------------------------ the owner

    def expect_creations(self, owner: O, count: int) -> None:
        """Record ``count`` creates about to be issued (call before issuing them)."""
        if count > 0:
            self._entry(owner).creations += count

    def expect_deletions(self, owner: O, keys: Iterable[ObjectKey]) -> None:
        """Record deletes about to be issued (call before issuing them)."""
        keys = list(keys)
        if keys:
            self._entry(owner).deletions.update(keys)

    def creation_failed(self, owner: O) -> None:
        """A create that was expected did not happen (the API call failed)."""
        entry = self._pending.get(owner)
        if entry is not None and entry.creations > 0:
            entry.creations -= 1

    def deletion_failed(self, owner: O, key: ObjectKey) -> None:
        """A delete that was expected did not happen (the API call failed)."""
        entry = self._pending.get(owner)
        if entry is not None:
            entry.deletions.discard(key)

    def satisfied(self, owner: O) -> bool:
        """True when nothing issued is still unobserved (or the record has expired)."""
        entry = self._pending.get(owner)
        if entry is None:
            return True
        if entry.creations <= 0 and not entry.deletions:
            return True
        return self._clock.monotonic() - entry.stamp >= self._ttl

    def pending(self, owner: O) -> tuple[int, frozenset[ObjectKey]]:
        """Outstanding creations and deletions (for logs and tests)."""
        entry = self._pending.get(owner)
        if entry is None:
            return 0, frozenset()
        return max(0, entry.creations), frozenset(entry.deletions)

    def forget(self, owner: O) -> None:
        """Drop the owner's record (the owner is gone, or a fresh start is wanted)."""
        self._pending.pop(owner, None)

    # ------------------------------------------------------ the informer side

    def creation_observed(self, owner: O, name: str, uid: str = "") -> None:
        """The cache shows a new object of ``owner`` (each object, by ``uid``, counts once; a
        same-name recreation is a new object)."""
        identity = uid or name
        entry = self._pending.get(owner)
        if entry is None or entry.creations <= 0 or identity in entry.observed:
            return
        entry.observed.add(identity)
        entry.creations -= 1
        if entry.creations == 0:
            entry.observed.clear()

    def deletion_observed(self, owner: O, key: ObjectKey) -> None:
        """The cache shows ``key`` deleted (or being deleted)."""
        entry = self._pending.get(owner)
        if entry is not None:
            entry.deletions.discard(key)


def observe_owned(expectations: Expectations[str], event: InformerEvent) -> None:
    """Feed an informer event of an owned kind into expectations keyed by controller-owner UID.

    ADDED counts as an observed creation; a deletionTimestamp appearing, or DELETED, as an
    observed deletion (as the ReplicaSet controller counts a terminating pod as deleted).
    A MODIFIED whose UID differs from the old object's is a same-name recreation that happened
    out of sight (a relist after a watch gap): the old object's deletion and the new object's
    creation, each counted for its own controller owner.
    """
    old = event.old
    if event.type == "MODIFIED" and old is not None and old.uid != event.obj.uid:
        old_owner = old.controller_owner
        if old_owner is not None:
            expectations.deletion_observed(old_owner.uid, old.key)
        old = None  # from here on, ``event.obj`` is an object seen for the first time
    owner = event.obj.controller_owner
    if owner is None:
        return
    if event.type == "ADDED" or (event.type == "MODIFIED" and old is None):
        expectations.creation_observed(owner.uid, event.obj.name, event.obj.uid)
    if event.type == "DELETED" or (event.obj.is_deleting and (old is None or not old.is_deleting)):
        expectations.deletion_observed(owner.uid, event.obj.key)
