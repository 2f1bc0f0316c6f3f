"""The three patch formats kube-apiserver accepts: JSON merge, JSON (RFC 6902), strategic merge.

JSON patch is applied by the ``jsonpatch`` library; merge patch is RFC 7386; strategic merge patch
follows ``k8s.io/apimachinery/pkg/util/strategicpatch`` for the directives kubectl sends
(``$patch``, ``$retainKeys``, ``$setElementOrder/…``, ``$deleteFromPrimitiveList/…``) using a
small per-kind table of merge keys (:class:`PatchMeta`).

Callers pass objects they own: the functions may reuse parts of their inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from scaleset.embedded.apiserver._errors import ApiError, bad_request

JsonObj = dict[str, Any]

MAX_JSON_PATCH_OPERATIONS = 10000


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result: JsonObj = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: JsonObj, operations: Any) -> Any:
    """RFC 6902 through the jsonpatch library; errors worded as the real server's."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise ApiError(
            413,
            "RequestEntityTooLarge",
            f"Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}",
        )
    for op in operations:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise bad_request("Unexpected kind: invalid JSON patch operation")
    try:
        patch = jsonpatch.JsonPatch(operations)
        return patch.apply(target, in_place=False)
    except jsonpatch.JsonPatchTestFailed as exc:
        raise _unprocessable(f"testing value failed: {exc}") from None
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise _unprocessable(str(exc)) from None
    except (TypeError, KeyError, IndexError, ValueError) as exc:
        raise _unprocessable(f"invalid JSON patch: {exc}") from None


def _unprocessable(detail: str) -> ApiError:
    """A JSON patch that cannot be applied: 422 without details, as the real server says it."""
    del detail
    return ApiError(
        422, "Invalid", "the server rejected our request due to an error in our request", {}
    )


@dataclass(frozen=True)
class PatchMeta:
    """Strategic-merge metadata for one field: its children, and how a list there merges."""

    fields: Mapping[str, PatchMeta] = field(default_factory=dict)
    merge_key: str | None = None
    merge_primitives: bool = False

    def child(self, name: str) -> PatchMeta:
        return self.fields.get(name, _PLAIN)


_PLAIN = PatchMeta()


def _strip(value: Any) -> Any:
    """Remove directive keys from a value that is being inserted as is."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if not (k.startswith("$") and (k in ("$patch", "$retainKeys") or "/" in k))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def strategic_merge_patch(original: JsonObj, patch: JsonObj, meta: PatchMeta) -> JsonObj:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    merged = _merge_map(original, patch, meta)
    return merged if merged is not None else {}


def _merge_map(original: JsonObj, patch: JsonObj, meta: PatchMeta) -> JsonObj | None:
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip(patch)  # type: ignore[no-any-return]
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise bad_request(f"Unknown patch type: {directive}")
    result: JsonObj = dict(original)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            if not isinstance(value, list):
                raise bad_request("invalid type for $setElementOrder list")
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if not isinstance(value, list):
                raise bad_request("invalid type for $deleteFromPrimitiveList")
            current = result.get(name)
            if isinstance(current, list):
                result[name] = [v for v in current if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        sub = meta.child(key)
        current = result.get(key)
        if isinstance(value, dict):
            merged = _merge_map(current if isinstance(current, dict) else {}, value, sub)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and (sub.merge_key or sub.merge_primitives):
            result[key] = _merge_list(current if isinstance(current, list) else [], value, sub)
        else:
            result[key] = _strip(value)
    for name, order in orders.items():
        if isinstance(result.get(name), list):
            result[name] = _apply_order(result[name], order, meta.child(name).merge_key)
    retain = patch.get("$retainKeys")
    if retain is not None:
        if not isinstance(retain, list):
            raise bad_request("invalid type for $retainKeys")
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(original: list[Any], patch: list[Any], meta: PatchMeta) -> list[Any]:
    if meta.merge_primitives:
        out = list(original)
        for value in patch:
            if isinstance(value, dict):
                if value.get("$patch") == "replace":
                    return [v for v in patch if not isinstance(v, dict)]
                raise bad_request("invalid element in a list of primitives")
            if value not in out:
                out.append(value)
        return out
    key = meta.merge_key or ""
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip(item) for item in patch if not (isinstance(item, dict) and "$patch" in item)]
    out = list(original)
    item_meta = meta
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"cannot merge a non-object into a list merged by key {key!r}")
        if key not in item:
            raise bad_request(f"map: {item} does not contain declared merge key: {key}")
        index = next(
            (i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
            continue
        if index is None:
            out.append(_strip(item))
        else:
            merged = _merge_map(out[index], item, item_meta)
            if merged is None:
                del out[index]
            else:
                out[index] = merged
    return out


def _apply_order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def ident(value: Any) -> Any:
        if key and isinstance(value, dict):
            return value.get(key)
        return value

    wanted = [ident(o) for o in order]
    positions = {repr(w): i for i, w in enumerate(wanted)}
    ordered = sorted(
        (item for item in items if repr(ident(item)) in positions),
        key=lambda item: positions[repr(ident(item))],
    )
    rest = [item for item in items if repr(ident(item)) not in positions]
    return ordered + rest
