"""Reading the raw JSON objects the doctor collected: each accessor tolerates whatever ARC, an
older scaleset or a person left in the object (a missing or mistyped field reads as empty), so
no check can crash on an odd object."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from scaleset.api import parse_kube_time
from scaleset.doctor.inventory import JsonObject


def meta(obj: JsonObject) -> JsonObject:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def status(obj: JsonObject) -> JsonObject:
    value = obj.get("status")
    return value if isinstance(value, dict) else {}


def spec(obj: JsonObject) -> JsonObject:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def labels(obj: JsonObject) -> JsonObject:
    value = meta(obj).get("labels")
    return value if isinstance(value, dict) else {}


def annotations_of(obj: JsonObject) -> JsonObject:
    value = meta(obj).get("annotations")
    return value if isinstance(value, dict) else {}


def name_of(obj: JsonObject) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: JsonObject) -> str:
    return str(meta(obj).get("namespace") or "")


def key_of(obj: JsonObject) -> tuple[str, str]:
    return namespace_of(obj), name_of(obj)


def deleting(obj: JsonObject) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def time(value: object) -> datetime | None:
    if not value:
        return None
    try:
        return parse_kube_time(value)
    except (TypeError, ValueError):
        return None


def created(obj: JsonObject) -> datetime | None:
    return time(meta(obj).get("creationTimestamp"))


def seconds(later: datetime | None, earlier: datetime | None) -> float | None:
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds()


def target(kind: str, obj: JsonObject) -> str:
    return f"{kind} {namespace_of(obj)}/{name_of(obj)}"


def delete_runner(obj: JsonObject) -> str:
    return f"kubectl delete ephemeralrunner -n {namespace_of(obj)} {name_of(obj)}"


def has_job(obj: JsonObject) -> bool:
    value = status(obj)
    return bool(value.get("jobId") or value.get("jobRequestId"))


def dicts(value: object) -> Iterator[dict[str, Any]]:
    """The dict items of a JSON list (anything else yields nothing)."""
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))


def strings(value: object) -> list[str]:
    """The items of a JSON list, as text (anything else: none)."""
    return [str(item) for item in value] if isinstance(value, list) else []


def conditions(obj: JsonObject) -> dict[str, dict[str, Any]]:
    """``status.conditions`` by type."""
    return {str(c.get("type")): c for c in dicts(status(obj).get("conditions"))}


def container_statuses(pod: JsonObject) -> Iterator[dict[str, Any]]:
    yield from dicts(status(pod).get("containerStatuses"))


def pod_ready(pod: JsonObject) -> bool:
    """Running, not being deleted, and its ``Ready`` condition is true."""
    if deleting(pod) or status(pod).get("phase") != "Running":
        return False
    ready = conditions(pod).get("Ready")
    return ready is not None and ready.get("status") == "True"
