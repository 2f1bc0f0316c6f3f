"""Test helpers: ARC's schema facts (tests/fixtures/arc/arc_schema_facts.yaml) as OpenAPI
schemas, hypothesis strategies for objects those schemas accept, and the YAML fixtures."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "arc"
UNKNOWN_KEY_PREFIX = "zz"
"""Unknown fields the strategies add start with this; no field of ours does."""


def fixture_paths() -> list[Path]:
    """The object fixtures (every YAML file but the facts)."""
    return sorted(p for p in FIXTURES.glob("*.yaml") if p.name != "arc_schema_facts.yaml")


def load_fixture(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


@cache
def _facts() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (FIXTURES / "arc_schema_facts.yaml").read_text(encoding="utf-8")
    )
    return data


def _type_schema(expression: str) -> dict[str, Any]:
    words = expression.split()
    head, rest = words[0], words[1:]
    if head == "list":
        return {"type": "array", "items": _type_schema(" ".join(rest))}
    if head == "map":
        return {"type": "object", "additionalProperties": _type_schema(" ".join(rest))}
    if head == "date-time":
        return {"type": "string", "format": "date-time"}
    if head in ("string", "integer", "boolean", "number", "object"):
        node: dict[str, Any] = {"type": head}
        for word in rest:
            if word == "int64":
                node["format"] = "int64"
            elif word.startswith("min="):
                node["minimum"] = int(word.removeprefix("min="))
            else:
                raise ValueError(f"unknown modifier {word!r}")
        return node
    return _named_schema(head)


def _named_schema(name: str) -> dict[str, Any]:
    fields: dict[str, str] = _facts()["types"][name]
    properties: dict[str, Any] = {}
    required: list[str] = []
    for raw_name, expression in fields.items():
        field = raw_name.rstrip("!")
        if raw_name.endswith("!"):
            required.append(field)
        properties[field] = _type_schema(expression)
    node: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        node["required"] = sorted(required)
    return node


def arc_schema(kind: str) -> dict[str, Any]:
    """ARC's openAPIV3Schema for ``kind`` as the facts describe it."""
    parts = _facts()["kinds"][kind]
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _named_schema(parts["spec"]),
            "status": _named_schema(parts["status"]),
        },
    }


def arc_kinds() -> list[str]:
    return list(_facts()["kinds"])


# --- strategies --------------------------------------------------------------------------------

_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_unknown_keys = _names.map(lambda s: UNKNOWN_KEY_PREFIX + s)
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.text(max_size=12)
)
_json = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
_timestamps = st.datetimes(
    min_value=datetime(1, 1, 1),
    max_value=datetime(9999, 12, 31),
).map(lambda d: d.replace(microsecond=0, tzinfo=UTC).isoformat().replace("+00:00", "Z"))


def values_for(schema: dict[str, Any], *, unknown: bool = True) -> st.SearchStrategy[Any]:
    """Values ``schema`` accepts; objects with declared properties get a few unknown fields too
    when ``unknown`` (the API server would prune them; our models must keep them)."""
    kind = schema.get("type")
    if kind == "string":
        return _timestamps if schema.get("format") == "date-time" else st.text(max_size=16)
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum", -(2**63)), max_value=2**63 - 1)
    if kind == "number":
        return st.integers(min_value=-(10**6), max_value=10**6) | st.floats(
            allow_nan=False, allow_infinity=False
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(values_for(schema["items"], unknown=unknown), max_size=3)
    if "additionalProperties" in schema:
        return st.dictionaries(
            st.text(max_size=8),
            values_for(schema["additionalProperties"], unknown=unknown),
            max_size=3,
        )
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return st.dictionaries(st.text(max_size=8), _json, max_size=4)
    required = set(schema.get("required", []))
    fixed = {name: values_for(properties[name], unknown=unknown) for name in required}
    optional = {
        name: values_for(child, unknown=unknown)
        for name, child in properties.items()
        if name not in required
    }
    known = st.fixed_dictionaries(fixed, optional=optional)
    if not unknown:
        return known
    extras = st.dictionaries(_unknown_keys, _json, max_size=2)
    return st.tuples(known, extras).map(lambda pair: {**pair[1], **pair[0]})


def arc_objects(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """Whole objects of ``kind`` that ARC's CRD accepts, with metadata and unknown fields."""
    return objects_for(kind, arc_schema(kind))


def objects_for(kind: str, schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Whole objects of ``kind`` that ``schema`` (an openAPIV3Schema) accepts, with metadata
    and unknown fields."""
    metadata = st.fixed_dictionaries(
        {"name": _names, "namespace": _names},
        optional={
            "labels": st.dictionaries(_names, st.text(max_size=8), max_size=3),
            "annotations": st.dictionaries(_names, st.text(max_size=8), max_size=3),
            "finalizers": st.lists(_names, max_size=2),
            "creationTimestamp": _timestamps,
            "resourceVersion": st.integers(min_value=1).map(str),
            "zzunknownmeta": _json,
        },
    )
    body = st.fixed_dictionaries(
        {"apiVersion": st.just("actions.github.com/v1alpha1"), "kind": st.just(kind)},
        optional={
            "metadata": metadata,
            "spec": values_for(schema["properties"]["spec"]),
            "status": values_for(schema["properties"]["status"]),
        },
    )
    return body
