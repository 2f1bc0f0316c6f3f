"""Objects as they come from the API server: raw JSON plus typed access to the metadata we key on.

``KubeObject`` wraps one object's JSON (``raw``) with its ``Kind``; the metadata accessors
(name, uid, resourceVersion, labels, owners, deletion state) are typed so the runtime and the
controllers never dig through dicts for them. ``raw`` is shared (the informer cache hands the same
object to every reader): never mutate it — build a patch instead. Controllers parse ``raw`` into
their pydantic models (``scaleset.api``) where they need the spec or status.

Projections keep cached records slim: ``metadata.managedFields`` is always dropped (it is often
half of an object's size and nothing here reads it), pods keep only what a controller decides on
(metadata, the status fields read, and a few spec fields — see ``slim_pod``), and
EphemeralRunners of one set share one copy of their identical ``spec`` (see ``share_subtrees``;
bench/kube_informer.py measures each). Both share one copy of their repeated metadata (labels,
annotations; a runner's finalizers and owner references too), and their strings are interned,
as most values repeat from object to object (``intern_strings``). A shared subtree is one object
held by many records: never change one in place (the test suite's ``shared_subtree_guard``
checks that none is). A one-off list that needs less keeps less: ``identity`` and ``pod_phase``
(a list is decoded a page at a time, so with these only one page is ever held whole).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import msgspec

from scaleset.kube.resources import Kind

JsonObject = dict[str, Any]
"""One decoded JSON object (the JSON boundary: ``Any`` stops here)."""

Projection = Callable[[JsonObject], JsonObject]
"""Turns a freshly decoded object into the record we keep (may modify its argument)."""

_EMPTY: Mapping[str, Any] = {}


class ObjectKey(NamedTuple):
    """Namespace and name of an object (namespace ``""`` for cluster-scoped kinds)."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class OwnerRef(NamedTuple):
    """One ``metadata.ownerReferences`` entry."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True)
class KubeObject:
    """One API object: its kind and its (possibly projected) JSON, never mutated."""

    kind: Kind
    raw: JsonObject

    @property
    def metadata(self) -> Mapping[str, Any]:
        meta = self.raw.get("metadata")
        return meta if isinstance(meta, dict) else _EMPTY

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", "") or "")

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def resource_version(self) -> str:
        return str(self.metadata.get("resourceVersion", ""))

    @property
    def generation(self) -> int:
        value = self.metadata.get("generation", 0)
        return value if isinstance(value, int) else 0

    @property
    def labels(self) -> Mapping[str, str]:
        labels = self.metadata.get("labels")
        return labels if isinstance(labels, dict) else _EMPTY

    @property
    def annotations(self) -> Mapping[str, str]:
        annotations = self.metadata.get("annotations")
        return annotations if isinstance(annotations, dict) else _EMPTY

    @property
    def finalizers(self) -> Sequence[str]:
        finalizers = self.metadata.get("finalizers")
        return finalizers if isinstance(finalizers, list) else ()

    @property
    def deletion_timestamp(self) -> str | None:
        value = self.metadata.get("deletionTimestamp")
        return value if isinstance(value, str) else None

    @property
    def is_deleting(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def owner_references(self) -> tuple[OwnerRef, ...]:
        refs = self.metadata.get("ownerReferences")
        if not isinstance(refs, list):
            return ()
        return tuple(
            OwnerRef(
                str(ref.get("apiVersion", "")),
                str(ref.get("kind", "")),
                str(ref.get("name", "")),
                str(ref.get("uid", "")),
                bool(ref.get("controller", False)),
            )
            for ref in refs
            if isinstance(ref, dict)
        )

    @property
    def controller_owner(self) -> OwnerRef | None:
        """The owner reference marked ``controller: true``, if any."""
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None

    @property
    def spec(self) -> Mapping[str, Any]:
        spec = self.raw.get("spec")
        return spec if isinstance(spec, dict) else _EMPTY

    @property
    def status(self) -> Mapping[str, Any]:
        status = self.raw.get("status")
        return status if isinstance(status, dict) else _EMPTY

    def __repr__(self) -> str:
        # Never the raw body: a Secret's data must not reach a log line through a repr.
        return f"KubeObject({self.kind.kind} {self.key} rv={self.resource_version})"


def drop_managed_fields(raw: JsonObject) -> JsonObject:
    """The default projection: everything but ``metadata.managedFields``."""
    meta = raw.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return raw


_IDENTITY_KEPT = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")


def identity(raw: JsonObject) -> JsonObject:
    """Who an object is and who owns it: ``apiVersion``, ``kind`` and from ``metadata`` only its
    name, namespace, uid, resourceVersion, deletionTimestamp and ownerReferences."""
    meta = raw.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kept: JsonObject = {key: meta[key] for key in _IDENTITY_KEPT if key in meta}
    if "ownerReferences" in meta:
        kept["ownerReferences"] = meta["ownerReferences"]
    slim: JsonObject = {key: raw[key] for key in ("apiVersion", "kind") if key in raw}
    slim["metadata"] = kept
    return slim


def pod_phase(raw: JsonObject) -> JsonObject:
    """``identity`` plus ``status.phase``: enough to tell which pods are running."""
    slim = identity(raw)
    status = raw.get("status")
    if isinstance(status, dict) and "phase" in status:
        slim["status"] = {"phase": status["phase"]}
    return slim


_POD_SPEC_KEPT = ("nodeName", "restartPolicy", "serviceAccountName")


def intern_strings(tree: Any) -> None:
    """Replace each string value in ``tree`` (nested dicts and lists, in place) by its interned
    copy (``sys.intern``).

    Thousands of cached pods and runners carry the same label values, images, owner kinds,
    phases and condition types, and a decoder makes a new string for each occurrence: interned,
    they share one. The interpreter drops an interned string when nothing else refers to it, so
    unique values (names, uids) cost nothing once their object is gone.
    """
    items: Any
    if isinstance(tree, dict):
        items = tree.items()
    elif isinstance(tree, list):
        items = enumerate(tree)
    else:
        return
    for key, value in items:
        if type(value) is str:
            tree[key] = sys.intern(value)
        elif isinstance(value, dict | list):
            intern_strings(value)


_POD_STATUS_KEPT = ("phase", "reason", "message")
_POD_CONDITION_KEPT = ("type", "status", "reason", "message")
_CONTAINER_STATUS_KEPT = ("name", "state", "lastState", "ready", "restartCount", "started")
_CONTAINER_STATUS_LISTS = ("containerStatuses", "initContainerStatuses")


def slim_pod(raw: JsonObject) -> JsonObject:
    """Pods as controllers decide on them: metadata, the status fields read, a few spec fields.

    Kept from ``spec``: ``nodeName``, ``restartPolicy``, ``serviceAccountName``, and for each
    container and init container its ``name`` (plus ``restartPolicy`` for init containers, which
    marks a native sidecar). Kept from ``status``: ``phase``, ``reason``, ``message``, each
    condition's ``type``, ``status``, ``reason`` and ``message``, and each container's and init
    container's ``name``, ``state``, ``lastState``, ``ready``, ``restartCount`` and ``started``.
    Volumes, env, probes, IPs, image ids, transition times and the rest stay on the server: read
    the pod with a GET if a decision ever needs them. The kubectl last-applied annotation is
    dropped; labels and annotations are shared with the pods that carry the same ones.
    """
    drop_managed_fields(raw)
    meta = raw.get("metadata")
    if isinstance(meta, dict):
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    spec = raw.get("spec")
    if isinstance(spec, dict):
        slim: JsonObject = {k: spec[k] for k in _POD_SPEC_KEPT if k in spec}
        slim["containers"] = _container_names(spec.get("containers"), keep_restart=False)
        if "initContainers" in spec:
            slim["initContainers"] = _container_names(spec["initContainers"], keep_restart=True)
        raw["spec"] = slim
    status = raw.get("status")
    if isinstance(status, dict):
        raw["status"] = _slim_pod_status(status)
    intern_strings(raw)
    if isinstance(meta, dict):
        _share_metadata(meta, ("labels", "annotations"))
    return raw


def _slim_pod_status(status: JsonObject) -> JsonObject:
    slim: JsonObject = {k: status[k] for k in _POD_STATUS_KEPT if k in status}
    if "conditions" in status:
        slim["conditions"] = _kept_of_each(status["conditions"], _POD_CONDITION_KEPT)
    for field in _CONTAINER_STATUS_LISTS:
        if field in status:
            slim[field] = _kept_of_each(status[field], _CONTAINER_STATUS_KEPT)
    return slim


def _kept_of_each(entries: Any, kept: Sequence[str]) -> Any:
    """Of each object in the list ``entries``, only the ``kept`` keys (anything else as it is)."""
    if not isinstance(entries, list):
        return entries
    return [
        {k: entry[k] for k in kept if k in entry} if isinstance(entry, dict) else entry
        for entry in entries
    ]


def _container_names(containers: Any, *, keep_restart: bool) -> list[JsonObject]:
    if not isinstance(containers, list):
        return []
    slim: list[JsonObject] = []
    for container in containers:
        if not isinstance(container, dict):
            continue
        entry: JsonObject = {"name": container.get("name", "")}
        if keep_restart and "restartPolicy" in container:
            entry["restartPolicy"] = container["restartPolicy"]
        slim.append(entry)
    return slim


class SubtreeCache:
    """Keeps one copy of identical JSON subtrees (compared by their encoding).

    Cached objects are never mutated, so objects whose subtree is equal can share it: the
    EphemeralRunners of one scale set carry the same pod template, which is most of their size,
    and the same labels. Holds at most ``capacity`` distinct subtrees (least recently seen
    evicted; an evicted subtree stays alive as long as objects use it).

    ``check_unchanged`` (off in production; the test suite turns it on): each time a kept
    subtree is handed out again, its encoding is compared with the one it was kept under, and a
    difference — somebody changed a shared subtree in place — is recorded in ``changed``.
    """

    check_unchanged: ClassVar[bool] = False
    changed: ClassVar[list[str]] = []
    """What ``check_unchanged`` found: each changed subtree's encoding when it was kept."""

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[bytes, Any] = OrderedDict()

    def share(self, value: Any) -> Any:
        key = msgspec.json.encode(value)
        existing = self._entries.get(key)
        if existing is not None:
            self._entries.move_to_end(key)
            if SubtreeCache.check_unchanged and msgspec.json.encode(existing) != key:
                SubtreeCache.changed.append(key.decode(errors="replace"))
            return existing
        self._entries[key] = value
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)


_SPECS = SubtreeCache()
_METADATA = SubtreeCache()
"""Labels, annotations, finalizers and owner references: apart from ``_SPECS``, so the many
distinct annotation sets (each patch id is one) never evict a pod template."""

_RUNNER_METADATA_SHARED = ("labels", "annotations", "finalizers", "ownerReferences")


def _share_metadata(meta: JsonObject, fields: Sequence[str]) -> None:
    for field in fields:
        value = meta.get(field)
        if isinstance(value, dict | list) and value:
            meta[field] = _METADATA.share(value)


def share_subtrees(raw: JsonObject) -> JsonObject:
    """The default projection plus one shared copy of each distinct ``spec`` and of each
    distinct set of labels, annotations, finalizers and owner references (the runners of one
    set carry the same ones); the strings of the rest interned (``intern_strings``)."""
    drop_managed_fields(raw)
    spec = raw.get("spec")
    if isinstance(spec, dict):
        raw["spec"] = _SPECS.share(spec)
    for key, value in raw.items():
        if key != "spec":
            intern_strings(value)
    meta = raw.get("metadata")
    if isinstance(meta, dict):
        _share_metadata(meta, _RUNNER_METADATA_SHARED)
    return raw
