"""Value types of a built-in object checked as kube-apiserver's typed decode checks them.

kube-apiserver decodes a built-in kind's JSON into its Go struct: a value of the wrong JSON type
(``spec.containers: true``, a container ``name`` that is a number) fails the decode and the
request is a ``400 BadRequest`` ("Pod in version "v1" cannot be handled as a Pod: ..."), before
defaulting or validation look at it; ``null`` is the zero value; unknown fields are dropped
elsewhere (``Strategy.shape``). The embedded server has the types of every field of the kinds it
serves in ``_openapi_builtin.json`` (kube-apiserver v1.20.2's own definitions), so the check
walks the body along them: ``check_types`` raises the 400 with the path of the first wrong value,
where the defaulting code would otherwise meet it as a Python ``TypeError`` (a 500). The result
of a patch that fails the decode is a ``422 Invalid`` on the field ``patch`` instead, as the real
server answers it (``_rest.patch`` turns a ``DecodeError`` into that).

The JSON forms Go accepts beyond the schema's ``type``: an ``int-or-string`` field takes either;
a ``resource.Quantity`` (``type: string`` in the schema) also takes a number; an ``integer``
field takes no fraction (Go's ``strconv.ParseInt`` refuses ``1.5`` and ``1.0`` alike), and a
boolean is never a number.
"""

from __future__ import annotations

import json
from typing import Any

from scaleset.embedded.apiserver._errors import ApiError
from scaleset.embedded.apiserver._openapi_builtin import REF_PREFIX, schemas

JsonObj = dict[str, Any]

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_MAX_DEPTH = 64
"""Deeper than any built-in type nests; past it values are left to the later steps."""


class DecodeError(ApiError):
    """A value of the wrong JSON type: the 400 a create or update gets; ``detail`` is what the
    422 of a patch says after the patched object."""

    def __init__(self, kind: str, detail: str) -> None:
        message = f'{kind} in version "v1" cannot be handled as a {kind}: {detail}'
        super().__init__(400, "BadRequest", message)
        self.detail = detail


def check_types(kind: str, definition: str, obj: JsonObj, fields: tuple[str, ...]) -> None:
    """Raise the decode's 400 when a value in ``obj``'s ``fields`` has the wrong JSON type for
    ``definition`` (a name in ``_openapi_builtin.json``)."""
    properties = _resolved(schemas()[definition]).get("properties") or {}
    for field_name in fields:
        if field_name in obj and field_name in properties:
            problem = _problem(obj[field_name], properties[field_name], field_name, 0)
            if problem is not None:
                path, expected, value = problem
                raise DecodeError(kind, f"{path}: expected {expected}, got {_shown(value)}")


def _resolved(schema: JsonObj) -> JsonObj:
    """The schema itself, or the definition its ``$ref`` (or one-element ``allOf``) names."""
    while True:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            schema = schemas()[ref[len(REF_PREFIX) :]]
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            schema = all_of[0]
            continue
        return schema


def _is_quantity(schema: JsonObj) -> bool:
    for step in (schema, *(schema.get("allOf") or [])):
        if isinstance(step, dict) and step.get("$ref") == REF_PREFIX + QUANTITY:
            return True
    return False


def _problem(
    value: object, schema: JsonObj, path: str, depth: int
) -> tuple[str, str, object] | None:
    """(path, expected type, value) of the first value of the wrong type, or None."""
    if value is None or depth > _MAX_DEPTH:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if _is_quantity(schema):
        return None if isinstance(value, str) or number else (path, "quantity", value)
    schema = _resolved(schema)
    if schema.get("format") == "int-or-string":
        ok = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
        return None if ok else (path, "integer or string", value)
    kind = schema.get("type")
    if kind == "string":
        return None if isinstance(value, str) else (path, "string", value)
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else (path, "integer", value)
    if kind == "number":
        return None if number else (path, "number", value)
    if kind == "boolean":
        return None if isinstance(value, bool) else (path, "boolean", value)
    if kind == "array":
        if not isinstance(value, list):
            return (path, "array", value)
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                found = _problem(item, items, f"{path}[{index}]", depth + 1)
                if found is not None:
                    return found
        return None
    if kind == "object":
        if not isinstance(value, dict):
            return (path, "object", value)
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            field_schema = properties.get(key) if isinstance(properties, dict) else None
            if field_schema is None and isinstance(extra, dict):
                field_schema = extra
            if isinstance(field_schema, dict):
                found = _problem(item, field_schema, f"{path}.{key}", depth + 1)
                if found is not None:
                    return found
        return None
    return None


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."
