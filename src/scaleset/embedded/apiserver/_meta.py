"""ObjectMeta rules shared by every kind: shape, validation on create and on update, generateName.

Mirrors ``apimachinery/pkg/api/validation/objectmeta.go`` and the generic registry's
``BeforeCreate``/``BeforeUpdate`` bookkeeping.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from scaleset.embedded.apiserver import _names
from scaleset.embedded.apiserver._errors import (
    FieldError,
    bad_request,
    forbidden,
    invalid_value,
    required,
    too_long,
)

JsonObj = dict[str, Any]
NameRule = Callable[[str], list[str]]

OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "clusterName",
        "managedFields",
    }
)
_STRING_FIELDS = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "clusterName",
)
_OWNER_REF_FIELDS = frozenset(
    {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
)
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
_GENERATED_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_PREFIX = 63 - 5


def _type_error(kind: str, path: str, expected: str, value: object) -> None:
    raise bad_request(
        f"{kind} in version cannot be handled: {path}: expected {expected}, got "
        f"{json.dumps(value)[:80]}"
    )


def normalize(meta: object, kind: str) -> JsonObj:
    """Decode ObjectMeta as a typed decoder would: unknown fields dropped, wrong types -> 400."""
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        _type_error(kind, "metadata", "object", meta)
        raise AssertionError  # pragma: no cover - _type_error raises
    out: JsonObj = {}
    for key, value in meta.items():
        if key not in OBJECT_META_FIELDS or value is None:
            continue
        if key in _STRING_FIELDS:
            if not isinstance(value, str):
                _type_error(kind, f"metadata.{key}", "string", value)
            if not value:
                continue
        elif key in ("labels", "annotations"):
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                _type_error(kind, f"metadata.{key}", "map of strings", value)
            if not value:
                continue
        elif key == "finalizers":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                _type_error(kind, "metadata.finalizers", "list of strings", value)
            if not value:
                continue
        elif key == "ownerReferences":
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                _type_error(kind, "metadata.ownerReferences", "list of objects", value)
            if not value:
                continue
            value = [{k: v for k, v in ref.items() if k in _OWNER_REF_FIELDS} for ref in value]
        elif key in ("generation", "deletionGracePeriodSeconds"):
            if not isinstance(value, int) or isinstance(value, bool):
                _type_error(kind, f"metadata.{key}", "integer", value)
        elif key in ("creationTimestamp", "deletionTimestamp") and not isinstance(value, str):
            _type_error(kind, f"metadata.{key}", "RFC 3339 time", value)
        out[key] = value
    return out


def generate_name(prefix: str) -> str:
    """names.SimpleNameGenerator: prefix (cut to 58 chars) + 5 random safe characters."""
    suffix = "".join(secrets.choice(_GENERATED_ALPHABET) for _ in range(5))
    return prefix[:_MAX_GENERATED_PREFIX] + suffix


def _validate_labels(labels: dict[str, str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs.extend(invalid_value(path, key, msg) for msg in _names.qualified_name(key))
        errs.extend(invalid_value(path, value, msg) for msg in _names.label_value(value))
    return errs


def _validate_annotations(annotations: dict[str, str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for key, value in annotations.items():
        errs.extend(invalid_value(path, key, msg) for msg in _names.qualified_name(key.lower()))
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _validate_owner_references(refs: list[JsonObj], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    controllers = 0
    for ref in refs:
        if not str(ref.get("apiVersion", "")).rpartition("/")[2]:
            errs.append(
                invalid_value(
                    f"{path}.apiVersion", ref.get("apiVersion", ""), "version must not be empty"
                )
            )
        for field in ("kind", "name"):
            if not ref.get(field):
                errs.append(
                    invalid_value(
                        f"{path}.{field}", ref.get(field, ""), f"{field} must not be empty"
                    )
                )
        if not ref.get("uid"):
            errs.append(invalid_value(f"{path}.uid", "", "uid must not be empty"))
        if ref.get("controller") is True:
            controllers += 1
    if controllers > 1:
        errs.append(
            invalid_value(
                path,
                refs,
                'Only one reference can have Controller set to true. Found "true" in '
                "references for "
                + " and ".join(
                    f"{r.get('kind', '')}/{r.get('name', '')}" for r in refs if r.get("controller")
                ),
            )
        )
    return errs


def _validate_finalizers(finalizers: list[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for fin in finalizers:
        errs.extend(invalid_value(path, fin, msg) for msg in _names.qualified_name(fin))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(
            invalid_value(
                path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"
            )
        )
    return errs


def validate(
    meta: JsonObj, *, namespaced: bool, name_rule: NameRule, strict_finalizers: bool = False
) -> list[FieldError]:
    """ValidateObjectMetaAccessor for a create (and the parts an update re-checks).

    ``strict_finalizers``: the core/v1 and RBAC validation also requires each finalizer to be a
    standard one or fully qualified (contain a '/').
    """
    errs: list[FieldError] = []
    name = meta.get("name", "")
    generate = meta.get("generateName", "")
    if generate:
        errs.extend(
            invalid_value("metadata.generateName", generate, msg)
            for msg in name_rule(_names.mask_trailing_dash(generate))
        )
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(invalid_value("metadata.name", name, msg) for msg in name_rule(name))
    namespace = meta.get("namespace", "")
    if namespaced:
        if not namespace:
            errs.append(required("metadata.namespace"))
        else:
            errs.extend(
                invalid_value("metadata.namespace", namespace, msg)
                for msg in _names.dns1123_label(namespace)
            )
    elif namespace:
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation", 0)
    if generation < 0:
        errs.append(
            invalid_value("metadata.generation", generation, "must be greater than or equal to 0")
        )
    errs.extend(_validate_labels(meta.get("labels", {}), "metadata.labels"))
    errs.extend(_validate_annotations(meta.get("annotations", {}), "metadata.annotations"))
    errs.extend(
        _validate_owner_references(meta.get("ownerReferences", []), "metadata.ownerReferences")
    )
    errs.extend(_validate_finalizers(meta.get("finalizers", []), "metadata.finalizers"))
    if strict_finalizers:
        for i, fin in enumerate(meta.get("finalizers", [])):
            if "/" not in fin and fin not in STANDARD_FINALIZERS:
                errs.append(
                    invalid_value(
                        f"metadata.finalizers[{i}]",
                        fin,
                        "name is neither a standard finalizer name nor is it fully qualified",
                    )
                )
    return errs


def validate_update(new: JsonObj, old: JsonObj) -> list[FieldError]:
    """ValidateObjectMetaUpdate: immutable identity, no new finalizers while deleting."""
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        added = [f for f in new.get("finalizers", []) if f not in old.get("finalizers", [])]
        if added:
            errs.append(
                forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    "finalizers []string{" + ", ".join(json.dumps(f) for f in added) + "}",
                )
            )
    for field in ("name", "namespace", "uid"):
        if new.get(field, "") != old.get(field, ""):
            errs.append(
                invalid_value(f"metadata.{field}", new.get(field, ""), "field is immutable")
            )
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if new.get(field) != old.get(field):
            errs.append(invalid_value(f"metadata.{field}", new.get(field), "field is immutable"))
    return errs


def system_fields_for_update(new: JsonObj, old: JsonObj) -> None:
    """BeforeUpdate: keep what an update may not change (mutates ``new`` in place)."""
    if not new.get("uid"):
        new["uid"] = old.get("uid", "")
    if old.get("creationTimestamp"):
        new["creationTimestamp"] = old["creationTimestamp"]
    if "generation" in old:
        new["generation"] = old["generation"]
    else:
        new.pop("generation", None)
    if old.get("deletionTimestamp"):
        new["deletionTimestamp"] = old["deletionTimestamp"]
    if "deletionGracePeriodSeconds" in old and "deletionGracePeriodSeconds" not in new:
        new["deletionGracePeriodSeconds"] = old["deletionGracePeriodSeconds"]
    new.pop("selfLink", None)
    new.pop("clusterName", None)
