"""The control loops a real cluster runs next to the API server, reduced to what tests rely on.

- CRD establishing (apiextensions-apiserver): an established CRD's resources are served and its
  status gets ``acceptedNames`` and the ``NamesAccepted``/``Established`` conditions; a deleted
  CRD's instances are removed before its cleanup finalizer goes and it stops being served. A
  change of an established CRD's spec re-creates its resource's storage, as kube-apiserver's
  does: the resource's open watches end and its watch history starts again at the current
  version, so a watch from an earlier one is answered 410.
- Garbage collection (kube-controller-manager): dependents whose owners are all gone are deleted
  (background cascade); an owner deleted with ``foregroundDeletion`` waits for its blocking
  dependents; with ``orphan`` its dependents lose the owner reference.
- Namespace deletion (kube-controller-manager): a terminating namespace's content is deleted, then
  its ``kubernetes`` finalizer is removed and the namespace goes.
- Namespace defaults (kube-controller-manager): every active namespace holds a ``default``
  ServiceAccount and the ``kube-root-ca.crt`` ConfigMap (``_namespace_defaults``).

They react to store events through one work queue drained by a background task;
``settled()`` waits, bounded, until that queue is drained.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any

from scaleset.embedded.apiserver._crds import (
    CLEANUP_FINALIZER,
    CRD_GROUP,
    served_types,
    storage_version,
)
from scaleset.embedded.apiserver._errors import ApiError
from scaleset.embedded.apiserver._kinds import ResourceType
from scaleset.embedded.apiserver._namespace_defaults import (
    namespace_to_sync,
    sync_namespace_defaults,
)
from scaleset.embedded.apiserver._registry import Registry
from scaleset.embedded.apiserver._rest import (
    CONTROLLER_MANAGER,
    MERGE_PATCH,
    DeleteOptions,
    Rest,
    set_condition,
)
from scaleset.embedded.apiserver._store import BucketId, ObjKey, Store, StoredEvent

JsonObj = dict[str, Any]
log = logging.getLogger(__name__)

CRD_BUCKET: BucketId = (CRD_GROUP, "customresourcedefinitions")
NAMESPACE_BUCKET: BucketId = ("", "namespaces")
Work = tuple[str, Any]


def _owner_uids(obj: JsonObj | None) -> set[str]:
    if obj is None:
        return set()
    refs = obj.get("metadata", {}).get("ownerReferences") or []
    return {ref.get("uid", "") for ref in refs if isinstance(ref, dict) and ref.get("uid")}


class Controllers:
    """CRD establishing, garbage collection, namespace finalization and namespace defaults."""

    def __init__(
        self,
        rest: Rest,
        registry: Registry,
        store: Store,
        *,
        root_ca_pem: str,
        garbage_collection: bool = True,
    ) -> None:
        self.rest = rest
        self.registry = registry
        self.store = store
        self.root_ca_pem = root_ca_pem
        self.garbage_collection = garbage_collection
        self._queue: asyncio.Queue[Work] = asyncio.Queue()
        self._dependents: dict[str, set[tuple[BucketId, ObjKey]]] = {}
        self._terminating_crds: set[BucketId] = set()
        self._crd_specs: dict[BucketId, JsonObj] = {}  # the spec each resource is served by
        self._foreground_owners: dict[str, tuple[BucketId, ObjKey]] = {}
        store.listeners.append(self.on_event)

    # -- event intake (synchronous, on every store write) --------------------------------------
    def on_event(self, bucket_id: BucketId, event: StoredEvent) -> None:
        meta = event.obj.get("metadata", {})
        key: ObjKey = (meta.get("namespace", ""), meta.get("name", ""))
        if bucket_id == CRD_BUCKET:
            if event.type == "DELETED":
                self._queue.put_nowait(("crd-gone", event.obj))
            else:
                self._queue.put_nowait(("crd", meta.get("name", "")))
        elif bucket_id in self._terminating_crds and event.type == "DELETED":
            crd_name = f"{bucket_id[1]}.{bucket_id[0]}"
            self._queue.put_nowait(("crd", crd_name))
        if (
            bucket_id == NAMESPACE_BUCKET
            and event.type != "DELETED"
            and meta.get("deletionTimestamp")
        ):
            self._queue.put_nowait(("namespace", meta.get("name", "")))
        elif event.type == "DELETED" and key[0]:
            ns = self.store.get(NAMESPACE_BUCKET, ("", key[0]))
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self._queue.put_nowait(("namespace", key[0]))
        defaults_of = namespace_to_sync(bucket_id, event)
        if defaults_of:
            self._queue.put_nowait(("namespace-defaults", defaults_of))
        if self.garbage_collection:
            self._index(bucket_id, key, event)

    def _index(self, bucket_id: BucketId, key: ObjKey, event: StoredEvent) -> None:
        before = _owner_uids(event.prev)
        after = set() if event.type == "DELETED" else _owner_uids(event.obj)
        for uid in before - after:
            deps = self._dependents.get(uid)
            if deps is not None:
                deps.discard((bucket_id, key))
                if not deps:
                    del self._dependents[uid]
        for uid in after - before:
            self._dependents.setdefault(uid, set()).add((bucket_id, key))
        if event.type == "DELETED":
            for uid in _owner_uids(event.obj):
                deps = self._dependents.get(uid)
                if deps is not None:
                    deps.discard((bucket_id, key))
                    if not deps:
                        del self._dependents[uid]
                self._queue.put_nowait(("owner-check", uid))
            uid = event.obj.get("metadata", {}).get("uid", "")
            self._foreground_owners.pop(uid, None)
            if uid in self._dependents:
                self._queue.put_nowait(("owner-gone", uid))
            return
        if after and after != before:
            self._queue.put_nowait(("dependent", (bucket_id, key)))
        meta = event.obj.get("metadata", {})
        finalizers = meta.get("finalizers") or []
        uid = meta.get("uid", "")
        if meta.get("deletionTimestamp") and "foregroundDeletion" in finalizers:
            self._foreground_owners[uid] = (bucket_id, key)
        else:
            self._foreground_owners.pop(uid, None)
        if meta.get("deletionTimestamp") and (
            "orphan" in finalizers or "foregroundDeletion" in finalizers
        ):
            self._queue.put_nowait(("owner-deleting", (bucket_id, key)))

    # -- the loop ------------------------------------------------------------------------------
    async def run(self) -> None:
        while True:
            kind, arg = await self._queue.get()
            try:
                self._handle(kind, arg)
            except Exception:
                log.exception("embedded apiserver controller failed on %s", kind)
            finally:
                self._queue.task_done()
            await asyncio.sleep(0)

    async def settled(self, bound: float) -> None:
        """Return once every queued item is handled, or after ``bound`` seconds of loop time."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout=bound)

    def _handle(self, kind: str, arg: Any) -> None:
        if kind == "crd":
            self._sync_crd(arg)
        elif kind == "crd-gone":
            self._forget_crd(arg)
        elif kind == "namespace":
            self._sync_namespace(arg)
        elif kind == "namespace-defaults":
            sync_namespace_defaults(self.rest, self.registry, arg, self.root_ca_pem)
        elif kind == "dependent":
            self._attempt_to_delete(*arg)
        elif kind == "owner-gone":
            for bucket_id, key in sorted(self._dependents.get(arg, set())):
                self._attempt_to_delete(bucket_id, key)
        elif kind == "owner-deleting":
            self._process_deleting_owner(*arg)
        elif kind == "owner-check":
            self._recheck_owner(arg)

    def _type_for_bucket(self, bucket_id: BucketId) -> ResourceType | None:
        for rt in self.registry.types():
            if (
                rt.bucket == bucket_id
                and self.registry.storage_api_version(bucket_id) == rt.api_version
            ):
                return rt
        for rt in self.registry.types():
            if rt.bucket == bucket_id:
                return rt
        return None

    # -- CRDs ----------------------------------------------------------------------------------
    def crd_terminating(self, group: str, plural: str) -> bool:
        return (group, plural) in self._terminating_crds

    def _sync_crd(self, name: str) -> None:
        crd = self.store.get(CRD_BUCKET, ("", name))
        if crd is None:
            return
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        bucket: BucketId = (spec.get("group", ""), names.get("plural", ""))
        if crd["metadata"].get("deletionTimestamp"):
            self._terminating_crds.add(bucket)
            self._clean_up_crd(crd, bucket)
            return
        served_by = self._crd_specs.get(bucket)
        self._crd_specs[bucket] = copy.deepcopy(spec)
        if served_by is not None and served_by != spec:
            self._restart_storage(bucket)
        self.registry.remove_resource(*bucket)
        for rt in served_types(crd):
            self.registry.add(rt)
        version = storage_version(crd)
        if version:
            self.registry.set_storage_version(bucket, f"{bucket[0]}/{version}")
        self.store.bucket(bucket)
        accepted = {k: v for k, v in names.items() if v not in (None, "", [])}
        status = dict(crd.get("status") or {})
        conditions = list(status.get("conditions") or [])
        now = self.rest.now()
        conditions = set_condition(
            conditions,
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            now,
        )
        established = next((c for c in conditions if c.get("type") == "Established"), None)
        if established is None or established.get("status") != "True":
            conditions = set_condition(
                conditions,
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
                now,
            )
        status["acceptedNames"] = accepted
        status["conditions"] = conditions
        if status != crd.get("status"):
            self.store.put(CRD_BUCKET, ("", name), {**crd, "status": status})
            self.rest.notify_rv()

    def _restart_storage(self, bucket_id: BucketId) -> None:
        """What kube-apiserver does when a CRD's spec changes: it serves the resource from new
        storage, whose watch cache starts at the current version. Open watches end (without an
        error); a watch from an earlier version is answered 410 (v1.20.2, checked by
        tests/conformance/test_watch.py)."""
        bucket = self.store.bucket(bucket_id)
        bucket.history.clear()
        bucket.floor_rv = self.store.rv
        for watcher in list(bucket.watchers):
            watcher.close()

    def _clean_up_crd(self, crd: JsonObj, bucket: BucketId) -> None:
        name = crd["metadata"]["name"]
        if CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            return
        rt = self._type_for_bucket(bucket)
        remaining = self.store.sorted_items(bucket)
        status = dict(crd.get("status") or {})
        if remaining and rt is not None:
            status["conditions"] = set_condition(
                list(status.get("conditions") or []),
                {
                    "type": "Terminating",
                    "status": "True",
                    "reason": "InstanceDeletionInProgress",
                    "message": "CustomResource deletion is in progress",
                },
                self.rest.now(),
            )
            if status != crd.get("status"):
                self.store.put(CRD_BUCKET, ("", name), {**crd, "status": status})
                self.rest.notify_rv()
            for key, obj in remaining:
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    self.rest.delete(rt, key[0], key[1], DeleteOptions())
                except ApiError as exc:
                    if exc.code != 404:
                        raise
            if self.store.sorted_items(bucket):
                return
        crd = self.store.get(CRD_BUCKET, ("", name)) or crd
        finalizers = [f for f in crd["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
        crd_rt = self.registry.lookup(CRD_GROUP, "v1", "customresourcedefinitions")
        if crd_rt is None:
            return
        self.rest.patch(
            crd_rt,
            "",
            name,
            MERGE_PATCH,
            {"metadata": {"finalizers": finalizers or None}},
        )

    def _forget_crd(self, crd: JsonObj) -> None:
        spec = crd.get("spec") or {}
        bucket: BucketId = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        self.registry.remove_resource(*bucket)
        self.store.drop_bucket(bucket)
        self._terminating_crds.discard(bucket)
        self._crd_specs.pop(bucket, None)

    # -- namespaces ----------------------------------------------------------------------------
    def _sync_namespace(self, name: str) -> None:
        ns = self.store.get(NAMESPACE_BUCKET, ("", name))
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        ns_rt = self.registry.lookup("", "v1", "namespaces")
        if ns_rt is None:
            return
        spec_finalizers = (ns.get("spec") or {}).get("finalizers") or []
        if "kubernetes" in spec_finalizers:
            for bucket_id, rt in self.registry.namespaced_buckets().items():
                for obj in list(self.store.iter_namespace(bucket_id, name)):
                    if obj["metadata"].get("deletionTimestamp"):
                        continue
                    try:
                        self.rest.delete(rt, name, obj["metadata"]["name"], DeleteOptions())
                    except ApiError as exc:
                        if exc.code != 404:
                            raise
            if any(
                True
                for bucket_id in self.registry.namespaced_buckets()
                for _ in self.store.iter_namespace(bucket_id, name)
            ):
                return
            self.rest.finalize_namespace(
                ns_rt,
                name,
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name},
                    "spec": {"finalizers": [f for f in spec_finalizers if f != "kubernetes"]},
                },
            )
            ns = self.store.get(NAMESPACE_BUCKET, ("", name))
            if ns is None:
                return
        if not (ns.get("spec") or {}).get("finalizers") and not ns["metadata"].get("finalizers"):
            try:
                self.rest.delete(ns_rt, "", name, DeleteOptions())
            except ApiError as exc:
                if exc.code != 404:
                    raise

    # -- garbage collection --------------------------------------------------------------------
    def _owner_state(self, ref: JsonObj, namespace: str) -> str:
        """absent, present, waiting (deleting with foregroundDeletion) or unknown."""
        rt = self.registry.by_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        if rt is None:
            return "unknown"
        key = (namespace if rt.namespaced else "", str(ref.get("name", "")))
        owner = self.store.get(rt.bucket, key)
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return "absent"
        meta = owner["metadata"]
        if meta.get("deletionTimestamp") and "foregroundDeletion" in (meta.get("finalizers") or []):
            return "waiting"
        return "present"

    def _attempt_to_delete(self, bucket_id: BucketId, key: ObjKey) -> None:
        obj = self.store.get(bucket_id, key)
        rt = self._type_for_bucket(bucket_id)
        if obj is None or rt is None:
            return
        meta = obj["metadata"]
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp") and "foregroundDeletion" not in finalizers:
            return
        refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
        if not refs:
            return
        states = [(ref, self._owner_state(ref, key[0])) for ref in refs]
        solid = [r for r, s in states if s in ("present", "unknown")]
        gone = [r for r, s in states if s in ("absent", "waiting")]
        if solid:
            if gone:
                self._set_owner_refs(rt, key, solid)
            return
        if meta.get("deletionTimestamp"):
            return
        waiting = any(s == "waiting" for _, s in states)
        if waiting:
            policy = "Foreground"
        elif "orphan" in finalizers:
            policy = "Orphan"
        elif "foregroundDeletion" in finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        try:
            self.rest.delete(
                rt,
                key[0],
                key[1],
                DeleteOptions(propagation=policy, precondition_uid=meta.get("uid")),
            )
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _set_owner_refs(self, rt: ResourceType, key: ObjKey, refs: list[JsonObj]) -> None:
        try:
            self.rest.patch(
                rt,
                key[0],
                key[1],
                MERGE_PATCH,
                {"metadata": {"ownerReferences": refs or None}},
                manager=CONTROLLER_MANAGER,
            )
        except ApiError as exc:
            if exc.code != 404:
                raise

    def _process_deleting_owner(self, bucket_id: BucketId, key: ObjKey) -> None:
        owner = self.store.get(bucket_id, key)
        rt = self._type_for_bucket(bucket_id)
        if owner is None or rt is None:
            return
        meta = owner["metadata"]
        uid = meta.get("uid", "")
        finalizers = list(meta.get("finalizers") or [])
        dependents = sorted(self._dependents.get(uid, set()))
        if "orphan" in finalizers:
            for dep_bucket, dep_key in dependents:
                dep = self.store.get(dep_bucket, dep_key)
                dep_rt = self._type_for_bucket(dep_bucket)
                if dep is None or dep_rt is None:
                    continue
                refs = [
                    r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid
                ]
                self._set_owner_refs(dep_rt, dep_key, refs)
            self._remove_finalizer(rt, key, "orphan")
            return
        if "foregroundDeletion" in finalizers:
            blocking = []
            for dep_bucket, dep_key in dependents:
                dep = self.store.get(dep_bucket, dep_key)
                if dep is None:
                    continue
                ref: JsonObj = next(
                    (
                        r
                        for r in dep["metadata"].get("ownerReferences") or []
                        if r.get("uid") == uid
                    ),
                    {},
                )
                if ref.get("blockOwnerDeletion"):
                    blocking.append((dep_bucket, dep_key))
                self._attempt_to_delete(dep_bucket, dep_key)
            still = [b for b in blocking if self.store.get(*b) is not None]
            if not still:
                self._remove_finalizer(rt, key, "foregroundDeletion")

    def _recheck_owner(self, uid: str) -> None:
        """A dependent went away: a foreground-deleting owner may now be free to go."""
        owner = self._foreground_owners.get(uid)
        if owner is not None:
            self._process_deleting_owner(*owner)

    def _remove_finalizer(self, rt: ResourceType, key: ObjKey, finalizer: str) -> None:
        obj = self.store.get(rt.bucket, key)
        if obj is None:
            return
        finalizers = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        try:
            self.rest.patch(
                rt,
                key[0],
                key[1],
                MERGE_PATCH,
                {
                    "metadata": {
                        "finalizers": finalizers or None,
                        "resourceVersion": obj["metadata"]["resourceVersion"],
                    }
                },
                manager=CONTROLLER_MANAGER,
            )
        except ApiError as exc:
            if exc.code == 409:
                self._queue.put_nowait(("owner-deleting", (rt.bucket, key)))
            elif exc.code != 404:
                raise
