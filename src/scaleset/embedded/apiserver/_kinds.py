"""What a served resource is: its identity (``ResourceType``) and its rules (``Strategy``).

A ``Strategy`` is the embedded counterpart of a registry strategy in kube-apiserver: how a body is
decoded, defaulted and validated on create and update, what the status subresource may change,
whether deletion is graceful. A ``ResourceType`` is one served group/version/resource bound to a
strategy and to a storage bucket (two served versions may share one bucket, as core/v1 and
events.k8s.io/v1 events do).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scaleset.embedded.apiserver import _names
from scaleset.embedded.apiserver._errors import FieldError, bad_request
from scaleset.embedded.apiserver._patch import PatchMeta
from scaleset.embedded.apiserver._store import BucketId

JsonObj = dict[str, Any]
Converter = Callable[[JsonObj], JsonObj]

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


class Strategy:
    """Registry rules for one kind. Subclasses override what differs from the generic store."""

    kind: str = ""
    group: str = ""
    namespaced: bool = True
    has_generation: bool = False
    status_subresource: bool = False
    allow_create_on_update: bool = False
    allow_unconditional_update: bool = True
    return_deleted_object: bool = False
    graceful: bool = False
    # None: strategic merge patch is not supported (415), as for custom resources.
    patch_meta: PatchMeta | None = PatchMeta()
    top_level_fields: frozenset[str] | None = None  # None keeps every top-level field
    validate_object_meta: bool = True  # core/v1 Events skip ObjectMeta validation
    error_group: str | None = None  # group named in 422 messages (None: the served group)
    strict_finalizers: bool = False  # core/v1 and RBAC kinds: finalizers need a '/'
    field_selector_error: str = "known"  # "known" or "unsupported": how a bad field label reads
    # etcd keys: /registry/<plural>/... for built-in kinds, /registry/<group>/<plural>/... for
    # CRDs and custom resources (named in storage errors such as a failed uid precondition)
    storage_key_has_group: bool = False

    def name_rule(self, name: str) -> list[str]:
        return _names.dns1123_subdomain(name)

    def shape(self, obj: JsonObj) -> JsonObj:
        """Drop top-level fields the kind does not have, as a typed decode would."""
        if self.top_level_fields is None:
            return obj
        keep = self.top_level_fields | {"apiVersion", "kind", "metadata"}
        return {k: v for k, v in obj.items() if k in keep}

    def default(self, obj: JsonObj) -> None:
        """Scheme defaulting, applied when a body is decoded (before field ownership is taken)."""

    def prepare_create(self, obj: JsonObj) -> None:
        """Fields the server owns on create, set after field ownership (mutates ``obj``)."""
        if self.status_subresource:
            obj.pop("status", None)

    def validate(self, obj: JsonObj) -> list[FieldError]:
        return []

    def prepare_update(self, new: JsonObj, old: JsonObj) -> None:
        """Main-resource update: a kind with a status subresource keeps its stored status."""
        if self.status_subresource:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        return self.validate(new)

    def prepare_status_update(self, new: JsonObj, old: JsonObj) -> JsonObj:
        """/status write: everything but ``status`` comes from the stored object."""
        result = {k: v for k, v in old.items() if k != "status"}
        if "status" in new:
            result["status"] = new["status"]
        result["metadata"] = dict(old["metadata"])
        return result

    def validate_status_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        return []

    def spec_changed(self, new: JsonObj, old: JsonObj) -> bool:
        """Whether the write moves ``metadata.generation`` (kinds that track it)."""
        ignored = {"metadata", "status"} if self.status_subresource else {"metadata"}
        return {k: v for k, v in new.items() if k not in ignored} != {
            k: v for k, v in old.items() if k not in ignored
        }

    def grace_period(self, obj: JsonObj, requested: int | None) -> int:
        """Graceful kinds only: the grace period a delete gets (0 deletes at once)."""
        return 0


@dataclass(frozen=True)
class ResourceType:
    """One served resource: group/version/plural, bound to a strategy and a storage bucket."""

    group: str
    version: str
    plural: str
    kind: str
    strategy: Strategy
    bucket: BucketId
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    subresources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    field_labels: Mapping[str, str] = field(default_factory=dict)  # selector label -> path
    to_storage: Converter | None = None
    from_storage: Converter | None = None
    list_items_have_kind: bool = False  # unstructured lists (custom resources) carry kind

    storage_version_hash: str = ""

    def storage_key(self, namespace: str, name: str) -> str:
        """The object's etcd key, as kube-apiserver's storage errors print it."""
        parts = [self.group, self.plural] if self.strategy.storage_key_has_group else [self.plural]
        if self.strategy.namespaced:
            parts.append(namespace)
        return "/registry/" + "/".join([*parts, name])

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def namespaced(self) -> bool:
        return self.strategy.namespaced

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def field_label(self, label: str) -> str | None:
        if label in ("metadata.name", "metadata.namespace"):
            return label
        if not self.namespaced and label == "metadata.namespace":
            return label
        return label if label in self.field_labels else None

    def field_values(self, obj: JsonObj) -> dict[str, str]:
        meta = obj.get("metadata", {})
        values = {
            "metadata.name": meta.get("name", ""),
            "metadata.namespace": meta.get("namespace", ""),
        }
        for label, path in self.field_labels.items():
            node: Any = obj
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            values[label] = "" if node is None else str(node)
        return values

    def present(self, stored: JsonObj) -> JsonObj:
        """The stored object as this served version shows it."""
        if self.from_storage is not None:
            return self.from_storage(stored)
        if stored.get("apiVersion") == self.api_version:
            return stored
        return {**stored, "apiVersion": self.api_version}

    def store_form(self, obj: JsonObj, storage_api_version: str) -> JsonObj:
        """A served-version object in its storage form (owned by the caller)."""
        if self.to_storage is not None:
            return self.to_storage(obj)
        obj["apiVersion"] = storage_api_version
        return obj


def expect_object(value: object, what: str) -> JsonObj:
    if not isinstance(value, dict):
        raise bad_request(f"{what}: expected an object")
    return value


def expect_string_map(obj: JsonObj, field_name: str, kind: str) -> None:
    value = obj.get(field_name)
    if value is None:
        return
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal '
            f"{type(value).__name__} into Go struct field {kind}.{field_name} of type "
            "map[string]string"
        )
