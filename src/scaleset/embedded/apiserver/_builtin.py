"""The built-in kinds the embedded server serves, with their registry rules.

namespaces, pods, secrets, configmaps, serviceaccounts, events (core/v1 and events.k8s.io/v1),
roles and rolebindings (rbac.authorization.k8s.io/v1), leases (coordination.k8s.io/v1). The
CustomResourceDefinition kind lives in ``_crds``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from scaleset.embedded.apiserver import _events, _names
from scaleset.embedded.apiserver._errors import (
    FieldError,
    bad_request,
    forbidden,
    invalid_value,
    not_supported,
    required,
    too_long,
)
from scaleset.embedded.apiserver._kinds import ResourceType, Strategy, expect_string_map
from scaleset.embedded.apiserver._patch import PatchMeta
from scaleset.embedded.apiserver._pods import METADATA_PATCH_META, POD_FIELD_LABELS, PodStrategy

JsonObj = dict[str, Any]

DATA_SIZE_LIMIT = 1024 * 1024
RBAC_GROUP = "rbac.authorization.k8s.io"
_PLAIN_META = PatchMeta(fields={"metadata": METADATA_PATCH_META})


class NamespaceStrategy(Strategy):
    kind = "Namespace"
    strict_finalizers = True
    field_selector_error = "unsupported"
    namespaced = False
    status_subresource = True
    top_level_fields = frozenset({"spec", "status"})
    patch_meta = _PLAIN_META

    def name_rule(self, name: str) -> list[str]:
        return _names.dns1123_label(name)

    def default(self, obj: JsonObj) -> None:
        obj["status"] = {"phase": "Active"}

    def prepare_create(self, obj: JsonObj) -> None:
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        finalizers = list(spec.get("finalizers") or [])
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
        spec["finalizers"] = finalizers
        obj["spec"] = spec

    def prepare_update(self, new: JsonObj, old: JsonObj) -> None:
        new["spec"] = old.get("spec", {})
        new["status"] = old.get("status", {})

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, fin in enumerate((obj.get("spec") or {}).get("finalizers") or []):
            if "/" not in fin and fin != "kubernetes":
                errs.append(
                    invalid_value(
                        f"spec.finalizers[{i}]",
                        fin,
                        "name is neither a standard finalizer name nor is it fully qualified",
                    )
                )
        return errs

    def prepare_status_update(self, new: JsonObj, old: JsonObj) -> JsonObj:
        """namespaces/status: the spec stays; metadata changes go through, as for pods."""
        return {**new, "spec": old.get("spec", {})}


def _decode_base64(value: object, path: str) -> bytes:
    if not isinstance(value, str):
        raise bad_request(f"{path}: expected a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"illegal base64 data in {path}: {exc}") from None


class SecretStrategy(Strategy):
    kind = "Secret"
    strict_finalizers = True
    field_selector_error = "unsupported"
    top_level_fields = frozenset({"data", "stringData", "type", "immutable"})
    patch_meta = _PLAIN_META

    def shape(self, obj: JsonObj) -> JsonObj:
        obj = super().shape(obj)
        for field_name in ("data", "stringData"):
            expect_string_map(obj, field_name, "Secret")
        for key, value in (obj.get("data") or {}).items():
            _decode_base64(value, f"data[{key}]")
        return obj

    def _fold_string_data(self, obj: JsonObj) -> None:
        string_data = obj.pop("stringData", None)
        if string_data:
            data = dict(obj.get("data") or {})
            for key, value in string_data.items():
                data[key] = base64.b64encode(value.encode()).decode()
            obj["data"] = data
        if not obj.get("data"):
            obj.pop("data", None)

    def prepare_create(self, obj: JsonObj) -> None:
        self._fold_string_data(obj)
        if not obj.get("type"):
            obj["type"] = "Opaque"

    def prepare_update(self, new: JsonObj, old: JsonObj) -> None:
        self._fold_string_data(new)
        if not new.get("type"):
            new["type"] = old.get("type", "Opaque")

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        total = 0
        for key, value in (obj.get("data") or {}).items():
            errs.extend(invalid_value(f"data[{key}]", key, m) for m in _names.config_key(key))
            total += len(base64.b64decode(value))
        if total > DATA_SIZE_LIMIT:
            errs.append(too_long("data", DATA_SIZE_LIMIT))
        secret_type = obj.get("type")
        data = obj.get("data") or {}
        if (
            secret_type == "kubernetes.io/dockerconfigjson"  # noqa: S105
            and ".dockerconfigjson" not in data
        ):
            errs.append(required("data[.dockerconfigjson]"))
        if secret_type == "kubernetes.io/tls":  # noqa: S105
            errs.extend(required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data)
        if secret_type == "kubernetes.io/service-account-token" and not (  # noqa: S105
            obj.get("metadata", {}).get("annotations") or {}
        ).get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
        return errs

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        if new.get("type") != old.get("type"):
            errs.append(invalid_value("type", new.get("type"), "field is immutable"))
        if old.get("immutable"):
            if not new.get("immutable"):
                errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
            if new.get("data") != old.get("data"):
                errs.append(forbidden("data", "field is immutable when `immutable` is set"))
        return errs + self.validate(new)


class ConfigMapStrategy(Strategy):
    kind = "ConfigMap"
    strict_finalizers = True
    top_level_fields = frozenset({"data", "binaryData", "immutable"})
    patch_meta = _PLAIN_META

    def shape(self, obj: JsonObj) -> JsonObj:
        obj = super().shape(obj)
        for field_name in ("data", "binaryData"):
            expect_string_map(obj, field_name, "ConfigMap")
        for key, value in (obj.get("binaryData") or {}).items():
            _decode_base64(value, f"binaryData[{key}]")
        for field_name in ("data", "binaryData"):
            if field_name in obj and not obj[field_name]:
                del obj[field_name]
        return obj

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        total = 0
        data = obj.get("data") or {}
        binary = obj.get("binaryData") or {}
        for key, value in data.items():
            errs.extend(invalid_value(f"data[{key}]", key, m) for m in _names.config_key(key))
            total += len(value)
        for key, value in binary.items():
            errs.extend(invalid_value(f"binaryData[{key}]", key, m) for m in _names.config_key(key))
            if key in data:
                errs.append(
                    invalid_value(f"binaryData[{key}]", key, "duplicate of key present in data")
                )
            total += len(base64.b64decode(value))
        if total > DATA_SIZE_LIMIT:
            errs.append(too_long("[]", DATA_SIZE_LIMIT))
        return errs

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        errs = self.validate(new)
        if old.get("immutable"):
            if not new.get("immutable"):
                errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
            for field_name in ("data", "binaryData"):
                if new.get(field_name) != old.get(field_name):
                    errs.append(forbidden(field_name, "field is immutable when `immutable` is set"))
        return errs


class ServiceAccountStrategy(Strategy):
    kind = "ServiceAccount"
    strict_finalizers = True
    return_deleted_object = True
    top_level_fields = frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"})
    patch_meta = PatchMeta(
        fields={"metadata": METADATA_PATCH_META, "secrets": PatchMeta(merge_key="name")}
    )


def _validate_rule(rule: object, path: str, namespaced: bool) -> list[FieldError]:
    if not isinstance(rule, dict):
        return [invalid_value(path, rule, "must be an object")]
    errs: list[FieldError] = []
    if not rule.get("verbs"):
        errs.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    if rule.get("nonResourceURLs"):
        if namespaced:
            errs.append(
                invalid_value(
                    f"{path}.nonResourceURLs",
                    rule["nonResourceURLs"],
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        return errs
    if not rule.get("apiGroups"):
        errs.append(
            required(f"{path}.apiGroups", "resource rules must supply at least one api group")
        )
    if not rule.get("resources"):
        errs.append(
            required(f"{path}.resources", "resource rules must supply at least one resource")
        )
    return errs


class RoleStrategy(Strategy):
    kind = "Role"
    strict_finalizers = True
    group = RBAC_GROUP
    allow_create_on_update = True
    top_level_fields = frozenset({"rules"})
    patch_meta = _PLAIN_META

    def name_rule(self, name: str) -> list[str]:
        return _names.path_segment(name)

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, rule in enumerate(obj.get("rules") or []):
            errs.extend(_validate_rule(rule, f"rules[{i}]", namespaced=True))
        return errs


class RoleBindingStrategy(Strategy):
    kind = "RoleBinding"
    strict_finalizers = True
    group = RBAC_GROUP
    allow_create_on_update = True
    top_level_fields = frozenset({"subjects", "roleRef"})
    patch_meta = _PLAIN_META

    def name_rule(self, name: str) -> list[str]:
        return _names.path_segment(name)

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        ref = obj.get("roleRef") or {}
        if not isinstance(ref, dict):
            ref = {}
        if ref.get("apiGroup") and ref.get("apiGroup") != RBAC_GROUP:
            errs.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), [RBAC_GROUP]))
        if ref.get("kind") not in ("Role", "ClusterRole"):
            errs.append(not_supported("roleRef.kind", ref.get("kind", ""), ["Role", "ClusterRole"]))
        if not ref.get("name"):
            errs.append(required("roleRef.name"))
        else:
            errs.extend(
                invalid_value("roleRef.name", ref["name"], m)
                for m in _names.path_segment(ref["name"])
            )
        for i, subject in enumerate(obj.get("subjects") or []):
            errs.extend(_validate_subject(subject, f"subjects[{i}]"))
        return errs

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        errs = self.validate(new)
        if new.get("roleRef") != old.get("roleRef"):
            errs.append(invalid_value("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return errs


def _validate_subject(subject: object, path: str) -> list[FieldError]:
    if not isinstance(subject, dict):
        return [invalid_value(path, subject, "must be an object")]
    errs: list[FieldError] = []
    if not subject.get("name"):
        errs.append(required(f"{path}.name"))
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        if subject.get("apiGroup"):
            errs.append(not_supported(f"{path}.apiGroup", subject["apiGroup"], [""]))
    elif kind in ("User", "Group"):
        if subject.get("apiGroup") != RBAC_GROUP:
            errs.append(
                not_supported(f"{path}.apiGroup", subject.get("apiGroup", ""), [RBAC_GROUP])
            )
    else:
        errs.append(not_supported(f"{path}.kind", kind or "", ["ServiceAccount", "User", "Group"]))
    return errs


class LeaseStrategy(Strategy):
    kind = "Lease"
    group = "coordination.k8s.io"
    allow_create_on_update = True
    allow_unconditional_update = False  # a PUT must carry the resourceVersion it read
    top_level_fields = frozenset({"spec"})
    patch_meta = _PLAIN_META

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        spec = obj.get("spec") or {}
        if not isinstance(spec, dict):
            return [invalid_value("spec", spec, "must be an object")]
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and (not isinstance(duration, int) or duration <= 0):
            errs.append(
                invalid_value("spec.leaseDurationSeconds", duration, "must be greater than 0")
            )
        transitions = spec.get("leaseTransitions")
        if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
            errs.append(
                invalid_value(
                    "spec.leaseTransitions", transitions, "must to greater or equal than 0"
                )
            )
        return errs

    def shape(self, obj: JsonObj) -> JsonObj:
        """MicroTime fields that do not parse are a decode error (400), as in the real server."""
        obj = super().shape(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            for field_name in ("acquireTime", "renewTime"):
                value = spec.get(field_name)
                if value is not None and not _is_time(value):
                    raise bad_request(
                        'Lease in version "v1" cannot be handled as a Lease: v1.Lease.Spec: '
                        f"v1.LeaseSpec.{field_name[0].upper()}{field_name[1:]}: parsing time "
                        f"{json.dumps(value)} as RFC 3339"
                    )
        return obj


_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _is_time(value: object) -> bool:
    return isinstance(value, str) and _TIME_RE.match(value) is not None


def builtin_types() -> list[ResourceType]:
    """Every built-in served resource, in discovery order."""
    pods = PodStrategy()
    core_events = _events.CoreEventStrategy()
    v1_events = _events.EventsV1Strategy()
    return [
        ResourceType(
            "",
            "v1",
            "namespaces",
            "Namespace",
            NamespaceStrategy(),
            ("", "namespaces"),
            singular="",
            short_names=("ns",),
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            subresources={"status": ("get", "patch", "update"), "finalize": ("update",)},
            field_labels={"status.phase": "status.phase"},
            storage_version_hash="Q3oi5N2YM8M=",
        ),
        ResourceType(
            "",
            "v1",
            "pods",
            "Pod",
            pods,
            ("", "pods"),
            short_names=("po",),
            categories=("all",),
            subresources={"status": ("get", "patch", "update"), "binding": ("create",)},
            field_labels=POD_FIELD_LABELS,
            storage_version_hash="xPOwRZ+Yhw8=",
        ),
        ResourceType(
            "",
            "v1",
            "secrets",
            "Secret",
            SecretStrategy(),
            ("", "secrets"),
            field_labels={"type": "type"},
            storage_version_hash="S6u1pOWzb84=",
        ),
        ResourceType(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            ConfigMapStrategy(),
            ("", "configmaps"),
            short_names=("cm",),
            storage_version_hash="qFsyl6wFWjQ=",
        ),
        ResourceType(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            ServiceAccountStrategy(),
            ("", "serviceaccounts"),
            short_names=("sa",),
            storage_version_hash="pbx9ZvyFpBE=",
        ),
        ResourceType(
            "",
            "v1",
            "events",
            "Event",
            core_events,
            ("", "events"),
            short_names=("ev",),
            field_labels=_events.CORE_FIELD_LABELS,
            storage_version_hash="r2yiGXH7wu8=",
        ),
        ResourceType(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            v1_events,
            ("", "events"),
            short_names=("ev",),
            field_labels=_events.EVENTS_V1_FIELD_LABELS,
            to_storage=_events.to_core,
            from_storage=_events.from_core,
            storage_version_hash="r2yiGXH7wu8=",
        ),
        ResourceType(
            RBAC_GROUP,
            "v1",
            "roles",
            "Role",
            RoleStrategy(),
            (RBAC_GROUP, "roles"),
            storage_version_hash="7FuwZcIIItM=",
        ),
        ResourceType(
            RBAC_GROUP,
            "v1",
            "rolebindings",
            "RoleBinding",
            RoleBindingStrategy(),
            (RBAC_GROUP, "rolebindings"),
            storage_version_hash="eGsCzGH6b1g=",
        ),
        ResourceType(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            LeaseStrategy(),
            ("coordination.k8s.io", "leases"),
            storage_version_hash="/sY7hl8ol1U=",
        ),
    ]
