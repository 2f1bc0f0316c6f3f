"""The OpenAPI v3 discovery kubectl needs before ``apply`` and ``create -f``.

kubectl (≥ 1.27) asks ``/openapi/v3`` whether a resource's PATCH accepts the ``fieldValidation``
query parameter; if it does, kubectl leaves validation to the server instead of downloading the
whole schema. These documents list, per served group/version, each resource's paths with that
parameter (on the operation, where kubectl looks for it) and the
``x-kubernetes-group-version-kind`` of its operations — and no schemas, so
kubectl falls back to its built-in types (or a JSON merge patch for custom resources) when it
computes an apply patch.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

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


def group_version_document(registry: Registry, group: str, version: str) -> JsonObj:
    paths: dict[str, JsonObj] = {}
    for rt in registry.types():
        if rt.group != group or rt.version != version:
            continue
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
        "components": {"schemas": {}},
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
