"""Events, served as core/v1 and as events.k8s.io/v1 from one storage.

Storage holds the core/v1 shape; events.k8s.io/v1 renames fields on the way in and out
(``involvedObject`` ↔ ``regarding``, ``message`` ↔ ``note``, ``source`` ↔ ``deprecatedSource``…),
as the real API server's conversion does. events.k8s.io/v1 creates are validated strictly
(eventTime, reportingController, reportingInstance, action and reason are required).
"""

from __future__ import annotations

from typing import Any

from scaleset.embedded.apiserver import _names
from scaleset.embedded.apiserver._errors import (
    FieldError,
    invalid_value,
    not_supported,
    required,
    too_long,
)
from scaleset.embedded.apiserver._kinds import Strategy

JsonObj = dict[str, Any]

# events.k8s.io/v1 name -> core/v1 name
_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
_SHARED = ("eventTime", "series", "reportingInstance", "action", "reason", "related", "type")
_CORE_FIELDS = frozenset(_RENAMES.values()) | frozenset(_SHARED)
_NEW_FIELDS = frozenset(_RENAMES) | frozenset(_SHARED)

CORE_FIELD_LABELS = {
    "involvedObject.kind": "involvedObject.kind",
    "involvedObject.namespace": "involvedObject.namespace",
    "involvedObject.name": "involvedObject.name",
    "involvedObject.uid": "involvedObject.uid",
    "involvedObject.apiVersion": "involvedObject.apiVersion",
    "involvedObject.resourceVersion": "involvedObject.resourceVersion",
    "involvedObject.fieldPath": "involvedObject.fieldPath",
    "reason": "reason",
    "reportingComponent": "reportingComponent",
    "source": "source.component",
    "type": "type",
}
EVENTS_V1_FIELD_LABELS = {
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reason": "reason",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source.component",
    "type": "type",
}


def to_core(obj: JsonObj) -> JsonObj:
    """An events.k8s.io/v1 Event in the core/v1 storage shape."""
    out: JsonObj = {"apiVersion": "v1", "kind": "Event", "metadata": obj.get("metadata", {})}
    for key, value in obj.items():
        if key in _RENAMES:
            out[_RENAMES[key]] = value
        elif key in _SHARED:
            out[key] = value
    out.setdefault("involvedObject", {})
    return out


def from_core(obj: JsonObj) -> JsonObj:
    """A stored core/v1 Event as events.k8s.io/v1 shows it."""
    back = {v: k for k, v in _RENAMES.items()}
    out: JsonObj = {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }
    for key, value in obj.items():
        if key in back:
            out[back[key]] = value
        elif key in _SHARED:
            out[key] = value
    if "eventTime" not in out:
        out["eventTime"] = None
    return out


class CoreEventStrategy(Strategy):
    kind = "Event"
    allow_create_on_update = True
    top_level_fields = _CORE_FIELDS

    def prepare_create(self, obj: JsonObj) -> None:
        obj.setdefault("involvedObject", {})
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
        if "firstTimestamp" not in obj:
            obj["firstTimestamp"] = None
        if "lastTimestamp" not in obj:
            obj["lastTimestamp"] = None
        if "eventTime" not in obj:
            obj["eventTime"] = None
        obj.setdefault("source", {})

    def prepare_update(self, new: JsonObj, old: JsonObj) -> None:
        self.prepare_create(new)

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs: list[FieldError] = []
        involved = obj.get("involvedObject") or {}
        namespace = obj.get("metadata", {}).get("namespace", "")
        involved_ns = involved.get("namespace", "") if isinstance(involved, dict) else ""
        if involved_ns and involved_ns != namespace:
            errs.append(
                invalid_value(
                    "involvedObject.namespace", involved_ns, "does not match event.namespace"
                )
            )
        event_type = obj.get("type")
        if event_type not in (None, "", "Normal", "Warning") and obj.get("reportingComponent"):
            errs.append(not_supported("type", event_type, ["Normal", "Warning"]))
        return errs


class EventsV1Strategy(CoreEventStrategy):
    """Same storage; stricter create validation for events.k8s.io/v1 clients."""

    group = "events.k8s.io"

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs = super().validate(obj)
        if not obj.get("eventTime"):
            errs.append(required("eventTime"))
        event_type = obj.get("type")
        if event_type not in ("Normal", "Warning"):
            errs.append(not_supported("type", event_type or "", ["Normal", "Warning"]))
        controller = obj.get("reportingComponent", "")
        if not controller:
            errs.append(required("reportingController"))
        else:
            errs.extend(
                invalid_value("reportingController", controller, m)
                for m in _names.qualified_name(controller)
            )
        for field_name, path in (
            ("reportingInstance", "reportingInstance"),
            ("action", "action"),
            ("reason", "reason"),
        ):
            value = obj.get(field_name, "")
            if not value:
                errs.append(required(path))
            elif len(value) > 128:
                errs.append(too_long(path, 128))
        if len(obj.get("message") or "") > 1024:
            errs.append(too_long("note", 1024))
        return errs

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        return CoreEventStrategy.validate(self, new)
