"""Events, served as core/v1 and as events.k8s.io/v1 from one storage.

Storage holds the core/v1 shape; events.k8s.io/v1 renames fields on the way in and out
(``involvedObject`` ↔ ``regarding``, ``message`` ↔ ``note``, ``source`` ↔ ``deprecatedSource``…),
as the real API server's conversion does. events.k8s.io/v1 creates are validated strictly
(eventTime, reportingController, reportingInstance, action and reason are required).
"""

from __future__ import annotations

from typing import Any

from scaleset.embedded.apiserver import _names
from scaleset.embedded.apiserver._errors import FieldError, invalid_value, required
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
    for optional in ("reportingController", "reportingInstance", "action", "reason", "type"):
        if out.get(optional) == "":
            del out[optional]  # omitempty in events.k8s.io/v1
    return out


def _legacy_errors(obj: JsonObj) -> list[FieldError]:
    """legacyValidateEvent: what every Event must satisfy, whichever API it came through."""
    errs: list[FieldError] = []
    involved = obj.get("involvedObject") or {}
    involved_ns = involved.get("namespace", "") if isinstance(involved, dict) else ""
    namespace = obj.get("metadata", {}).get("namespace", "")
    if not obj.get("eventTime"):
        if involved_ns:
            if namespace != involved_ns:
                errs.append(
                    invalid_value(
                        "involvedObject.namespace", involved_ns, "does not match event.namespace"
                    )
                )
        elif namespace not in ("", "default"):
            errs.append(
                invalid_value(
                    "involvedObject.namespace", involved_ns, "does not match event.namespace"
                )
            )
    else:
        if not involved_ns and namespace != "kube-system":
            errs.append(
                invalid_value(
                    "involvedObject.namespace", involved_ns, "does not match event.namespace"
                )
            )
        controller = obj.get("reportingComponent", "")
        if not controller:
            errs.append(required("reportingController"))
        errs.extend(
            invalid_value("reportingController", controller, m)
            for m in _names.qualified_name(controller)
        )
        for field_name, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            value = obj.get(field_name) or ""
            if not value:
                errs.append(required(field_name))
            elif len(value) > limit:
                errs.append(invalid_value(field_name, "", f"can have at most {limit} characters"))
        if len(obj.get("message") or "") > 1024:
            errs.append(invalid_value("message", "", "can have at most 1024 characters"))
    errs.extend(
        invalid_value("namespace", namespace, m) for m in _names.dns1123_subdomain(namespace)
    )
    return errs


class CoreEventStrategy(Strategy):
    """core/v1 Events: legacy validation only (names are not checked, as in the real server)."""

    kind = "Event"
    allow_create_on_update = True
    field_selector_error = "unsupported"
    validate_object_meta = False
    top_level_fields = _CORE_FIELDS

    def prepare_create(self, obj: JsonObj) -> None:
        obj.setdefault("involvedObject", {})
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
        for field_name in ("firstTimestamp", "lastTimestamp", "eventTime"):
            if field_name not in obj:
                obj[field_name] = None
        obj.setdefault("source", {})

    def prepare_update(self, new: JsonObj, old: JsonObj) -> None:
        self.prepare_create(new)

    def validate(self, obj: JsonObj) -> list[FieldError]:
        return _legacy_errors(obj)


class EventsV1Strategy(CoreEventStrategy):
    """Same storage; events.k8s.io/v1 creates are validated strictly."""

    validate_object_meta = True
    error_group = ""  # validated as the internal core Event: 'Event "x" is invalid'
    top_level_fields = _NEW_FIELDS

    def validate(self, obj: JsonObj) -> list[FieldError]:
        errs = _legacy_errors(obj)
        series = obj.get("series")
        if isinstance(series, dict):
            if (series.get("count") or 0) < 2:
                errs.append(invalid_value("series.count", "", "should be at least 2"))
            if not series.get("lastObservedTime"):
                errs.append(required("series.lastObservedTime"))
        if not obj.get("eventTime"):
            errs.append(required("eventTime"))
        if obj.get("type") not in ("Normal", "Warning"):
            errs.append(invalid_value("type", "", f"has invalid value: {obj.get('type') or ''}"))
        for field_name in ("firstTimestamp", "lastTimestamp"):
            if obj.get(field_name):
                errs.append(invalid_value(field_name, "", "needs to be unset"))
        if obj.get("count"):
            errs.append(invalid_value("count", "", "needs to be unset"))
        source = obj.get("source") or {}
        if isinstance(source, dict) and (source.get("component") or source.get("host")):
            errs.append(invalid_value("source", "", "needs to be unset"))
        return errs

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        return _legacy_errors(new)
