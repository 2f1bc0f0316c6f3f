"""CustomResourceDefinitions (apiextensions.k8s.io/v1) and the custom resources they define.

``CrdStrategy`` validates and defaults a CRD; ``served_types(crd)`` turns an established CRD into
one :class:`ResourceType` per served version (all sharing one storage bucket), each with a
``CustomResourceStrategy`` that prunes unknown fields against that version's structural schema,
isolates the status subresource and tracks ``metadata.generation``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from scaleset.embedded.apiserver import _names, _pruning, _schema
from scaleset.embedded.apiserver._errors import (
    FieldError,
    bad_request,
    invalid_value,
    not_supported,
    required,
)
from scaleset.embedded.apiserver._kinds import ResourceType, Strategy
from scaleset.embedded.apiserver._patch import PatchMeta

JsonObj = dict[str, Any]

CRD_GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_SCHEMA_TYPES = ["array", "boolean", "integer", "number", "object", "string"]


def _dns1035(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_RE.match(value):
        errs.append(_DNS1035_MSG)
    return errs


CUSTOM_RESOURCE_VERBS = (
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
)


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Discovery's storageVersionHash: the first 8 bytes of sha256("group/version/Kind")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def storage_version(crd: JsonObj) -> str:
    for version in crd.get("spec", {}).get("versions") or []:
        if isinstance(version, dict) and version.get("storage"):
            return str(version.get("name", ""))
    return ""


def _structural_errors(schema: object, path: str, *, root: bool = False) -> list[FieldError]:
    """The structural-schema rules that matter in practice: every node states its type."""
    if not isinstance(schema, dict):
        return [invalid_value(path, schema, "must be an object")]
    errs: list[FieldError] = []
    schema_type = schema.get("type")
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    if schema_type is None:
        if root:
            errs.append(required(f"{path}.type", "must not be empty at the root"))
        elif not int_or_string and not preserve:
            errs.append(required(f"{path}.type", "must not be empty for specified object fields"))
    elif schema_type not in _SCHEMA_TYPES:
        errs.append(not_supported(f"{path}.type", schema_type, _SCHEMA_TYPES))
    elif root and schema_type != "object":
        errs.append(invalid_value(f"{path}.type", schema_type, "must be object at the root"))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if root and name == "metadata":
                continue
            errs.extend(_structural_errors(sub, f"{path}.properties[{name}]"))
    items = schema.get("items")
    if isinstance(items, dict):
        errs.extend(_structural_errors(items, f"{path}.items"))
    elif schema_type == "array" and items is None:
        errs.append(required(f"{path}.items", "must be specified"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        if isinstance(properties, dict) and properties:
            errs.append(
                forbidden_field(
                    f"{path}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        errs.extend(_structural_errors(additional, f"{path}.additionalProperties"))
    return errs


def forbidden_field(path: str, detail: str) -> FieldError:
    return FieldError("Forbidden", path, None, detail)


class CrdStrategy(Strategy):
    kind = "CustomResourceDefinition"
    group = CRD_GROUP
    namespaced = False
    has_generation = True
    status_subresource = True
    top_level_fields = frozenset({"spec", "status"})
    patch_meta = PatchMeta()
    allow_unconditional_update = False
    storage_key_has_group = True

    def prepare_create(self, obj: JsonObj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj.pop("status", None)
            return
        names = spec.get("names")
        if isinstance(names, dict) and isinstance(names.get("kind"), str):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        spec.setdefault("conversion", {"strategy": "None"})
        obj["status"] = {
            "acceptedNames": {"plural": "", "kind": ""},
            "conditions": [],
            "storedVersions": [storage_version(obj)] if storage_version(obj) else [],
        }

    def prepare_update(self, new: JsonObj, old: JsonObj) -> None:
        super().prepare_update(new, old)
        spec = new.get("spec")
        if isinstance(spec, dict):
            names = spec.get("names")
            if isinstance(names, dict) and isinstance(names.get("kind"), str):
                names.setdefault("singular", names["kind"].lower())
                names.setdefault("listKind", names["kind"] + "List")
            spec.setdefault("conversion", {"strategy": "None"})
        version = storage_version(new)
        status = dict(new.get("status") or {})
        stored = list(status.get("storedVersions") or [])
        if version and version not in stored:
            stored.append(version)
            status["storedVersions"] = stored
            new["status"] = status

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [required("spec")]
        group = spec.get("group", "")
        raw_names = spec.get("names")
        names: JsonObj = raw_names if isinstance(raw_names, dict) else {}
        plural = names.get("plural", "")
        name = obj.get("metadata", {}).get("name", "")
        if name != f"{plural}.{group}":
            errs.append(
                invalid_value("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
            )
        if not group:
            errs.append(required("spec.group"))
        else:
            errs.extend(
                invalid_value("spec.group", group, m) for m in _names.dns1123_subdomain(group)
            )
            if "." not in group:
                errs.append(
                    invalid_value("spec.group", group, "should be a domain with at least one dot")
                )
        if not plural:
            errs.append(required("spec.names.plural"))
        elif _dns1035(plural):
            errs.append(invalid_value("spec.names.plural", plural, ",".join(_dns1035(plural))))
        singular = names.get("singular", "")
        if singular and _dns1035(singular):
            errs.append(
                invalid_value("spec.names.singular", singular, ",".join(_dns1035(singular)))
            )
        kind = names.get("kind", "")
        if not kind:
            errs.append(required("spec.names.kind"))
        elif _dns1035(kind.lower()):
            errs.append(invalid_value("spec.names.kind", kind, ",".join(_dns1035(kind.lower()))))
        list_kind = names.get("listKind", "")
        if list_kind and list_kind == kind:
            errs.append(
                invalid_value(
                    "spec.names.listKind", list_kind, "kind and listKind may not be the same"
                )
            )
        scope = spec.get("scope")
        if scope not in ("Namespaced", "Cluster"):
            errs.append(not_supported("spec.scope", scope or "", ["Cluster", "Namespaced"]))
        errs.extend(self._validate_versions(spec.get("versions")))
        return errs

    def _validate_versions(self, versions: object) -> list[FieldError]:
        if not isinstance(versions, list) or not versions:
            return [
                invalid_value(
                    "spec.versions",
                    versions,
                    "must have exactly one version marked as storage version",
                )
            ]
        errs: list[FieldError] = []
        storage = 0
        served = 0
        seen: set[str] = set()
        for i, version in enumerate(versions):
            path = f"spec.versions[{i}]"
            if not isinstance(version, dict):
                errs.append(invalid_value(path, version, "must be an object"))
                continue
            name = version.get("name", "")
            if not name:
                errs.append(required(f"{path}.name"))
            elif _dns1035(name):
                errs.append(invalid_value(f"{path}.name", name, ",".join(_dns1035(name))))
            elif name in seen:
                errs.append(
                    invalid_value("spec.versions", versions, "must contain unique version names")
                )
            seen.add(name)
            storage += 1 if version.get("storage") else 0
            served += 1 if version.get("served") else 0
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            schema_path = f"{path}.schema.openAPIV3Schema"
            if schema is None:
                errs.append(required(schema_path, "schemas are required"))
            else:
                errs.extend(_structural_errors(schema, schema_path, root=True))
        if storage != 1:
            errs.append(
                invalid_value(
                    "spec.versions",
                    versions,
                    "must have exactly one version marked as storage version",
                )
            )
        if served == 0:
            errs.append(
                invalid_value(
                    "spec.versions", versions, "must have at least one version marked as served"
                )
            )
        return errs

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        errs = self.validate(new)
        for field_name in ("group",):
            if new.get("spec", {}).get(field_name) != old.get("spec", {}).get(field_name):
                errs.append(
                    invalid_value(
                        f"spec.{field_name}",
                        new.get("spec", {}).get(field_name),
                        "field is immutable",
                    )
                )
        new_names = new.get("spec", {}).get("names") or {}
        old_names = old.get("spec", {}).get("names") or {}
        if new_names.get("plural") != old_names.get("plural"):
            errs.append(
                invalid_value("spec.names.plural", new_names.get("plural"), "field is immutable")
            )
        if new.get("spec", {}).get("scope") != old.get("spec", {}).get("scope"):
            errs.append(
                invalid_value("spec.scope", new.get("spec", {}).get("scope"), "field is immutable")
            )
        return errs


class CustomResourceStrategy(Strategy):
    """Rules for the instances of one CRD version."""

    has_generation = True
    allow_unconditional_update = False
    storage_key_has_group = True
    patch_meta = None
    field_selector_error = "unsupported"

    def __init__(self, crd: JsonObj, version: JsonObj) -> None:
        spec = crd["spec"]
        self.kind = spec["names"]["kind"]
        self.group = spec["group"]
        self.namespaced = spec.get("scope") == "Namespaced"
        subresources = version.get("subresources") or {}
        self.status_subresource = isinstance(subresources, dict) and "status" in subresources
        self.schema: JsonObj | None = (version.get("schema") or {}).get("openAPIV3Schema")
        self.api_version = f"{self.group}/{version['name']}"

    def shape(self, obj: JsonObj) -> JsonObj:
        kind = obj.get("kind")
        if not kind:
            raise bad_request(
                f'{self.kind} in version "{self.api_version.rpartition("/")[2]}" cannot be '
                f"handled as a {self.kind}: unmarshalerDecoder: Object 'Kind' is missing in "
                f"'{json.dumps(obj, separators=(',', ':'))}'"
            )
        obj = _pruning.prune(obj, self.schema)
        _schema.apply_defaults(obj, self.schema)
        return obj

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        if obj.get("kind") != self.kind:
            errs.append(invalid_value("kind", obj.get("kind"), f"must be {self.kind}"))
        errs.extend(_schema.validate(obj, self.schema))
        return errs

    def validate_status_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        return _schema.validate(new, self.schema)


def served_types(crd: JsonObj) -> list[ResourceType]:
    """One ResourceType per served version of an established CRD."""
    spec = crd["spec"]
    names = spec["names"]
    group = spec["group"]
    bucket = (group, names["plural"])
    types: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served"):
            continue
        strategy = CustomResourceStrategy(crd, version)
        subresources: dict[str, tuple[str, ...]] = {}
        if strategy.status_subresource:
            subresources["status"] = ("get", "patch", "update")
        types.append(
            ResourceType(
                group,
                version["name"],
                names["plural"],
                names["kind"],
                strategy,
                bucket,
                singular=names.get("singular", names["kind"].lower()),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subresources,
                list_items_have_kind=True,
                verbs=CUSTOM_RESOURCE_VERBS,
                storage_version_hash=storage_version_hash(
                    group, storage_version(crd), names["kind"]
                ),
            )
        )
    return types


def crd_type() -> ResourceType:
    return ResourceType(
        CRD_GROUP,
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        CrdStrategy(),
        (CRD_GROUP, "customresourcedefinitions"),
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources={"status": ("get", "patch", "update")},
        storage_version_hash="jfWCUB31mvA=",
    )
