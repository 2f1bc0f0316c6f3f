"""Offline checks of CRD schemas: the structural-schema rules of apiextensions.k8s.io/v1, which
fields a schema declares, and a translation to plain JSON Schema for validator libraries.

The rules checked (Kubernetes docs, "Specifying a structural schema", and the v1 restrictions
enforced since 1.16, i.e. all that kube-apiserver 1.20 enforces):

1. every node — the root, each ``properties`` value, ``items`` and ``additionalProperties`` —
   has a non-empty ``type``, unless it has ``x-kubernetes-int-or-string: true`` or
   ``x-kubernetes-preserve-unknown-fields: true``;
2. inside ``allOf``/``anyOf``/``oneOf``/``not`` there is no ``type``, ``description``,
   ``default``, ``additionalProperties`` or ``nullable``, and every field named there is also
   specified outside them (the int-or-string ``anyOf`` pattern is allowed);
3. ``metadata`` at the root may only restrict ``name`` and ``generateName``;
4. v1 restrictions: no ``$ref``/``definitions``/``dependencies``/``patternProperties``/
   ``additionalItems``/``id``/``$schema``; ``uniqueItems`` not true; ``additionalProperties`` is a
   schema (not a boolean) and not combined with ``properties``; arrays have ``items``;
   ``x-kubernetes-preserve-unknown-fields`` is ``true`` when present; ``x-kubernetes-list-type``
   and ``x-kubernetes-map-type`` have known values;
5. nothing a 1.20 API server rejects: no ``x-kubernetes-validations`` (CEL).

Paths in this module use JSON names, ``.`` between fields and ``[*]`` for array items and map
values, e.g. ``spec.listenerMetrics.counters[*].labels[*]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
FORBIDDEN_KEYWORDS = frozenset(
    {
        "$ref",
        "$schema",
        "id",
        "definitions",
        "dependencies",
        "patternProperties",
        "additionalItems",
        "x-kubernetes-validations",
    }
)
ALLOWED_KEYWORDS = frozenset(
    {
        "description",
        "type",
        "format",
        "title",
        "default",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
        "items",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
        "properties",
        "additionalProperties",
        "nullable",
        "example",
        "externalDocs",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    }
)
FORBIDDEN_IN_JUNCTORS = ("type", "description", "default", "additionalProperties", "nullable")
METADATA_FIELDS_ALLOWED = frozenset({"name", "generateName"})
PRINTER_COLUMN_TYPES = frozenset({"integer", "number", "string", "boolean", "date"})


# --- structural rules --------------------------------------------------------------------------


def structural_problems(schema: Mapping[str, Any]) -> list[str]:
    """Why ``schema`` (an ``openAPIV3Schema``) is not a valid structural v1 schema; empty if it
    is. Each message starts with the path of the offending node."""
    problems = list(_node_problems(schema, "<root>", in_junctor=False))
    if schema.get("type") != "object":
        problems.append("<root>: type must be object")
    metadata = schema.get("properties", {}).get("metadata")
    if isinstance(metadata, Mapping):
        problems.extend(_metadata_problems(metadata))
    return problems


def _node_problems(node: Any, path: str, *, in_junctor: bool) -> Iterator[str]:
    if not isinstance(node, Mapping):
        yield f"{path}: a schema must be an object"
        return
    for keyword in node:
        if keyword in FORBIDDEN_KEYWORDS:
            yield f"{path}: {keyword} is not allowed"
        elif keyword not in ALLOWED_KEYWORDS:
            yield f"{path}: unknown keyword {keyword}"
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if preserve is not None and preserve is not True:
        yield f"{path}: x-kubernetes-preserve-unknown-fields must be true when set"
    node_type = node.get("type")
    if in_junctor:
        for keyword in FORBIDDEN_IN_JUNCTORS:
            if keyword in node:
                yield f"{path}: {keyword} is not allowed inside allOf/anyOf/oneOf/not"
    elif not node_type and not int_or_string and preserve is not True:
        yield f"{path}: type is required (or x-kubernetes-int-or-string / preserve-unknown-fields)"
    if node_type and node_type not in TYPES:
        yield f"{path}: unknown type {node_type!r}"
    if int_or_string and node_type:
        yield f"{path}: x-kubernetes-int-or-string excludes type"
    if node.get("uniqueItems") is True:
        yield f"{path}: uniqueItems true is not allowed"
    yield from _shape_problems(node, path, node_type, in_junctor=in_junctor)
    yield from _extension_problems(node, path, node_type)
    yield from _junctor_problems(node, path, int_or_string=int_or_string)


def _shape_problems(
    node: Mapping[str, Any], path: str, node_type: Any, *, in_junctor: bool
) -> Iterator[str]:
    properties = node.get("properties")
    additional = node.get("additionalProperties")
    if properties is not None:
        if not isinstance(properties, Mapping):
            yield f"{path}: properties must be an object"
        else:
            for name, child in properties.items():
                yield from _node_problems(child, f"{path}.{name}", in_junctor=in_junctor)
        if additional is not None:
            yield f"{path}: properties and additionalProperties are mutually exclusive"
    if additional is not None:
        if isinstance(additional, bool):
            yield f"{path}: additionalProperties must be a schema, not a boolean"
        else:
            yield from _node_problems(additional, f"{path}[*]", in_junctor=in_junctor)
    items = node.get("items")
    if items is not None:
        if isinstance(items, list):
            yield f"{path}: items must be a single schema"
        else:
            yield from _node_problems(items, f"{path}[*]", in_junctor=in_junctor)
    elif node_type == "array" and not in_junctor:
        yield f"{path}: an array needs items"
    required = node.get("required")
    if required is not None and (
        not isinstance(required, list) or not all(isinstance(r, str) for r in required)
    ):
        yield f"{path}: required must be a list of field names"
    if "default" in node and not _value_matches_type(node["default"], node_type):
        yield f"{path}: default does not match type {node_type!r}"


def _extension_problems(node: Mapping[str, Any], path: str, node_type: Any) -> Iterator[str]:
    list_type = node.get("x-kubernetes-list-type")
    if list_type is not None:
        if list_type not in ("atomic", "set", "map"):
            yield f"{path}: unknown x-kubernetes-list-type {list_type!r}"
        if node_type != "array":
            yield f"{path}: x-kubernetes-list-type needs type array"
        if list_type == "map" and not node.get("x-kubernetes-list-map-keys"):
            yield f"{path}: x-kubernetes-list-type map needs x-kubernetes-list-map-keys"
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None:
        if map_type not in ("atomic", "granular"):
            yield f"{path}: unknown x-kubernetes-map-type {map_type!r}"
        if node_type != "object":
            yield f"{path}: x-kubernetes-map-type needs type object"
    if node.get("x-kubernetes-embedded-resource") is True and node_type != "object":
        yield f"{path}: x-kubernetes-embedded-resource needs type object"


def _junctor_problems(node: Mapping[str, Any], path: str, *, int_or_string: bool) -> Iterator[str]:
    outside = node.get("properties") if isinstance(node.get("properties"), Mapping) else {}
    for junctor in JUNCTORS:
        if junctor not in node:
            continue
        branches = node[junctor] if junctor != "not" else [node[junctor]]
        if not isinstance(branches, list):
            yield f"{path}: {junctor} must be a list"
            continue
        for index, branch in enumerate(branches):
            branch_path = f"{path}.{junctor}[{index}]"
            if int_or_string and junctor in ("anyOf", "allOf") and _is_int_or_string_branch(branch):
                continue
            yield from _node_problems(branch, branch_path, in_junctor=True)
            if isinstance(branch, Mapping):
                for name in branch.get("properties", {}) or {}:
                    if name not in (outside or {}):
                        yield f"{branch_path}: field {name} must also be specified outside"


def _is_int_or_string_branch(branch: Any) -> bool:
    if not isinstance(branch, Mapping):
        return False
    if set(branch) == {"type"} and branch["type"] in ("integer", "string"):
        return True
    return isinstance(branch.get("anyOf"), list) and all(
        isinstance(b, Mapping) and set(b) == {"type"} for b in branch["anyOf"]
    )


def _metadata_problems(metadata: Mapping[str, Any]) -> Iterator[str]:
    for keyword in metadata:
        if keyword not in ("type", "description", "properties"):
            yield f"<root>.metadata: only name and generateName may be restricted ({keyword})"
    properties = metadata.get("properties", {})
    for name in properties if isinstance(properties, Mapping) else {}:
        if name not in METADATA_FIELDS_ALLOWED:
            yield f"<root>.metadata.{name}: only name and generateName may be restricted"


def _value_matches_type(value: Any, node_type: Any) -> bool:
    checks: dict[str, Any] = {
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "object": lambda v: isinstance(v, Mapping),
        "array": lambda v: isinstance(v, list),
    }
    check = checks.get(node_type)
    return True if check is None else bool(check(value))


def crd_problems(crd: Mapping[str, Any]) -> list[str]:
    """``structural_problems`` of every version plus the CRD-level rules we rely on: v1, name =
    ``<plural>.<group>``, exactly one storage version, printer columns with known types whose
    ``jsonPath`` points at a declared field (or ``metadata``)."""
    problems: list[str] = []
    if crd.get("apiVersion") != "apiextensions.k8s.io/v1":
        problems.append("apiVersion must be apiextensions.k8s.io/v1")
    if crd.get("kind") != "CustomResourceDefinition":
        problems.append("kind must be CustomResourceDefinition")
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    expected_name = f"{names.get('plural')}.{spec.get('group')}"
    if crd.get("metadata", {}).get("name") != expected_name:
        problems.append(f"metadata.name must be {expected_name}")
    if spec.get("preserveUnknownFields") is True:
        problems.append("spec.preserveUnknownFields must be false in v1")
    versions = spec.get("versions", [])
    if sum(1 for v in versions if v.get("storage")) != 1:
        problems.append("exactly one version must be the storage version")
    for version in versions:
        label = f"versions[{version.get('name')}]"
        schema = version.get("schema", {}).get("openAPIV3Schema")
        if not isinstance(schema, Mapping):
            problems.append(f"{label}: no openAPIV3Schema")
            continue
        problems.extend(f"{label}: {p}" for p in structural_problems(schema))
        for column in version.get("additionalPrinterColumns", []):
            problems.extend(f"{label}: {p}" for p in _column_problems(column, schema))
    return problems


def _column_problems(column: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    name = column.get("name")
    if column.get("type") not in PRINTER_COLUMN_TYPES:
        yield f"printer column {name!r}: unknown type {column.get('type')!r}"
    json_path = column.get("jsonPath", "")
    if not isinstance(json_path, str) or not json_path.startswith("."):
        yield f"printer column {name!r}: jsonPath must start with '.'"
        return
    path = json_path[1:]
    if path.startswith("metadata."):
        return
    if not is_declared(schema, path):
        yield f"printer column {name!r}: {json_path} is not declared in the schema"


# --- declared fields ---------------------------------------------------------------------------

_SEGMENT = re.compile(r"\[[^\]]*\]|[^.\[\]]+")


def _segments(path: str) -> list[str]:
    return _SEGMENT.findall(path)


def is_declared(schema: Mapping[str, Any], path: str) -> bool:
    """Whether the API server keeps the field at ``path`` (not pruned): it is named in
    ``properties`` all the way down, or an ancestor preserves unknown fields."""
    node: Any = schema
    for segment in _segments(path):
        if not isinstance(node, Mapping):
            return False
        if node.get("x-kubernetes-preserve-unknown-fields") is True and not node.get("properties"):
            return True
        if segment.startswith("["):
            node = node.get("items", node.get("additionalProperties"))
        else:
            properties = node.get("properties", {})
            if segment not in properties:
                return node.get("x-kubernetes-preserve-unknown-fields") is True
            node = properties[segment]
    return isinstance(node, Mapping)


def declared_leaf_paths(schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Every leaf field ``schema`` declares: scalars, and objects whose content is opaque."""
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        paths: list[str] = []
        for name, child in properties.items():
            if path == "" and name == "metadata":
                continue
            paths.extend(declared_leaf_paths(child, f"{path}.{name}" if path else name))
        return paths
    for keyword in ("items", "additionalProperties"):
        child = schema.get(keyword)
        if isinstance(child, Mapping):
            return declared_leaf_paths(child, f"{path}[*]")
    return [path]


# --- superset ----------------------------------------------------------------------------------


def superset_problems(
    ours: Mapping[str, Any], theirs: Mapping[str, Any], path: str = "<root>"
) -> list[str]:
    """Where schema ``ours`` could reject or prune a value that schema ``theirs`` accepts and
    keeps; empty means ``ours`` accepts (and keeps) everything ``theirs`` does. Conservative: it
    compares structure (types, required, minimum, format, uniqueness, declared fields), not
    arbitrary keyword combinations (``theirs`` using ``pattern``, ``enum`` … only narrows it)."""
    problems: list[str] = []
    ours_preserve = ours.get("x-kubernetes-preserve-unknown-fields") is True
    if ours_preserve and not ours.get("properties") and not ours.get("additionalProperties"):
        if ours.get("type") not in (None, theirs.get("type")):
            problems.append(f"{path}: type {ours.get('type')} vs {theirs.get('type')}")
        return problems
    if theirs.get("x-kubernetes-int-or-string") is True:
        if ours.get("x-kubernetes-int-or-string") is not True:
            problems.append(f"{path}: theirs is int-or-string, ours is not")
        return problems
    ours_type, their_type = ours.get("type"), theirs.get("type")
    if ours_type != their_type and not (ours_type == "number" and their_type == "integer"):
        problems.append(f"{path}: type {ours_type} vs {their_type}")
        return problems
    missing = set(ours.get("required", [])) - set(theirs.get("required", []))
    if missing:
        problems.append(f"{path}: requires {sorted(missing)} which theirs does not")
    if "minimum" in ours and ours["minimum"] > theirs.get("minimum", float("-inf")):
        problems.append(f"{path}: minimum {ours['minimum']} vs {theirs.get('minimum')}")
    if "format" in ours and ours["format"] != theirs.get("format"):
        problems.append(f"{path}: format {ours['format']} vs {theirs.get('format')}")
    for keyword in ("maximum", "maxLength", "minLength", "pattern", "enum", "maxItems"):
        if keyword in ours and ours[keyword] != theirs.get(keyword):
            problems.append(f"{path}: {keyword} differs")
    if ours.get("x-kubernetes-list-type") in ("set", "map") and ours.get(
        "x-kubernetes-list-type"
    ) != theirs.get("x-kubernetes-list-type"):
        problems.append(f"{path}: list uniqueness only in ours")
    if theirs.get("x-kubernetes-preserve-unknown-fields") is True and not ours_preserve:
        problems.append(f"{path}: theirs keeps unknown fields, ours prunes them")
    our_properties = ours.get("properties", {})
    for name, their_child in theirs.get("properties", {}).items():
        if name not in our_properties:
            if not ours_preserve:
                problems.append(f"{path}.{name}: not declared in ours (would be pruned)")
            continue
        problems.extend(superset_problems(our_properties[name], their_child, f"{path}.{name}"))
    for keyword in ("items", "additionalProperties"):
        their_child = theirs.get(keyword)
        if isinstance(their_child, Mapping):
            our_child = ours.get(keyword)
            if not isinstance(our_child, Mapping):
                problems.append(f"{path}: {keyword} not declared in ours")
            else:
                problems.extend(superset_problems(our_child, their_child, f"{path}[*]"))
    return problems


# --- JSON Schema -------------------------------------------------------------------------------


def openapi_to_jsonschema(schema: Mapping[str, Any], *, reject_unknown: bool = False) -> Any:
    """Translate an ``openAPIV3Schema`` into draft-4 JSON Schema for a validator library.

    ``x-kubernetes-int-or-string`` becomes ``integer`` or ``string``; ``nullable`` adds
    ``null``; other ``x-kubernetes-*`` keywords are dropped (they do not restrict values).
    With ``reject_unknown``, objects with declared ``properties`` that do not preserve unknown
    fields get ``additionalProperties: false``, so the validator reports every field the API
    server would prune.
    """
    result: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword.startswith("x-kubernetes-") or keyword in ("nullable", "format"):
            continue
        if keyword == "properties":
            result[keyword] = {
                name: openapi_to_jsonschema(child, reject_unknown=reject_unknown)
                for name, child in value.items()
            }
        elif keyword in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            result[keyword] = openapi_to_jsonschema(value, reject_unknown=reject_unknown)
        elif keyword in ("allOf", "anyOf", "oneOf"):
            result[keyword] = [
                openapi_to_jsonschema(branch, reject_unknown=reject_unknown) for branch in value
            ]
        else:
            result[keyword] = value
    if schema.get("x-kubernetes-int-or-string") is True:
        result["type"] = ["integer", "string"]
    if schema.get("nullable") is True and "type" in result:
        types = result["type"] if isinstance(result["type"], list) else [result["type"]]
        result["type"] = [*types, "null"]
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    if reject_unknown and "properties" in schema and not preserve:
        result["additionalProperties"] = False
    return result
