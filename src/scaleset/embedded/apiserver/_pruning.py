"""Structural-schema pruning: drop every field a CRD's OpenAPI v3 schema does not declare.

Follows ``apiextensions-apiserver/pkg/apiserver/schema/pruning``: ``properties`` keep their
listed keys, ``additionalProperties`` (a schema) applies to every key, ``items`` to every list
element, ``x-kubernetes-preserve-unknown-fields: true`` keeps unknown keys, and
``x-kubernetes-embedded-resource: true`` keeps ``apiVersion``, ``kind`` and ``metadata``. At the
root of a resource ``apiVersion``, ``kind`` and ``metadata`` always stay.
"""

from __future__ import annotations

from typing import Any

JsonObj = dict[str, Any]

_EMBEDDED_KEYS = ("apiVersion", "kind", "metadata")


def prune(obj: JsonObj, schema: JsonObj | None) -> JsonObj:
    """Prune a custom resource in place against its version's ``openAPIV3Schema``."""
    if schema is None:
        return obj
    _prune_value(obj, schema, root=True)
    return obj


def _prune_value(value: Any, schema: JsonObj, *, root: bool = False) -> None:
    if isinstance(value, dict):
        _prune_object(value, schema, root=root)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _prune_value(item, items)


def _prune_object(value: JsonObj, schema: JsonObj, *, root: bool) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    additional = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = schema.get("x-kubernetes-embedded-resource") is True
    for key in list(value):
        if (root or embedded) and key in _EMBEDDED_KEYS:
            sub = properties.get(key)
            if key == "metadata" or not isinstance(sub, dict):
                continue
            _prune_value(value[key], sub)
            continue
        sub = properties.get(key)
        if isinstance(sub, dict):
            _prune_value(value[key], sub)
        elif isinstance(additional, dict):
            _prune_value(value[key], additional)
        elif additional is True or preserve:
            continue
        else:
            del value[key]
