"""The OpenAPI v3 documents kubectl reads: ``/openapi/v3`` and one per served group/version.

Two kubectl features use them:

* ``apply`` / ``create -f`` (kubectl ≥ 1.27) ask whether a resource's PATCH accepts the
  ``fieldValidation`` query parameter; if it does, kubectl leaves validation to the server. Each
  resource's paths carry that parameter on every operation. PATCH operations declare no request
  body media types, so kubectl does not compute strategic merge patches from these schemas; it
  falls back to its built-in types (or a JSON merge patch for custom resources).
* ``explain`` finds the kind from the ``x-kubernetes-group-version-kind`` of a resource's path
  operations, then the schema in ``components.schemas`` carrying the same
  ``x-kubernetes-group-version-kind``, and walks its properties (following ``$ref``, ``allOf``,
  ``items`` and ``additionalProperties``).

Schemas: a custom resource's is its CRD version's ``openAPIV3Schema`` as written, with the
standard ``apiVersion``/``kind`` descriptions where the CRD has none and ``metadata`` pointing at
ObjectMeta (as kube-apiserver publishes CRD schemas), plus its ``<Kind>List``; named
``<reversed group>.<version>.<Kind>``. Documents are built from the registry at request time, so
they follow CRDs as they are created, updated and deleted; the index's ``hash`` changes with the
document, which is what makes kubectl's disk cache refetch. Built-in kinds use the subset in
``_openapi_builtin`` (see its docstring for exactly which types have fields).

``/openapi/v2`` is not served: kubectl requests it only as protobuf, for ``explain
--output=plaintext-openapiv2`` and for servers without v3.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from scaleset.embedded.apiserver import _openapi_builtin
from scaleset.embedded.apiserver._crds import CustomResourceStrategy
from scaleset.embedded.apiserver._kinds import ResourceType
from scaleset.embedded.apiserver._registry import Registry

JsonObj = dict[str, Any]

_QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "pretty")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _operation(rt: ResourceType, action: str) -> JsonObj:
    return {
        "operationId": f"{action}{rt.kind}",
        "parameters": _parameters(_QUERY_PARAMS),
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": rt.group,
            "version": rt.version,
            "kind": rt.kind,
        },
    }


def _parameters(names: tuple[str, ...]) -> list[JsonObj]:
    return [
        {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
        for name in names
    ]


def definition_name(group: str, version: str, kind: str) -> str:
    """kube-apiserver's name for a custom resource's schema: ``com.github.actions.v1alpha1.X``."""
    reversed_group = ".".join(reversed(group.split(".")))
    return f"{reversed_group}.{version}.{kind}"


def _ref(name: str) -> JsonObj:
    return {"$ref": _openapi_builtin.REF_PREFIX + name}


def _gvk(group: str, version: str, kind: str) -> list[JsonObj]:
    return [{"group": group, "kind": kind, "version": version}]


def custom_resource_schemas(
    group: str, version: str, kind: str, plural: str, schema: JsonObj | None
) -> dict[str, JsonObj]:
    """A CRD version's schema and its list's, as kube-apiserver publishes them (new objects)."""
    root: JsonObj = (
        copy.deepcopy(schema)
        if isinstance(schema, dict)
        else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    properties: JsonObj = dict(root.get("properties") or {})
    for field in ("apiVersion", "kind"):
        own = properties.get(field)
        standard = _openapi_builtin.type_meta_field(field)
        if isinstance(own, dict):
            properties[field] = {**standard, **own}
        else:
            properties[field] = standard
    properties["metadata"] = _openapi_builtin.type_meta_field("metadata")
    root["properties"] = properties
    root["x-kubernetes-group-version-kind"] = _gvk(group, version, kind)
    name = definition_name(group, version, kind)
    list_schema: JsonObj = {
        "description": f"{kind}List is a list of {kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": _openapi_builtin.type_meta_field("apiVersion"),
            "items": {
                "description": f"List of {plural}. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "type": "array",
                "items": _ref(name),
            },
            "kind": _openapi_builtin.type_meta_field("kind"),
            "metadata": {
                "allOf": [_ref(_openapi_builtin.LIST_META)],
                "description": "Standard list metadata. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "x-kubernetes-group-version-kind": _gvk(group, version, f"{kind}List"),
    }
    return {name: root, f"{name}List": list_schema}


def _schemas(types: list[ResourceType]) -> JsonObj:
    schemas: JsonObj = {}
    builtin_roots: set[str] = set()
    for rt in types:
        if isinstance(rt.strategy, CustomResourceStrategy):
            schemas.update(
                custom_resource_schemas(
                    rt.group, rt.version, rt.kind, rt.plural, rt.strategy.schema
                )
            )
            builtin_roots.update((_openapi_builtin.OBJECT_META, _openapi_builtin.LIST_META))
            continue
        name = _openapi_builtin.definition_for(rt.group, rt.version, rt.kind)
        if name is not None:
            builtin_roots.add(name)
    return {**_openapi_builtin.closure(builtin_roots), **schemas}


def group_version_document(registry: Registry, group: str, version: str) -> JsonObj:
    paths: dict[str, JsonObj] = {}
    types = [rt for rt in registry.types() if rt.group == group and rt.version == version]
    for rt in types:
        base = f"/{_gv_path(group, version)}"
        scope = (
            f"{base}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else f"{base}/{rt.plural}"
        )
        paths[scope] = {
            "get": _operation(rt, "list"),
            "post": _operation(rt, "post"),
            "parameters": _parameters(_QUERY_PARAMS),
        }
        paths[f"{scope}/{{name}}"] = {
            "get": _operation(rt, "get"),
            "put": _operation(rt, "put"),
            "patch": _operation(rt, "patch"),
            "delete": _operation(rt, "delete"),
            "parameters": _parameters((*_QUERY_PARAMS, "force")),
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.20.2"},
        "paths": paths,
        "components": {"schemas": _schemas(types)},
    }


def root_document(registry: Registry) -> JsonObj:
    gvs = sorted({(rt.group, rt.version) for rt in registry.types()})
    paths: JsonObj = {}
    for group, version in gvs:
        doc = group_version_document(registry, group, version)
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest.upper()}"}
    return {"paths": paths}
