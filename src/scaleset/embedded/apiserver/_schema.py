"""OpenAPI v3 defaulting and validation of custom resources against their CRD's schema.

Errors are worded as kube-apiserver (via go-openapi) words them, e.g. ``spec.size: Invalid value:
"string": spec.size in body must be of type integer: "string"``; list elements are addressed
``spec.tags.0``, as go-openapi does. Only ``metadata`` at the root is left to ObjectMeta rules.
"""

from __future__ import annotations

import json
import re
from typing import Any

from scaleset.embedded.apiserver._errors import FieldError, invalid_value, not_supported, required

JsonObj = dict[str, Any]


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(value: object, wanted: str) -> bool:
    if wanted == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if wanted == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if wanted == "boolean":
        return isinstance(value, bool)
    if wanted == "string":
        return isinstance(value, str)
    if wanted == "array":
        return isinstance(value, list)
    if wanted == "object":
        return isinstance(value, dict)
    return True


def apply_defaults(obj: JsonObj, schema: JsonObj | None) -> None:
    """Structural defaulting: set ``default`` values of absent properties, recursively."""
    if schema is not None:
        _default(obj, schema, root=True)


def _default(value: Any, schema: JsonObj, *, root: bool = False) -> None:
    if isinstance(value, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for name, sub in properties.items():
                if not isinstance(sub, dict) or (root and name == "metadata"):
                    continue
                if name not in value and "default" in sub:
                    value[name] = json.loads(json.dumps(sub["default"]))
                if name in value:
                    _default(value[name], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in value:
                _default(value[key], additional)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _default(item, items)


def validate(obj: JsonObj, schema: JsonObj | None) -> list[FieldError]:
    if schema is None:
        return []
    errs: list[FieldError] = []
    _validate(obj, schema, "", errs, root=True)
    return errs


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _validate(
    value: Any, schema: JsonObj, path: str, errs: list[FieldError], *, root: bool = False
) -> None:
    label = path or "."
    if value is None:
        if schema.get("nullable") is True:
            return
        wanted = schema.get("type")
        if wanted and not schema.get("x-kubernetes-int-or-string"):
            errs.append(
                invalid_value(path, "null", f'{label} in body must be of type {wanted}: "null"')
            )
        return
    if schema.get("x-kubernetes-int-or-string") is True:
        if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            actual = type_name(value)
            errs.append(
                invalid_value(
                    path, actual, f'{label} in body must be of type integer,string: "{actual}"'
                )
            )
            return
    else:
        wanted = schema.get("type")
        if isinstance(wanted, str) and not _type_ok(value, wanted):
            actual = type_name(value)
            errs.append(
                invalid_value(path, actual, f'{label} in body must be of type {wanted}: "{actual}"')
            )
            return
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = [e if isinstance(e, str) else json.dumps(e) for e in enum]
        errs.append(not_supported(path, value, allowed))
    if isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(value, schema, path, label, errs)
    elif isinstance(value, str):
        _validate_string(value, schema, path, label, errs)
    elif isinstance(value, list):
        _validate_array(value, schema, path, label, errs)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, label, errs, root=root)
    for keyword in ("allOf", "anyOf", "oneOf"):
        branches = schema.get(keyword)
        if not isinstance(branches, list):
            continue
        results = []
        for branch in branches:
            branch_errs: list[FieldError] = []
            if isinstance(branch, dict):
                _validate(value, branch, path, branch_errs)
            results.append(branch_errs)
        if keyword == "allOf":
            for branch_errs in results:
                errs.extend(branch_errs)
        elif keyword == "anyOf" and results and all(results):
            errs.append(invalid_value(path, value, f"{label} in body must be of type anyOf"))
        elif keyword == "oneOf" and sum(1 for r in results if not r) != 1:
            errs.append(
                invalid_value(
                    path, value, f"{label} in body must validate one and only one schema (oneOf)"
                )
            )
    negated = schema.get("not")
    if isinstance(negated, dict):
        inner: list[FieldError] = []
        _validate(value, negated, path, inner)
        if not inner:
            errs.append(
                invalid_value(path, value, f"{label} in body should not be valid against schema")
            )


def _validate_number(
    value: float, schema: JsonObj, path: str, label: str, errs: list[FieldError]
) -> None:
    minimum = schema.get("minimum")
    if isinstance(minimum, int | float):
        if schema.get("exclusiveMinimum") is True and value <= minimum:
            errs.append(
                invalid_value(path, value, f"{label} in body should be greater than {minimum}")
            )
        elif value < minimum:
            errs.append(
                invalid_value(
                    path, value, f"{label} in body should be greater than or equal to {minimum}"
                )
            )
    maximum = schema.get("maximum")
    if isinstance(maximum, int | float):
        if schema.get("exclusiveMaximum") is True and value >= maximum:
            errs.append(
                invalid_value(path, value, f"{label} in body should be less than {maximum}")
            )
        elif value > maximum:
            errs.append(
                invalid_value(
                    path, value, f"{label} in body should be less than or equal to {maximum}"
                )
            )
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and multiple and (value / multiple) % 1 != 0:
        errs.append(
            invalid_value(path, value, f"{label} in body should be a multiple of {multiple}")
        )


def _validate_string(
    value: str, schema: JsonObj, path: str, label: str, errs: list[FieldError]
) -> None:
    max_length = schema.get("maxLength")
    if isinstance(max_length, int) and len(value) > max_length:
        errs.append(
            invalid_value(path, value, f"{label} in body should be at most {max_length} chars long")
        )
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and len(value) < min_length:
        errs.append(
            invalid_value(
                path, value, f"{label} in body should be at least {min_length} chars long"
            )
        )
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            matched = True
        if not matched:
            errs.append(invalid_value(path, value, f"{label} in body should match '{pattern}'"))


def _validate_count(
    count: int,
    schema: JsonObj,
    max_key: str,
    min_key: str,
    noun: str,
    path: str,
    label: str,
    errs: list[FieldError],
) -> None:
    """maxItems/minItems and maxProperties/minProperties: the count is the reported value."""
    most = schema.get(max_key)
    if isinstance(most, int) and count > most:
        errs.append(
            invalid_value(path, count, f"{label} in body should have at most {most} {noun}")
        )
    least = schema.get(min_key)
    if isinstance(least, int) and count < least:
        errs.append(
            invalid_value(path, count, f"{label} in body should have at least {least} {noun}")
        )


def _validate_array(
    value: list[Any], schema: JsonObj, path: str, label: str, errs: list[FieldError]
) -> None:
    _validate_count(len(value), schema, "maxItems", "minItems", "items", path, label, errs)
    if schema.get("uniqueItems") is True:
        seen = [json.dumps(v, sort_keys=True) for v in value]
        if len(set(seen)) != len(seen):
            errs.append(invalid_value(path, value, f"{label} in body shouldn't contain duplicates"))
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _validate(item, items, f"{path}.{index}" if path else str(index), errs)


def _validate_object(
    value: JsonObj, schema: JsonObj, path: str, label: str, errs: list[FieldError], *, root: bool
) -> None:
    missing = {name for name in schema.get("required") or [] if value.get(name) is None}
    for name in schema.get("required") or []:
        if name in missing:
            errs.append(required(_child(path, name)))
    _validate_count(
        len(value), schema, "maxProperties", "minProperties", "properties", path, label, errs
    )
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    additional = schema.get("additionalProperties")
    for name, item in value.items():
        if root and name in ("metadata", "apiVersion", "kind"):
            continue
        sub = properties.get(name)
        if name in missing:
            continue
        if isinstance(sub, dict):
            _validate(item, sub, _child(path, name), errs)
        elif isinstance(additional, dict):
            _validate(item, additional, _child(path, name), errs)
