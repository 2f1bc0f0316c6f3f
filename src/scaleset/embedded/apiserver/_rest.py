"""The REST semantics of kube-apiserver's generic registry, without HTTP.

create / get / list / update / patch / delete / deletecollection on any registered resource,
with the bookkeeping the real store does: uid, creationTimestamp, generation, one global
resourceVersion, generateName, optimistic concurrency (409 on a stale resourceVersion), status
subresource isolation, no-op writes that change nothing, finalizers and deletionTimestamp,
graceful pod deletion, orphan/foreground finalizers from the propagation policy, namespace
lifecycle admission. The HTTP layer (``_http``) parses requests and calls these methods.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from scaleset.clock import Clock
from scaleset.embedded.apiserver import _errors, _managed, _meta
from scaleset.embedded.apiserver._admission import admit_pod_create
from scaleset.embedded.apiserver._crds import CLEANUP_FINALIZER, CRD_GROUP
from scaleset.embedded.apiserver._errors import ApiError, FieldError, bad_request, invalid_value
from scaleset.embedded.apiserver._kinds import ResourceType
from scaleset.embedded.apiserver._patch import json_patch, merge_patch, strategic_merge_patch
from scaleset.embedded.apiserver._registry import Registry
from scaleset.embedded.apiserver._selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from scaleset.embedded.apiserver._store import BucketId, ObjKey, Store, Watcher
from scaleset.embedded.apiserver._timestamps import rfc3339
from scaleset.embedded.apiserver._typed_decode import DecodeError

JsonObj = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_PROPAGATION = ["Foreground", "Background", "Orphan"]
_RV_WAIT_SECONDS = 3.0
SERVER_MANAGER = "kube-apiserver"
CONTROLLER_MANAGER = "kube-controller-manager"
PODS: BucketId = ("", "pods")
SERVICE_ACCOUNTS: BucketId = ("", "serviceaccounts")


def clone(value: Any) -> Any:
    """Deep copy of a JSON value (faster than copy.deepcopy for plain data)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


@dataclass(frozen=True)
class DeleteOptions:
    grace_period: int | None = None
    propagation: str | None = None
    orphan_dependents: bool | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False

    @classmethod
    def parse(cls, body: object, query: dict[str, str]) -> DeleteOptions:
        opts: JsonObj = body if isinstance(body, dict) else {}
        if body is not None and not isinstance(body, dict):
            raise bad_request("DeleteOptions must be a JSON object")
        grace = opts.get("gracePeriodSeconds")
        if grace is None and "gracePeriodSeconds" in query:
            try:
                grace = int(query["gracePeriodSeconds"])
            except ValueError:
                raise bad_request(
                    f'strconv.ParseInt: parsing "{query["gracePeriodSeconds"]}": invalid syntax'
                ) from None
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise bad_request("gracePeriodSeconds must be an integer")
        propagation = opts.get("propagationPolicy") or query.get("propagationPolicy") or None
        orphan = opts.get("orphanDependents")
        if orphan is None and "orphanDependents" in query:
            orphan = query["orphanDependents"].lower() == "true"
        errs: list[FieldError] = []
        if propagation is not None and propagation not in _PROPAGATION:
            errs.append(
                _errors.not_supported("propagationPolicy", propagation, [*_PROPAGATION, "nil"])
            )
        if propagation is not None and orphan is not None:
            errs.append(
                invalid_value(
                    "propagationPolicy",
                    propagation,
                    "orphanDependents and deletionPropagation cannot be both set",
                )
            )
        if errs:
            raise _errors.invalid("meta.k8s.io", "DeleteOptions", "", errs)
        pre = opts.get("preconditions") or {}
        dry = opts.get("dryRun") or ([query["dryRun"]] if "dryRun" in query else [])
        return cls(
            grace_period=grace,
            propagation=propagation,
            orphan_dependents=orphan,
            precondition_uid=pre.get("uid") if isinstance(pre, dict) else None,
            precondition_rv=pre.get("resourceVersion") if isinstance(pre, dict) else None,
            dry_run="All" in dry,
        )


@dataclass(frozen=True)
class ListQuery:
    labels: LabelSelector
    fields: FieldSelector
    limit: int
    continue_token: str
    resource_version: str
    resource_version_match: str


def encode_continue(rv: int, key: ObjKey) -> str:
    start = f"{key[0]}/{key[1]}\x00" if key[0] else f"{key[1]}\x00"
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, ObjKey]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        rv = int(data["rv"])
        start = str(data["start"]).rstrip("\x00")
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("unsupported version")
    except (ValueError, KeyError, TypeError, binascii.Error, json.JSONDecodeError):
        raise bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)"
        ) from None
    if rv <= 0:
        raise bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)"
        )
    namespace, _, name = start.rpartition("/")
    return rv, (namespace, name)


def _parse_rv(value: str) -> int:
    """A resourceVersion parameter; garbage is a 500 without a reason, as in the real server."""
    if not value.isdigit():
        raise _errors.internal_plain(
            f'resourceVersion: Invalid value: "{value}": strconv.ParseUint: parsing '
            f'"{value}": invalid syntax'
        )
    return int(value)


class Rest:
    """Registry semantics over the store. All methods run on the server's event loop."""

    def __init__(self, store: Store, registry: Registry, clock: Clock) -> None:
        self.store = store
        self.registry = registry
        self.clock = clock
        self._rv_changed = asyncio.Event()

    # -- helpers -------------------------------------------------------------------------------
    def key(self, rt: ResourceType, namespace: str, name: str) -> ObjKey:
        return (namespace if rt.namespaced else "", name)

    def now(self) -> str:
        return rfc3339(self.clock.now())

    def _invalid(
        self, rt: ResourceType, name: str, errs: list[FieldError], obj: JsonObj | None = None
    ) -> ApiError:
        group = rt.strategy.error_group
        kind = str((obj or {}).get("kind") or rt.kind)
        return _errors.invalid(rt.group if group is None else group, kind, name, errs)

    def _meta_errors(self, rt: ResourceType, meta: JsonObj) -> list[FieldError]:
        if rt.strategy.validate_object_meta:
            return _meta.validate(
                meta,
                namespaced=rt.namespaced,
                name_rule=rt.strategy.name_rule,
                strict_finalizers=rt.strategy.strict_finalizers,
            )
        if not meta.get("name"):
            return [_errors.required("metadata.name", "name or generateName is required")]
        return []

    def _not_found(self, rt: ResourceType, name: str) -> ApiError:
        return _errors.not_found(rt.group, rt.plural, name)

    def _decode(
        self, rt: ResourceType, body: object, namespace: str, url_name: str | None
    ) -> JsonObj:
        """A request body as the registry sees it: typed shape, storage form, owned copy."""
        if not isinstance(body, dict):
            raise bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind}): body is not a "
                "JSON object"
            )
        obj: JsonObj = body
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        is_custom = rt.strategy.patch_meta is None
        if api_version not in (None, "") and api_version != rt.api_version:
            if is_custom:
                raise bad_request(
                    f"the API version in the data ({api_version}) does not match the expected "
                    f"API version ({rt.api_version})"
                )
            raise bad_request(
                f'{kind or rt.kind} in version "{str(api_version).rpartition("/")[2]}" cannot be '
                f'handled as a {rt.kind}: no kind "{kind or rt.kind}" is registered for version '
                f'"{api_version}" in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"'
            )
        if is_custom:
            if not api_version:
                raise bad_request("Object 'apiVersion' is missing in the request body")
        elif kind not in (None, "") and kind != rt.kind:
            raise bad_request(
                f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: converting '
                f"({rt.version}.{kind}) to (core.{rt.kind}): unknown conversion"
            )
        obj["apiVersion"] = rt.api_version
        if not is_custom:
            obj["kind"] = rt.kind
        meta = _meta.normalize(obj.get("metadata"), rt.kind)
        obj["metadata"] = meta
        if rt.namespaced:
            body_ns = meta.get("namespace", "")
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if url_name is not None and not meta.get("name"):
            raise bad_request(
                f"the name of the object ({url_name} based on URL) was undeterminable: name must "
                "be provided"
            )
        if url_name is not None and meta.get("name", "") != url_name:
            raise bad_request(
                f"the name of the object ({meta.get('name', '')}) does not match the name on the "
                f"URL ({url_name})"
            )
        obj = rt.strategy.shape(obj)
        return rt.store_form(obj, self.registry.storage_api_version(rt.bucket))

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str, creating: bool) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(("", "namespaces"), ("", namespace))
        if ns is None:
            raise _errors.not_found("", "namespaces", namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            raise _errors.forbidden_error(
                rt.group,
                rt.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                },
            )

    def _service_account(self, namespace: str, name: str) -> JsonObj | None:
        return self.store.get(SERVICE_ACCOUNTS, (namespace, name))

    def _list_item(self, rt: ResourceType, stored: JsonObj) -> JsonObj:
        shown = rt.present(stored)
        if rt.list_items_have_kind:
            return shown
        return {k: v for k, v in shown.items() if k not in ("kind", "apiVersion")}

    async def wait_for_rv(self, rv: int) -> None:
        """A read at a resourceVersion not yet reached waits a little, then 504s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _RV_WAIT_SECONDS
        while self.store.rv < rv:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise _errors.too_large_resource_version(rv, self.store.rv)
            self._rv_changed.clear()
            try:
                await asyncio.wait_for(self._rv_changed.wait(), timeout=remaining)
            except TimeoutError:
                continue

    def notify_rv(self) -> None:
        self._rv_changed.set()

    # -- create --------------------------------------------------------------------------------
    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: object,
        *,
        dry_run: bool = False,
        manager: str = SERVER_MANAGER,
    ) -> JsonObj:
        obj = self._decode(rt, body, namespace, None)
        meta = obj["metadata"]
        self._check_namespace(rt, namespace, meta.get("name") or meta.get("generateName", ""), True)
        if meta.get("resourceVersion"):
            raise _errors.internal_plain(
                "resourceVersion should not be set on objects to be created"
            )
        return self._insert(rt, obj, dry_run=dry_run, manager=manager)

    def _insert(
        self, rt: ResourceType, obj: JsonObj, *, dry_run: bool, manager: str = SERVER_MANAGER
    ) -> JsonObj:
        meta = obj["metadata"]
        strategy = rt.strategy
        requested_name = str(meta.get("name") or meta.get("generateName") or "")
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if generated:
            meta["name"] = _meta.generate_name(meta["generateName"])
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.now()
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "clusterName"):
            meta.pop(field, None)
        meta.pop("resourceVersion", None)
        if strategy.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        strategy.default(obj)
        managed = _managed.update(
            None,
            obj,
            manager=manager,
            api_version=rt.api_version,
            now=meta["creationTimestamp"],
            all_maps=rt.list_items_have_kind,
        )
        if rt.bucket == PODS:
            # admission runs after field ownership is taken and before validation
            admit_pod_create(obj, requested_name, self._service_account)
        strategy.prepare_create(obj)
        errs = self._meta_errors(rt, meta)
        errs.extend(strategy.validate(obj))
        name = meta.get("name", "")
        if errs:
            raise self._invalid(rt, name, errs, obj)
        key = self.key(rt, meta.get("namespace", ""), name)
        existing = self.store.get(rt.bucket, key)
        if existing is not None and generated:
            for _ in range(8):
                meta["name"] = _meta.generate_name(meta["generateName"])
                key = self.key(rt, meta.get("namespace", ""), meta["name"])
                existing = self.store.get(rt.bucket, key)
                if existing is None:
                    break
        if existing is not None:
            raise _errors.already_exists(
                rt.group,
                rt.plural,
                name,
                being_deleted=bool(existing["metadata"].get("deletionTimestamp")),
            )
        if managed:
            meta["managedFields"] = managed
        if dry_run:
            meta["resourceVersion"] = ""
            return rt.present(obj)
        stored = self.store.put(rt.bucket, key, obj)
        self.notify_rv()
        return rt.present(stored)

    # -- get / list ----------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str, name: str) -> JsonObj:
        stored = self.store.get(rt.bucket, self.key(rt, namespace, name))
        if stored is None:
            raise self._not_found(rt, name)
        return rt.present(stored)

    def parse_list_query(
        self, rt: ResourceType, query: dict[str, str], *, watch: bool = False
    ) -> ListQuery:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(
            query.get("fieldSelector"), rt.field_label, rt.strategy.field_selector_error
        )
        limit_text = query.get("limit", "")
        limit = 0
        if limit_text:
            try:
                limit = max(int(limit_text), 0)
            except ValueError:
                raise bad_request(
                    f'strconv.ParseInt: parsing "{limit_text}": invalid syntax'
                ) from None
        match = query.get("resourceVersionMatch", "")
        if match:
            problem: FieldError | None = None
            if watch:
                problem = _errors.forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden for watch"
                )
            elif not query.get("resourceVersion"):
                problem = _errors.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            elif match not in ("Exact", "NotOlderThan"):
                problem = _errors.not_supported(
                    "resourceVersionMatch", match, ["Exact", "NotOlderThan"]
                )
            elif query.get("continue"):
                problem = _errors.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            elif match == "Exact" and query.get("resourceVersion") == "0":
                problem = _errors.forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            if problem is not None:
                raise _errors.invalid("meta.k8s.io", "ListOptions", "", [problem])
        return ListQuery(
            labels,
            fields,
            limit,
            query.get("continue", ""),
            query.get("resourceVersion", ""),
            query.get("resourceVersionMatch", ""),
        )

    def matcher(self, rt: ResourceType, namespace: str, q: ListQuery) -> Any:
        labels, fields = q.labels, q.fields

        def matches(obj: JsonObj) -> bool:
            meta = obj.get("metadata", {})
            if namespace and meta.get("namespace", "") != namespace:
                return False
            if not labels.empty and not labels.matches(meta.get("labels") or {}):
                return False
            return fields.empty or fields.matches(rt.field_values(obj))

        return matches

    async def list_objects(self, rt: ResourceType, namespace: str, q: ListQuery) -> JsonObj:
        matches = self.matcher(rt, namespace, q)
        start_after: ObjKey | None = None
        if q.continue_token:
            if q.resource_version not in ("", "0") and q.continue_token:
                raise bad_request("specifying resource version is not allowed when using continue")
            list_rv, start_after = decode_continue(q.continue_token)
            items = self.store.snapshot(rt.bucket, list_rv)
            if items is None:
                raise _errors.expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use the "
                    "continue token in this response to retrieve the remainder of the results. "
                    "Continuing with the provided token results in an inconsistent list - objects "
                    "that were created, modified, or deleted between the time the first chunk was "
                    "returned and now may show up in the list."
                )
        else:
            if q.resource_version not in ("", "0"):
                wanted = _parse_rv(q.resource_version)
                exact = q.resource_version_match == "Exact" or (
                    q.limit > 0 and q.resource_version_match != "NotOlderThan"
                )
                if wanted > self.store.rv:
                    await self.wait_for_rv(wanted)
                if exact and wanted != self.store.rv:
                    snap = self.store.snapshot(rt.bucket, wanted)
                    if snap is None:
                        oldest = self.store.oldest_rv(rt.bucket)
                        raise _errors.expired(f"too old resource version: {wanted} ({oldest})")
                    items, list_rv = snap, wanted
                else:
                    items, list_rv = self.store.sorted_items(rt.bucket), self.store.rv
            else:
                items, list_rv = self.store.sorted_items(rt.bucket), self.store.rv
        out: list[JsonObj] = []
        position = 0
        if start_after is not None:
            position = bisect.bisect_right([k for k, _ in items], start_after)
        elif namespace and rt.namespaced:
            position = bisect.bisect_left([k for k, _ in items], (namespace, ""))
        last_key: ObjKey | None = None
        more = False
        count_remaining = q.labels.empty and q.fields.empty
        remaining = 0
        for index in range(position, len(items)):
            key, obj = items[index]
            if namespace and rt.namespaced and key[0] != namespace:
                if key[0] > namespace:
                    break
                continue
            if not matches(obj):
                continue
            if q.limit and len(out) >= q.limit:
                more = True
                if not count_remaining:
                    break
                remaining += 1
                continue
            out.append(self._list_item(rt, obj))
            last_key = key
        metadata: JsonObj = {"resourceVersion": str(list_rv)}
        if rt.list_items_have_kind:
            metadata = {"continue": "", **metadata}  # unstructured lists always carry it
        if more and last_key is not None:
            metadata["continue"] = encode_continue(list_rv, last_key)
            if count_remaining:
                metadata["remainingItemCount"] = remaining
            self.store.remember_snapshot(rt.bucket, list_rv, items)
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": metadata,
            "items": out,
        }

    def open_watch(self, rt: ResourceType, namespace: str, q: ListQuery) -> Watcher:
        watcher = Watcher(self.matcher(rt, namespace, q))
        self.store.bucket(rt.bucket).watchers.add(watcher)
        return watcher

    def close_watch(self, rt: ResourceType, watcher: Watcher) -> None:
        bucket = self.store.buckets.get(rt.bucket)
        if bucket is not None:
            bucket.watchers.discard(watcher)

    # -- update / patch ------------------------------------------------------------------------
    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: object,
        *,
        subresource: str = "",
        dry_run: bool = False,
        manager: str = SERVER_MANAGER,
    ) -> tuple[JsonObj, int]:
        obj = self._decode(rt, body, namespace, name)
        key = self.key(rt, namespace, name)
        current = self.store.get(rt.bucket, key)
        self._check_uid_precondition(rt, namespace, name, obj, current)
        rv = obj["metadata"].get("resourceVersion", "")
        if current is None:
            if subresource or not rt.strategy.allow_create_on_update:
                raise self._not_found(rt, name)
            obj["metadata"].pop("resourceVersion", None)
            self._check_namespace(rt, namespace, name, True)
            return self._insert(rt, obj, dry_run=dry_run, manager=manager), 201
        if not rv:
            if not rt.strategy.allow_unconditional_update:
                # the custom resource store names the resource, not the kind, in this error
                raise _errors.invalid(
                    rt.group,
                    rt.plural,
                    name,
                    [
                        invalid_value(
                            "metadata.resourceVersion",
                            _errors.GoLiteral("0x0"),
                            "must be specified for an update",
                        )
                    ],
                )
        elif rv != current["metadata"]["resourceVersion"]:
            _parse_rv(rv)
            raise _errors.conflict(rt.group, rt.plural, name)
        return (
            self._apply_update(
                rt, key, current, obj, subresource, dry_run=dry_run, manager=manager
            ),
            200,
        )

    def _check_uid_precondition(
        self, rt: ResourceType, namespace: str, name: str, obj: JsonObj, current: JsonObj | None
    ) -> None:
        """A PUT body's ``metadata.uid`` is a precondition on the stored object (409 if it
        differs, or if there is no object), checked before existence and resourceVersion."""
        wanted = obj["metadata"].get("uid", "")
        actual = "" if current is None else current["metadata"].get("uid", "")
        if wanted and wanted != actual:
            raise _errors.uid_precondition_failed(
                rt.group,
                rt.plural,
                name,
                rt.storage_key(namespace, name),
                wanted,
                actual,
            )

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        body: object,
        *,
        subresource: str = "",
        dry_run: bool = False,
        manager: str = SERVER_MANAGER,
    ) -> JsonObj:
        key = self.key(rt, namespace, name)
        current = self.store.get(rt.bucket, key)
        if current is None:
            raise self._not_found(rt, name)
        original = clone(rt.present(current))
        if patch_type == MERGE_PATCH:
            if not isinstance(body, dict):
                raise _not_an_object_patch(body)
            patched = merge_patch(original, body)
        elif patch_type == JSON_PATCH:
            patched = json_patch(original, body)
        elif patch_type == STRATEGIC_PATCH:
            meta = rt.strategy.patch_meta
            if meta is None:
                raise _errors.unsupported_patch_type()
            if not isinstance(body, dict):
                raise bad_request("strategic merge patch must be a JSON object")
            patched = strategic_merge_patch(original, body, meta)
        else:
            raise bad_request(f"unsupported patch type {patch_type}")
        if not isinstance(patched, dict):
            raise bad_request("the patched object is not a JSON object")
        patched_meta = patched.get("metadata")
        if isinstance(patched_meta, dict) and patched_meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({patched_meta.get('name')}) does not match the name on "
                f"the URL ({name})"
            )
        try:
            obj = self._decode(rt, patched, namespace, name)
        except DecodeError as error:  # the real server names neither group, kind nor object
            raise _errors.invalid(
                "", "", "", [invalid_value("patch", _compact(patched), error.detail)]
            ) from None
        rv = obj["metadata"].get("resourceVersion", "")
        if rv and rv != current["metadata"]["resourceVersion"]:
            _parse_rv(rv)
            raise _errors.conflict(rt.group, rt.plural, name)
        return self._apply_update(
            rt, key, current, obj, subresource, dry_run=dry_run, manager=manager
        )

    def apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: object,
        *,
        field_manager: str,
        dry_run: bool = False,
    ) -> tuple[JsonObj, int]:
        """Server-side apply, simplified: create when absent, else a merge of the applied config.

        Field ownership is not tracked: fields the applied configuration drops are kept.
        """
        if not field_manager:
            raise _errors.invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                [_errors.required("fieldManager", "is required for apply patch")],
            )
        key = self.key(rt, namespace, name)
        current = self.store.get(rt.bucket, key)
        if current is None:
            obj = self._decode(rt, body, namespace, name)
            self._check_namespace(rt, namespace, name, True)
            return self._insert(rt, obj, dry_run=dry_run, manager=field_manager), 201
        if not isinstance(body, dict):
            raise bad_request("apply patch must be an object")
        meta = rt.strategy.patch_meta
        original = clone(rt.present(current))
        patched = (
            strategic_merge_patch(original, body, meta)
            if meta is not None
            else merge_patch(original, body)
        )
        obj = self._decode(rt, patched, namespace, name)
        rv = obj["metadata"].get("resourceVersion", "")
        if rv and rv != current["metadata"]["resourceVersion"]:
            raise _errors.conflict(rt.group, rt.plural, name)
        return (
            self._apply_update(rt, key, current, obj, "", dry_run=dry_run, manager=field_manager),
            200,
        )

    def _apply_update(
        self,
        rt: ResourceType,
        key: ObjKey,
        current: JsonObj,
        new: JsonObj,
        subresource: str,
        *,
        dry_run: bool,
        manager: str = SERVER_MANAGER,
    ) -> JsonObj:
        strategy = rt.strategy
        if subresource == "status":
            new = strategy.prepare_status_update(new, current)
        else:
            strategy.prepare_update(new, current)
        meta = new["metadata"] = dict(new["metadata"])
        _meta.system_fields_for_update(meta, current["metadata"])
        errs = self._meta_errors(rt, meta)
        update_errs = _meta.validate_update(meta, current["metadata"])
        # ObjectMeta update rules run twice in the real server (generic BeforeUpdate and the
        # kind's ValidateUpdate), so each of their errors is reported twice.
        errs.extend(update_errs)
        if strategy.validate_object_meta:
            errs.extend(update_errs)
        if subresource == "status":
            errs.extend(strategy.validate_status_update(new, current))
        else:
            errs.extend(strategy.validate_update(new, current))
        if errs:
            raise self._invalid(rt, key[1], errs, new)
        if strategy.has_generation and strategy.spec_changed(new, current):
            meta["generation"] = current["metadata"].get("generation", 0) + 1
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        if "managedFields" in current["metadata"]:
            meta["managedFields"] = current["metadata"]["managedFields"]
        else:
            meta.pop("managedFields", None)
        if new == current:
            return rt.present(current)
        managed = _managed.update(
            current,
            new,
            manager=manager,
            api_version=rt.api_version,
            now=self.now(),
            all_maps=rt.list_items_have_kind,
        )
        if managed:
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)
        if dry_run:
            return rt.present(new)
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and meta.get("deletionGracePeriodSeconds", 0) == 0
        ):
            self.store.remove(rt.bucket, key)
            self.notify_rv()
            return rt.present(new)
        stored = self.store.put(rt.bucket, key, new)
        self.notify_rv()
        return rt.present(stored)

    # -- delete --------------------------------------------------------------------------------
    def delete(
        self, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions
    ) -> tuple[JsonObj, int]:
        key = self.key(rt, namespace, name)
        current = self.store.get(rt.bucket, key)
        if current is None:
            raise self._not_found(rt, name)
        meta = current["metadata"]
        qualified_kind = rt.kind
        if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
            raise _errors.conflict(
                rt.strategy.group or rt.group,
                qualified_kind,
                name,
                f"the UID in the precondition ({opts.precondition_uid}) does not match the UID in "
                f"record ({meta.get('uid')}). The object might have been deleted and then "
                "recreated",
            )
        if opts.precondition_rv is not None and opts.precondition_rv != meta.get("resourceVersion"):
            raise _errors.conflict(
                rt.strategy.group or rt.group,
                qualified_kind,
                name,
                f"the ResourceVersion in the precondition ({opts.precondition_rv}) does not match "
                f"the ResourceVersion in record ({meta.get('resourceVersion')}). The object might "
                "have been modified",
            )
        if rt.bucket == ("", "namespaces"):
            return self._delete_namespace(rt, key, current, opts)
        if rt.bucket == (CRD_GROUP, "customresourcedefinitions") and not meta.get(
            "deletionTimestamp"
        ):
            current = self._mark_crd_deleting(rt, key, current, opts.dry_run)
        return self._delete_object(rt, key, current, opts)

    def _gc_finalizers(self, finalizers: list[str], opts: DeleteOptions) -> list[str]:
        """deletionFinalizersForGarbageCollection: orphan/foreground from the options."""
        orphan: bool
        foreground: bool
        if opts.orphan_dependents is not None:
            orphan, foreground = opts.orphan_dependents, False
        elif opts.propagation is not None:
            orphan = opts.propagation == "Orphan"
            foreground = opts.propagation == "Foreground"
        else:
            orphan = "orphan" in finalizers
            foreground = "foregroundDeletion" in finalizers and not orphan
        out = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
        if orphan:
            out.append("orphan")
        if foreground:
            out.append("foregroundDeletion")
        if set(out) == set(finalizers):
            return finalizers
        return out

    def _delete_object(
        self, rt: ResourceType, key: ObjKey, current: JsonObj, opts: DeleteOptions
    ) -> tuple[JsonObj, int]:
        strategy = rt.strategy
        meta = current["metadata"]
        graceful = False
        new_meta = dict(meta)
        if meta.get("deletionTimestamp"):
            existing_grace = meta.get("deletionGracePeriodSeconds")
            if strategy.graceful and existing_grace:
                if opts.grace_period is None or opts.grace_period >= existing_grace:
                    return self._deleted_response(rt, current, deleted=False, opts=opts)
                moment = (
                    self._parse_time(meta["deletionTimestamp"])
                    - timedelta(seconds=existing_grace)
                    + timedelta(seconds=opts.grace_period)
                )
                new_meta["deletionTimestamp"] = rfc3339(moment)
                new_meta["deletionGracePeriodSeconds"] = opts.grace_period
                graceful = True
        elif strategy.graceful:
            period = strategy.grace_period(current, opts.grace_period)
            new_meta["deletionTimestamp"] = rfc3339(self.clock.now() + timedelta(seconds=period))
            new_meta["deletionGracePeriodSeconds"] = period
            if new_meta.get("generation", 0) > 0:
                new_meta["generation"] = new_meta["generation"] + 1
            graceful = True
        finalizers = self._gc_finalizers(list(meta.get("finalizers") or []), opts)
        if finalizers:
            new_meta["finalizers"] = finalizers
        else:
            new_meta.pop("finalizers", None)
        pending_finalizers = bool(finalizers)
        if not graceful and pending_finalizers:
            if not meta.get("deletionTimestamp") and new_meta.get("generation", 0) > 0:
                new_meta["generation"] = new_meta["generation"] + 1
            if not new_meta.get("deletionTimestamp"):
                new_meta["deletionTimestamp"] = self.now()
            new_meta["deletionGracePeriodSeconds"] = 0
        if graceful or pending_finalizers:
            updated = {**current, "metadata": new_meta}
            if updated != current and not opts.dry_run:
                updated = self.store.put(rt.bucket, key, updated)
                self.notify_rv()
            current = updated
            if pending_finalizers or new_meta.get("deletionGracePeriodSeconds", 0) > 0:
                return self._deleted_response(rt, current, deleted=False, opts=opts)
        if not opts.dry_run:
            self.store.remove(rt.bucket, key)
            self.notify_rv()
        return self._deleted_response(rt, current, deleted=True, opts=opts)

    def _deleted_response(
        self, rt: ResourceType, obj: JsonObj, *, deleted: bool, opts: DeleteOptions
    ) -> tuple[JsonObj, int]:
        code = 200
        if not deleted and opts.orphan_dependents is False:
            code = 202
        if not deleted or rt.strategy.return_deleted_object:
            return rt.present(obj), code
        details: JsonObj = {"name": obj["metadata"]["name"]}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = obj["metadata"].get("uid", "")
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }, code

    def _parse_time(self, text: str) -> datetime:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)

    def _mark_crd_deleting(
        self, rt: ResourceType, key: ObjKey, current: JsonObj, dry_run: bool
    ) -> JsonObj:
        meta = dict(current["metadata"])
        meta["deletionTimestamp"] = self.now()
        finalizers = list(meta.get("finalizers") or [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        meta["finalizers"] = finalizers
        status = dict(current.get("status") or {})
        status["conditions"] = set_condition(
            list(status.get("conditions") or []),
            {
                "type": "Terminating",
                "status": "True",
                "reason": "InstanceDeletionPending",
                "message": "CustomResourceDefinition marked for deletion; CustomResource deletion "
                "will begin soon",
            },
            self.now(),
        )
        updated = {**current, "metadata": meta, "status": status}
        if dry_run:
            return updated
        stored = self.store.put(rt.bucket, key, updated)
        self.notify_rv()
        return stored

    def _delete_namespace(
        self, rt: ResourceType, key: ObjKey, current: JsonObj, opts: DeleteOptions
    ) -> tuple[JsonObj, int]:
        name = key[1]
        if name in SYSTEM_NAMESPACES:
            raise _errors.forbidden_error(
                "", "namespaces", name, "this namespace may not be deleted"
            )
        meta = current["metadata"]
        spec_finalizers = (current.get("spec") or {}).get("finalizers") or []
        if meta.get("deletionTimestamp"):
            if not spec_finalizers and not meta.get("finalizers"):
                if not opts.dry_run:
                    self.store.remove(rt.bucket, key)
                    self.notify_rv()
                return rt.present(current), 200
            return rt.present(current), 200
        new_meta = dict(meta)
        new_meta["deletionTimestamp"] = self.now()
        finalizers = self._gc_finalizers(list(meta.get("finalizers") or []), opts)
        if finalizers:
            new_meta["finalizers"] = finalizers
        else:
            new_meta.pop("finalizers", None)
        if not spec_finalizers and not finalizers:
            if not opts.dry_run:
                self.store.remove(rt.bucket, key)
                self.notify_rv()
            return rt.present(current), 200
        status = {**(current.get("status") or {}), "phase": "Terminating"}
        updated = {**current, "metadata": new_meta, "status": status}
        if not opts.dry_run:
            updated = self.store.put(rt.bucket, key, updated)
            self.notify_rv()
        return rt.present(updated), 200

    def delete_collection(
        self, rt: ResourceType, namespace: str, q: ListQuery, opts: DeleteOptions
    ) -> JsonObj:
        matches = self.matcher(rt, namespace, q)
        deleted: list[JsonObj] = []
        for key, obj in self.store.sorted_items(rt.bucket):
            if rt.namespaced and namespace and key[0] != namespace:
                continue
            if not matches(obj):
                continue
            try:
                shown, _ = self.delete(rt, key[0], key[1], opts)
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            gone = shown if shown.get("kind") != "Status" else obj
            deleted.append(self._list_item(rt, gone))
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.rv)},
            "items": deleted,
        }

    # -- subresources with their own semantics -------------------------------------------------
    def bind_pod(self, rt: ResourceType, namespace: str, name: str, body: object) -> JsonObj:
        if not isinstance(body, dict):
            raise bad_request("Binding must be a JSON object")
        target = body.get("target") or {}
        node = target.get("name", "") if isinstance(target, dict) else ""
        if not node:
            raise _errors.invalid("", "Binding", name, [_errors.required("target.name")])
        key = self.key(rt, namespace, name)
        current = self.store.get(rt.bucket, key)
        if current is None:
            raise self._not_found(rt, name)
        if current["metadata"].get("deletionTimestamp"):
            raise _errors.conflict(
                "",
                "pods/binding",
                name,
                f"pod {name} is being deleted, cannot be assigned to a host",
            )
        spec = dict(current.get("spec") or {})
        if spec.get("nodeName"):
            raise _errors.conflict(
                "",
                "pods/binding",
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        spec["nodeName"] = node
        status = dict(current.get("status") or {})
        status["conditions"] = set_condition(
            list(status.get("conditions") or []),
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None},
            self.now(),
        )
        meta = dict(current["metadata"])
        annotations = (body.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict) and annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        self.store.put(
            rt.bucket, key, {**current, "metadata": meta, "spec": spec, "status": status}
        )
        self.notify_rv()
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }

    def finalize_namespace(self, rt: ResourceType, name: str, body: object) -> JsonObj:
        obj = self._decode(rt, body, "", name)
        key = self.key(rt, "", name)
        current = self.store.get(rt.bucket, key)
        self._check_uid_precondition(rt, "", name, obj, current)
        if current is None:
            raise self._not_found(rt, name)
        rv = obj["metadata"].get("resourceVersion", "")
        if rv and rv != current["metadata"]["resourceVersion"]:
            raise _errors.conflict("", "namespaces", name)
        finalizers = (obj.get("spec") or {}).get("finalizers") or []
        spec = {**(current.get("spec") or {})}
        if finalizers:
            spec["finalizers"] = list(finalizers)
        else:
            spec.pop("finalizers", None)
        updated = {**current, "spec": spec}
        if updated == current:
            return rt.present(current)
        stored = self.store.put(rt.bucket, key, updated)
        self.notify_rv()
        return rt.present(stored)


_GO_TYPE_META = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


def _not_an_object_patch(body: object) -> ApiError:
    """A merge patch that is not a JSON object: 422 on the ``patch`` field, as the real server."""
    go_kind = {list: "array", str: "string", int: "number", float: "number", bool: "bool"}.get(
        type(body), "value"
    )
    return _errors.invalid(
        "",
        "",
        "",
        [
            invalid_value(
                "patch",
                json.dumps(body, separators=(",", ":")),
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{go_kind} into Go value of type {_GO_TYPE_META}",
            )
        ],
    )


def set_condition(conditions: list[JsonObj], condition: JsonObj, now: str) -> list[JsonObj]:
    """Replace the condition of the same type, moving lastTransitionTime only on a change."""
    out: list[JsonObj] = []
    placed = False
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            merged = {**condition}
            merged["lastTransitionTime"] = (
                existing.get("lastTransitionTime", now)
                if existing.get("status") == condition["status"]
                else now
            )
            out.append(merged)
            placed = True
        else:
            out.append(existing)
    if not placed:
        out.append({**condition, "lastTransitionTime": now})
    return out


def _compact(value: object) -> str:
    """JSON as Go's encoder writes it (no spaces)."""
    return json.dumps(value, separators=(",", ":"))
