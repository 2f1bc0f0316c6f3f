"""Decoding of Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``).

kubectl's typed generators (``kubectl create namespace|configmap|secret|serviceaccount|role|
rolebinding``) send their object as protobuf: the ``k8s\\0`` magic, then a ``runtime.Unknown``
envelope whose ``raw`` field holds the object. This module turns such a body into the JSON
object the rest of the server works with, for the kinds the embedded server serves that kubectl
creates this way. Field numbers come from the ``generated.proto`` files of k8s.io/api.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scaleset.embedded.apiserver._errors import ApiError, bad_request

JsonObj = dict[str, Any]
MAGIC = b"k8s\x00"


@dataclass(frozen=True)
class F:
    """One protobuf field: its JSON name and how to read it."""

    name: str
    kind: str  # string, bytes, bool, int, message, map, map_bytes, time
    message: str = ""
    repeated: bool = False


_TIME = "time"
SCHEMAS: Mapping[str, Mapping[int, F]] = {
    "TypeMeta": {1: F("apiVersion", "string"), 2: F("kind", "string")},
    "Unknown": {
        1: F("typeMeta", "message", "TypeMeta"),
        2: F("raw", "bytes"),
        3: F("contentEncoding", "string"),
        4: F("contentType", "string"),
    },
    "ObjectMeta": {
        1: F("name", "string"),
        2: F("generateName", "string"),
        3: F("namespace", "string"),
        4: F("selfLink", "string"),
        5: F("uid", "string"),
        6: F("resourceVersion", "string"),
        7: F("generation", "int"),
        8: F("creationTimestamp", _TIME),
        9: F("deletionTimestamp", _TIME),
        10: F("deletionGracePeriodSeconds", "int"),
        11: F("labels", "map"),
        12: F("annotations", "map"),
        13: F("ownerReferences", "message", "OwnerReference", repeated=True),
        14: F("finalizers", "string", repeated=True),
        15: F("clusterName", "string"),
    },
    "OwnerReference": {
        1: F("kind", "string"),
        3: F("name", "string"),
        4: F("uid", "string"),
        5: F("apiVersion", "string"),
        6: F("controller", "bool"),
        7: F("blockOwnerDeletion", "bool"),
    },
    "ConfigMap": {
        1: F("metadata", "message", "ObjectMeta"),
        2: F("data", "map"),
        3: F("binaryData", "map_bytes"),
        4: F("immutable", "bool"),
    },
    "Secret": {
        1: F("metadata", "message", "ObjectMeta"),
        2: F("data", "map_bytes"),
        3: F("type", "string"),
        4: F("stringData", "map"),
        5: F("immutable", "bool"),
    },
    "Namespace": {
        1: F("metadata", "message", "ObjectMeta"),
        2: F("spec", "message", "NamespaceSpec"),
    },
    "NamespaceSpec": {1: F("finalizers", "string", repeated=True)},
    "ServiceAccount": {
        1: F("metadata", "message", "ObjectMeta"),
        2: F("secrets", "message", "ObjectReference", repeated=True),
        3: F("imagePullSecrets", "message", "LocalObjectReference", repeated=True),
        4: F("automountServiceAccountToken", "bool"),
    },
    "ObjectReference": {
        1: F("kind", "string"),
        2: F("namespace", "string"),
        3: F("name", "string"),
        4: F("uid", "string"),
        5: F("apiVersion", "string"),
        6: F("resourceVersion", "string"),
        7: F("fieldPath", "string"),
    },
    "LocalObjectReference": {1: F("name", "string")},
    "Role": {
        1: F("metadata", "message", "ObjectMeta"),
        2: F("rules", "message", "PolicyRule", repeated=True),
    },
    "PolicyRule": {
        1: F("verbs", "string", repeated=True),
        2: F("apiGroups", "string", repeated=True),
        3: F("resources", "string", repeated=True),
        4: F("resourceNames", "string", repeated=True),
        5: F("nonResourceURLs", "string", repeated=True),
    },
    "RoleBinding": {
        1: F("metadata", "message", "ObjectMeta"),
        2: F("subjects", "message", "Subject", repeated=True),
        3: F("roleRef", "message", "RoleRef"),
    },
    "Subject": {
        1: F("kind", "string"),
        2: F("apiGroup", "string"),
        3: F("name", "string"),
        4: F("namespace", "string"),
    },
    "RoleRef": {1: F("apiGroup", "string"), 2: F("kind", "string"), 3: F("name", "string")},
    "Lease": {
        1: F("metadata", "message", "ObjectMeta"),
        2: F("spec", "message", "LeaseSpec"),
    },
    "LeaseSpec": {
        1: F("holderIdentity", "string"),
        2: F("leaseDurationSeconds", "int"),
        3: F("acquireTime", _TIME),
        4: F("renewTime", _TIME),
        5: F("leaseTransitions", "int"),
    },
    "Time": {1: F("seconds", "int"), 2: F("nanos", "int")},
    "MapEntry": {1: F("key", "string"), 2: F("value", "string")},
    "MapEntryBytes": {1: F("key", "string"), 2: F("value", "bytes")},
}


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def varint(self) -> int:
        shift = 0
        result = 0
        while True:
            if self.pos >= len(self.data):
                raise ValueError("truncated varint")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def chunk(self) -> bytes:
        length = self.varint()
        end = self.pos + length
        if end > len(self.data):
            raise ValueError("truncated field")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def skip(self, wire: int) -> None:
        if wire == 0:
            self.varint()
        elif wire == 1:
            self.pos += 8
        elif wire == 2:
            self.chunk()
        elif wire == 5:
            self.pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _time(raw: JsonObj) -> str:
    moment = datetime.fromtimestamp(int(raw.get("seconds", 0)), UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def decode_message(data: bytes, schema_name: str) -> JsonObj:
    schema = SCHEMAS[schema_name]
    reader = _Reader(data)
    out: JsonObj = {}
    while reader.pos < len(data):
        tag = reader.varint()
        number, wire = tag >> 3, tag & 7
        field = schema.get(number)
        if field is None:
            reader.skip(wire)
            continue
        value: Any
        if field.kind in ("string", "bytes", "message", "map", "map_bytes", _TIME):
            if wire != 2:
                raise ValueError(f"field {field.name}: wrong wire type")
            raw = reader.chunk()
            if field.kind == "string":
                value = raw.decode()
                if not value and not field.repeated:
                    continue  # Go omits empty strings (omitempty) when writing JSON
            elif field.kind == "bytes":
                value = raw
            elif field.kind == "message":
                value = decode_message(raw, field.message)
            elif field.kind == _TIME:
                value = _time(decode_message(raw, "Time"))
            else:
                entry = decode_message(raw, "MapEntry" if field.kind == "map" else "MapEntryBytes")
                target = out.setdefault(field.name, {})
                item = entry.get("value", "" if field.kind == "map" else b"")
                if field.kind == "map_bytes":
                    item = base64.b64encode(item).decode()
                target[entry.get("key", "")] = item
                continue
        else:
            if wire != 0:
                raise ValueError(f"field {field.name}: wrong wire type")
            number_value = reader.varint()
            value = bool(number_value) if field.kind == "bool" else _signed(number_value)
        if field.repeated:
            out.setdefault(field.name, []).append(value)
        else:
            out[field.name] = value
    return out


def decode_object(body: bytes) -> JsonObj:
    """A protobuf-encoded Kubernetes object as JSON (400 when it cannot be read)."""
    if not body.startswith(MAGIC):
        raise bad_request("provided protobuf is not a Kubernetes object (missing k8s magic)")
    try:
        envelope = decode_message(body[len(MAGIC) :], "Unknown")
        type_meta = envelope.get("typeMeta", {})
        kind = type_meta.get("kind", "")
        if kind not in SCHEMAS or kind in ("Unknown", "TypeMeta", "ObjectMeta"):
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the embedded API server cannot decode {kind or 'this object'} from protobuf; "
                "send application/json",
            )
        obj = decode_message(envelope.get("raw", b""), kind)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"unable to decode protobuf body: {exc}") from None
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}
