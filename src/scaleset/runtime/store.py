"""The informer's cache: slim objects by key, indexed by owner UID and by chosen label keys.

Pure and synchronous (one event loop, no locks). ``upsert``/``delete`` apply watch events;
``replace`` applies a relist and returns the events that turn the old contents into the new
(ADDED, MODIFIED when the resourceVersion moved, DELETED for what disappeared), so handlers see
a relist the same way as a stream of watch events. An informer applies a paged relist page by
page (``apply_listed``, then ``remove_unlisted``), so the cache never holds a list beside it.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal, NamedTuple

from scaleset.kube.objects import KubeObject, ObjectKey

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


class InformerEvent(NamedTuple):
    """A change to the cache: the new object (the last state for DELETED) and the previous one."""

    type: EventType
    obj: KubeObject
    old: KubeObject | None


class Store:
    """Objects of one kind by ``ObjectKey``, with owner-UID and label indexes."""

    def __init__(self, *, label_index: Sequence[str] = ()) -> None:
        self._objects: dict[ObjectKey, KubeObject] = {}
        self._by_owner: dict[str, set[ObjectKey]] = {}
        self._label_keys = tuple(label_index)
        self._by_label: dict[str, dict[str, set[ObjectKey]]] = {k: {} for k in self._label_keys}

    def add_label_index(self, label: str) -> None:
        """Index one more label key (built from the current contents)."""
        if label in self._by_label:
            return
        self._label_keys = (*self._label_keys, label)
        index: dict[str, set[ObjectKey]] = {}
        for key, obj in self._objects.items():
            value = obj.labels.get(label)
            if value is not None:
                index.setdefault(value, set()).add(key)
        self._by_label[label] = index

    # ---------------------------------------------------------------- reads

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def get(self, key: ObjectKey) -> KubeObject | None:
        return self._objects.get(key)

    def keys(self) -> builtins.list[ObjectKey]:
        return list(self._objects)

    def list(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """All objects, or those of one namespace."""
        if namespace is None:
            return list(self._objects.values())
        return [obj for key, obj in self._objects.items() if key.namespace == namespace]

    def by_owner(self, owner_uid: str) -> builtins.list[KubeObject]:
        """Objects with an ownerReference to ``owner_uid`` (controller or not)."""
        return [self._objects[key] for key in self._by_owner.get(owner_uid, ())]

    def by_label(self, key: str, value: str) -> builtins.list[KubeObject]:
        """Objects whose label ``key`` equals ``value``; ``key`` must be an indexed label."""
        index = self._by_label.get(key)
        if index is None:
            raise KeyError(f"label {key!r} is not indexed (indexed: {self._label_keys})")
        return [self._objects[k] for k in index.get(value, ())]

    def matching(
        self, labels: dict[str, str], namespace: str | None = None
    ) -> builtins.list[KubeObject]:
        """Objects carrying every ``labels`` pair (uses an index when one applies)."""
        indexed = [k for k in labels if k in self._by_label]
        candidates: Iterable[KubeObject]
        if indexed:
            candidates = self.by_label(indexed[0], labels[indexed[0]])
        else:
            candidates = self._objects.values()
        return [
            obj
            for obj in candidates
            if (namespace is None or obj.namespace == namespace)
            and all(obj.labels.get(k) == v for k, v in labels.items())
        ]

    def __iter__(self) -> Iterator[KubeObject]:
        return iter(list(self._objects.values()))

    # --------------------------------------------------------------- writes

    def upsert(self, obj: KubeObject) -> KubeObject | None:
        """Insert or replace; returns the previous object."""
        key = obj.key
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        self._index(key, obj)
        return old

    def delete(self, key: ObjectKey) -> KubeObject | None:
        """Remove; returns the removed object."""
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(
        self, objects: Iterable[KubeObject], namespace: str | None
    ) -> builtins.list[InformerEvent]:
        """Make the objects of ``namespace`` (all when ``None``) exactly ``objects``."""
        return [event for event in self.replace_steps(objects, namespace) if event is not None]

    def replace_steps(
        self, objects: Iterable[KubeObject], namespace: str | None
    ) -> Iterator[InformerEvent | None]:
        """``replace`` one object at a time: yields the event of each step (``None`` when the
        object is unchanged), so a caller can give the event loop a turn between steps. Must be
        consumed to the end; until then the store holds a mix of old and newer objects (each a
        state the server had), and vanished objects are removed last."""
        seen: set[ObjectKey] = set()
        for obj in objects:
            seen.add(obj.key)
            yield self.apply_listed(obj)
        yield from self.remove_unlisted(seen, namespace)

    def apply_listed(self, obj: KubeObject) -> InformerEvent | None:
        """One object of a (re)list: stored, and its event (``None`` when unchanged). An object
        the cache holds at the same uid and resourceVersion is the same state: the cached one is
        kept and ``obj`` dropped, so a relist never leaves two copies of it alive (one here, one
        in whatever still refers to the cached one)."""
        old = self._objects.get(obj.key)
        if old is not None and old.resource_version == obj.resource_version and old.uid == obj.uid:
            return None
        self.upsert(obj)
        if old is None:
            return InformerEvent("ADDED", obj, None)
        return InformerEvent("MODIFIED", obj, old)

    def remove_unlisted(
        self, listed: set[ObjectKey], namespace: str | None
    ) -> Iterator[InformerEvent]:
        """The end of a (re)list: remove what it did not show (in ``namespace``, or anywhere)."""
        for key in builtins.list(self._objects):
            if key in listed or (namespace is not None and key.namespace != namespace):
                continue
            removed = self.delete(key)
            if removed is not None:
                yield InformerEvent("DELETED", removed, removed)

    def _index(self, key: ObjectKey, obj: KubeObject) -> None:
        for ref in obj.owner_references:
            self._by_owner.setdefault(ref.uid, set()).add(key)
        if self._label_keys:
            labels = obj.labels
            for label in self._label_keys:
                value = labels.get(label)
                if value is not None:
                    self._by_label[label].setdefault(value, set()).add(key)

    def _unindex(self, key: ObjectKey, obj: KubeObject) -> None:
        for ref in obj.owner_references:
            owned = self._by_owner.get(ref.uid)
            if owned is not None:
                owned.discard(key)
                if not owned:
                    del self._by_owner[ref.uid]
        if self._label_keys:
            labels = obj.labels
            for label in self._label_keys:
                value = labels.get(label)
                if value is None:
                    continue
                keys = self._by_label[label].get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._by_label[label][value]
