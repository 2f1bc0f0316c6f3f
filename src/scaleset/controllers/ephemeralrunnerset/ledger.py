"""What this process did to a set's runners that its informer cache may not show yet: the
expectations of the ReplicaSet controller, by name.

A reconcile decides from the cache, which lags the API server. Creates use ``generateName``, so
a reconcile that does not see its own creates would create again. Like Kubernetes' ReplicaSet
controller, the set's creates are expected *before* they are issued (``expect_creates``); unlike
it, each answered create is then remembered by name until the cache shows that name
(``observe``), and until then counts as a starting runner (``phantoms``). A watch event that
never arrives therefore never stalls the set (count-based expectations would block every
scale-up until they expire, and then over-create for the runner the cache misses); a name unseen
for long is checked with a fresh GET (``stale``/``confirm_gone``).

Removals are remembered the same way (``expect_delete``): the cache may still show a runner this
process deleted as idle, and it must count as deleting, not as capacity or a candidate.

``seen_finished`` collects runners the informer saw end after a job (a deletion of a runner
with a job, or one with a job completion), even when they are gone before the next reconcile;
the reconcile moves them into the set's status (``seen_finished``, ``persisted_finished``),
where they survive a restart. With each, the listener's patch id its job completion record names
(``accounted``), so a runner gone before the reconcile still frees its slot at that patch.

State is per process and per set uid; it is a cache of our own recent writes, rebuilt from
nothing after a restart (the cache is then fresh, so nothing is missing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scaleset.api import EphemeralRunnerStatus
from scaleset.clock import Clock
from scaleset.runtime.store import InformerEvent


@dataclass
class _SetRecord:
    creating: int = 0
    created: dict[str, float] = field(default_factory=dict)
    deleted: dict[str, float] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    accounted: dict[str, int] = field(default_factory=dict)


class Ledger:
    """Per-set creates and deletes issued and not yet seen in the cache."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._sets: dict[str, _SetRecord] = {}

    def _record(self, set_uid: str) -> _SetRecord:
        record = self._sets.get(set_uid)
        if record is None:
            record = self._sets[set_uid] = _SetRecord()
        return record

    # ---------------------------------------------------------------- the reconciler

    def expect_creates(self, set_uid: str, count: int) -> None:
        """``count`` creates are about to be issued (call before issuing them)."""
        self._record(set_uid).creating += count

    def created(self, set_uid: str, name: str) -> None:
        """One expected create answered with ``name``."""
        record = self._record(set_uid)
        record.creating = max(0, record.creating - 1)
        record.created[name] = self._clock.monotonic()

    def create_failed(self, set_uid: str) -> None:
        """One expected create failed: nothing to wait for."""
        record = self._record(set_uid)
        record.creating = max(0, record.creating - 1)

    def expect_delete(self, set_uid: str, name: str) -> None:
        """``name`` is being removed (call before the delete)."""
        self._record(set_uid).deleted[name] = self._clock.monotonic()

    def delete_failed(self, set_uid: str, name: str) -> None:
        self._record(set_uid).deleted.pop(name, None)

    def phantoms(self, set_uid: str, cached_names: set[str]) -> int:
        """Creates issued and not yet visible in the cache (counted as starting runners)."""
        record = self._sets.get(set_uid)
        if record is None:
            return 0
        for name in [name for name in record.created if name in cached_names]:
            del record.created[name]
        return record.creating + len(record.created)

    def in_flight_deletes(self, set_uid: str, live_names: set[str]) -> frozenset[str]:
        """Runners removed by this process that the cache still shows alive (names the cache
        shows deleting, or no longer holds, are dropped: the cache has caught up)."""
        record = self._sets.get(set_uid)
        if record is None:
            return frozenset()
        for name in [name for name in record.deleted if name not in live_names]:
            del record.deleted[name]
        return frozenset(record.deleted)

    def stale(self, set_uid: str, older_than: float) -> list[str]:
        """Created names the cache has not shown for ``older_than`` seconds."""
        record = self._sets.get(set_uid)
        if record is None:
            return []
        now = self._clock.monotonic()
        return [name for name, at in record.created.items() if now - at >= older_than]

    def confirm_gone(self, set_uid: str, name: str) -> None:
        """A fresh GET found no runner ``name``: stop counting it."""
        record = self._sets.get(set_uid)
        if record is not None:
            record.created.pop(name, None)

    def seen_finished(self, set_uid: str) -> frozenset[str]:
        """Names the informer saw finishing that the set's status may not hold yet."""
        record = self._sets.get(set_uid)
        return frozenset(record.finished) if record is not None else frozenset()

    def accounted(self, set_uid: str) -> dict[str, int]:
        """Of the names seen finishing: the listener's patch id their completion record names
        (the first count that accounts for them)."""
        record = self._sets.get(set_uid)
        return dict(record.accounted) if record is not None else {}

    def persisted_finished(self, set_uid: str, names: frozenset[str]) -> None:
        """The set's status now holds ``names``: stop carrying them."""
        record = self._sets.get(set_uid)
        if record is not None:
            record.finished.difference_update(names)
            for name in names:
                record.accounted.pop(name, None)

    def forget(self, set_uid: str) -> None:
        self._sets.pop(set_uid, None)

    # ---------------------------------------------------------------- the informer

    def observe(self, event: InformerEvent) -> None:
        """Feed one EphemeralRunner event (handlers must only record, never block)."""
        owner = event.obj.controller_owner
        if owner is None or owner.kind != "EphemeralRunnerSet":
            return
        record = self._record(owner.uid)
        name = event.obj.name
        record.created.pop(name, None)
        if event.type == "DELETED":
            record.deleted.pop(name, None)
        status = _status(event)
        if status is not None and _finished(event, status):
            record.finished.add(name)
            if status.job_completion is not None and status.job_completion.patch_id is not None:
                record.accounted[name] = status.job_completion.patch_id


def _status(event: InformerEvent) -> EphemeralRunnerStatus | None:
    raw = event.obj.raw.get("status")
    if not isinstance(raw, dict) or not raw:
        return None
    return EphemeralRunnerStatus.model_validate(raw)


def _finished(event: InformerEvent, status: EphemeralRunnerStatus) -> bool:
    """The event shows a runner ending after a job (deleted or being deleted with job fields or
    a job completion), or one that Succeeded."""
    if status.phase == "Succeeded" or status.job_completion is not None:
        return True
    ending = event.type == "DELETED" or event.obj.is_deleting
    return ending and status.has_job
