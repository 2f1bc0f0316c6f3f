"""``metadata.managedFields`` as a 1.20 server keeps them for Update operations.

Each write names a manager (the ``fieldManager`` parameter, else the User-Agent's product
token). The manager comes to own every field its write changed; fields a write removed or
another manager changed leave the others' sets; managers left with nothing are dropped. Field
sets are FieldsV1: ``f:<field>`` for object fields, ``k:{...}`` for list items merged by key,
``v:<value>`` for set-like lists, ``.`` for the map or list itself.

This follows the shape and ownership rules, not every detail of structured-merge-diff (for
example, which lists are atomic is decided from a short table of merge keys).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

JsonObj = dict[str, Any]
Path = tuple[str, ...]

_SYSTEM_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
        "clusterName",
    }
)
_MAP_FIELDS = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "limits",
        "requests",
    }
)
_LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "protocol"),
    "ownerReferences": ("uid",),
    "conditions": ("type",),
    "imagePullSecrets": ("name",),
    "containerStatuses": ("name",),
    "initContainerStatuses": ("name",),
    "podIPs": ("ip",),
}
_SET_LISTS = frozenset({"finalizers"})
_REQUIRED_LISTS = frozenset({"containers"})  # never omitted, so never owned as a whole


def _leaves(value: Any, path: Path, out: dict[Path, Any], *, all_maps: bool, name: str) -> None:
    if isinstance(value, dict):
        if path and ((all_maps and name != "metadata") or name in _MAP_FIELDS):
            out[(*path, ".")] = None
        for key, item in value.items():
            _leaves(item, (*path, f"f:{key}"), out, all_maps=all_maps, name=key)
        if not value and path:
            out[path] = {}
        return
    if isinstance(value, list) and name in _SET_LISTS:
        out[(*path, ".")] = None
        for item in value:
            out[(*path, "v:" + json.dumps(item, separators=(",", ":")))] = None
        return
    keys = _LIST_KEYS.get(name)
    if isinstance(value, list) and keys and all(isinstance(i, dict) for i in value):
        if name not in _REQUIRED_LISTS:
            out[(*path, ".")] = None
        for item in value:
            ident = {k: item[k] for k in keys if k in item}
            element = (*path, "k:" + json.dumps(ident, separators=(",", ":"), sort_keys=True))
            out[(*element, ".")] = None
            for key, sub in item.items():
                _leaves(sub, (*element, f"f:{key}"), out, all_maps=all_maps, name=key)
        return
    out[path] = value


def _owned_fields(obj: JsonObj) -> Iterator[tuple[str, Any]]:
    """The top-level fields a manager can own: not apiVersion/kind, metadata without its
    system fields (and not at all when nothing else is left in it)."""
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            meta = {k: v for k, v in value.items() if k not in _SYSTEM_META}
            if meta:
                yield key, meta
            continue
        yield key, value


def leaves(obj: JsonObj, *, all_maps: bool) -> dict[Path, Any]:
    """Every owned leaf of an object (system metadata excluded) with its value."""
    out: dict[Path, Any] = {}
    for key, value in _owned_fields(obj):
        _leaves(value, (f"f:{key}",), out, all_maps=all_maps, name=key)
    return out


def _fields(value: Any, *, all_maps: bool, name: str, top: bool = False) -> JsonObj:
    """FieldsV1 of a whole value in one walk (the create case: one manager owns everything)."""
    out: JsonObj = {}
    if isinstance(value, dict):
        if not top and ((all_maps and name != "metadata") or name in _MAP_FIELDS) and value:
            out["."] = {}
        for key, item in value.items():
            out[f"f:{key}"] = _fields(item, all_maps=all_maps, name=key)
        return out
    if isinstance(value, list) and name in _SET_LISTS:
        if value:
            out["."] = {}
        for item in value:
            out["v:" + json.dumps(item, separators=(",", ":"))] = {}
        return out
    keys = _LIST_KEYS.get(name)
    if isinstance(value, list) and keys and all(isinstance(i, dict) for i in value):
        if name not in _REQUIRED_LISTS and value:
            out["."] = {}
        for item in value:
            ident = {k: item[k] for k in keys if k in item}
            element: JsonObj = {".": {}}
            for key, sub in item.items():
                element[f"f:{key}"] = _fields(sub, all_maps=all_maps, name=key)
            out["k:" + json.dumps(ident, separators=(",", ":"), sort_keys=True)] = element
        return out
    return out


def fields_of(obj: JsonObj, *, all_maps: bool) -> JsonObj:
    out: JsonObj = {}
    for key, value in _owned_fields(obj):
        out[f"f:{key}"] = _fields(value, all_maps=all_maps, name=key, top=key == "metadata")
    return dict(sorted(out.items()))


def _to_fields(paths: set[Path]) -> JsonObj:
    root: JsonObj = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return _collapse(root)


def _collapse(node: JsonObj) -> JsonObj:
    """A member owning only itself is written ``{}``, not ``{".": {}}``."""
    out: JsonObj = {}
    for key, sub in node.items():
        child = _collapse(sub)
        out[key] = {} if list(child) == ["."] else child
    return out


def _from_fields(fields: JsonObj, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, sub in fields.items():
        path = (*prefix, key)
        if isinstance(sub, dict) and sub:
            out |= _from_fields(sub, path)
        else:
            out.add(path)
    return out


def _owned(entries: list[JsonObj]) -> dict[str, tuple[JsonObj, set[Path]]]:
    owned: dict[str, tuple[JsonObj, set[Path]]] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("fieldsV1"), dict):
            owned[str(entry.get("manager", ""))] = (entry, _from_fields(entry["fieldsV1"]))
    return owned


def _canonical(path: Path, *known: dict[Path, Any]) -> Path:
    """A parsed ``{}`` leaf may stand for a member's ``.``: match how ``leaves`` names it."""
    if any(path in k for k in known):
        return path
    dotted = (*path, ".")
    return dotted if any(dotted in k for k in known) else path


def update(
    old: JsonObj | None,
    new: JsonObj,
    *,
    manager: str,
    api_version: str,
    now: str,
    all_maps: bool,
) -> list[JsonObj]:
    """The managedFields ``new`` gets when ``manager`` writes it over ``old`` (None: create)."""
    if old is None:
        fields = fields_of(new, all_maps=all_maps)
        if not fields:
            return []
        return [
            {
                "manager": manager,
                "operation": "Update",
                "apiVersion": api_version,
                "time": now,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields,
            }
        ]
    after = leaves(new, all_maps=all_maps)
    before = leaves(old, all_maps=all_maps) if old is not None else {}
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    present = set(after)
    entries = (old or {}).get("metadata", {}).get("managedFields") or []
    owned = {
        name: (entry, {_canonical(p, after, before) for p in paths})
        for name, (entry, paths) in _owned(entries).items()
    }
    result: list[JsonObj] = []
    mine = changed | (owned[manager][1] & present if manager in owned else set())
    for name, (entry, paths) in owned.items():
        if name == manager:
            continue
        kept = (paths - changed) & present
        if kept:
            if kept == paths:
                result.append(entry)
            else:
                result.append({**entry, "fieldsV1": _to_fields(kept)})
    if mine:
        previous = owned.get(manager)
        if previous is not None and previous[1] == mine and not changed:
            result.append(previous[0])
        else:
            result.append(
                {
                    "manager": manager,
                    "operation": "Update",
                    "apiVersion": api_version,
                    "time": now,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": _to_fields(mine),
                }
            )
    # as structured-merge-diff sorts them: operation, then time, then manager
    result.sort(key=lambda e: (e["operation"], e["time"], e["manager"]))
    return result


def manager_from(field_manager: str | None, user_agent: str | None) -> str:
    """The manager a request writes as: ``fieldManager`` or the User-Agent's first token."""
    if field_manager:
        return field_manager[:128]
    agent = (user_agent or "").split("/", 1)[0].strip()
    return agent[:128] or "unknown"
