"""Server-side printing: ``meta.k8s.io/v1`` Tables, which ``kubectl get`` asks for.

Each built-in kind gets the columns kube-apiserver prints for it (pods: Name, Ready, Status,
Restarts, Age, and IP/Node in wide output…); a custom resource gets its CRD's
``additionalPrinterColumns`` (or Name and Age), evaluated as simple JSONPaths.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from scaleset.embedded.apiserver._kinds import ResourceType

JsonObj = dict[str, Any]
Column = tuple[str, str, str, int]  # name, type, format, priority
Row = Callable[[JsonObj, datetime], list[Any]]

_NAME: Column = ("Name", "string", "name", 0)
_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "http://kubernetes.io/docs/user-guide/identifiers#names"
)
_AGE: Column = ("Age", "string", "", 0)


def wants_table(accept: str) -> str | None:
    """The Table apiVersion an Accept header asks for, if any."""
    for part in accept.split(","):
        params = dict(p.strip().split("=", 1) for p in part.split(";")[1:] if "=" in p)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return f"meta.k8s.io/{params.get('v', 'v1')}"
    return None


def human_duration(seconds: float) -> str:
    """duration.HumanDuration, as kubectl prints ages."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def _age(obj: JsonObj, now: datetime) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    try:
        moment = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def _date_cell(value: object, now: datetime) -> str | None:
    """A ``date`` printer column as the real server's table convertor renders it: the time since
    the timestamp (``5m``), ``<invalid>`` for an unparseable string, nothing for a non-string."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return human_duration((now - moment).total_seconds())


def _name(obj: JsonObj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _none(value: object) -> object:
    return "<none>" if value in (None, "", []) else value


def _pod_status(pod: JsonObj) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    initializing = False
    spec_init = (pod.get("spec") or {}).get("initContainers") or []
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        terminated = state.get("terminated")
        if terminated and terminated.get("exitCode") == 0:
            continue
        if terminated:
            reason = "Init:" + (
                terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}"
            )
        elif (state.get("waiting") or {}).get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + state["waiting"]["reason"]
        else:
            reason = f"Init:{i}/{len(spec_init)}"
        initializing = True
        break
    if not initializing:
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                reason = (
                    f"Signal:{terminated['signal']}"
                    if terminated.get("signal")
                    else f"ExitCode:{terminated.get('exitCode')}"
                )
            elif state.get("running") and cs.get("ready"):
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def _pod_row(pod: JsonObj, now: datetime) -> list[Any]:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    return [
        _name(pod),
        f"{ready}/{total}",
        _pod_status(pod),
        restarts,
        _age(pod, now),
        _none(status.get("podIP")),
        _none((pod.get("spec") or {}).get("nodeName")),
        _none(status.get("nominatedNodeName")),
        _none(f"0/{len(gates)}" if gates else ""),
    ]


def _role_ref(binding: JsonObj) -> str:
    ref = binding.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _event_object(event: JsonObj) -> str:
    involved = event.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


_BUILTIN: dict[tuple[str, str], tuple[list[Column], Row]] = {
    ("", "pods"): (
        [
            _NAME,
            ("Ready", "string", "", 0),
            ("Status", "string", "", 0),
            ("Restarts", "integer", "", 0),
            _AGE,
            ("IP", "string", "", 1),
            ("Node", "string", "", 1),
            ("Nominated Node", "string", "", 1),
            ("Readiness Gates", "string", "", 1),
        ],
        _pod_row,
    ),
    ("", "namespaces"): (
        [_NAME, ("Status", "string", "", 0), _AGE],
        lambda o, now: [_name(o), (o.get("status") or {}).get("phase", ""), _age(o, now)],
    ),
    ("", "configmaps"): (
        [_NAME, ("Data", "string", "", 0), _AGE],
        lambda o, now: [
            _name(o),
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            _age(o, now),
        ],
    ),
    ("", "secrets"): (
        [_NAME, ("Type", "string", "", 0), ("Data", "string", "", 0), _AGE],
        lambda o, now: [_name(o), o.get("type", ""), len(o.get("data") or {}), _age(o, now)],
    ),
    ("", "serviceaccounts"): (
        [_NAME, ("Secrets", "string", "", 0), _AGE],
        lambda o, now: [_name(o), len(o.get("secrets") or []), _age(o, now)],
    ),
    ("", "events"): (
        [
            ("Last Seen", "string", "", 0),
            ("Type", "string", "", 0),
            ("Reason", "string", "", 0),
            ("Object", "string", "", 0),
            ("Message", "string", "", 0),
        ],
        lambda o, now: [
            _age({"metadata": {"creationTimestamp": o.get("lastTimestamp")}}, now)
            if o.get("lastTimestamp")
            else _age(o, now),
            o.get("type", ""),
            o.get("reason", ""),
            _event_object(o),
            o.get("message", ""),
        ],
    ),
    ("rbac.authorization.k8s.io", "roles"): (
        [_NAME, ("Created At", "date", "", 0)],
        lambda o, now: [_name(o), o.get("metadata", {}).get("creationTimestamp", "")],
    ),
    ("rbac.authorization.k8s.io", "rolebindings"): (
        [
            _NAME,
            ("Role", "string", "", 0),
            _AGE,
            ("Users", "string", "", 1),
            ("Groups", "string", "", 1),
            ("ServiceAccounts", "string", "", 1),
        ],
        lambda o, now: [
            _name(o),
            _role_ref(o),
            _age(o, now),
            ", ".join(
                s.get("name", "") for s in o.get("subjects") or [] if s.get("kind") == "User"
            ),
            ", ".join(
                s.get("name", "") for s in o.get("subjects") or [] if s.get("kind") == "Group"
            ),
            ", ".join(
                f"{s.get('namespace', '')}/{s.get('name', '')}"
                for s in o.get("subjects") or []
                if s.get("kind") == "ServiceAccount"
            ),
        ],
    ),
    ("coordination.k8s.io", "leases"): (
        [_NAME, ("Holder", "string", "", 0), _AGE],
        lambda o, now: [_name(o), (o.get("spec") or {}).get("holderIdentity", ""), _age(o, now)],
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        [_NAME, ("Created At", "date", "", 0)],
        lambda o, now: [_name(o), o.get("metadata", {}).get("creationTimestamp", "")],
    ),
}

_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']+)'\]")


def jsonpath(obj: JsonObj, path: str) -> Any:
    """The value at a simple JSONPath (``.status.phase``, ``.spec.items[0].name``)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    node: Any = obj
    for match in _PATH_TOKEN.finditer(text):
        key, index, quoted = match.groups()
        if index is not None:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        else:
            node = node.get(key or quoted) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def _custom_columns(crd_version: JsonObj | None) -> tuple[list[Column], list[str]]:
    columns: list[Column] = [_NAME]
    paths: list[str] = []
    printer = (crd_version or {}).get("additionalPrinterColumns")
    if not printer:
        return [_NAME, _AGE], [".metadata.creationTimestamp"]
    for col in printer:
        columns.append(
            (
                str(col.get("name", "")),
                str(col.get("type", "string")),
                str(col.get("format", "")),
                int(col.get("priority", 0)),
            )
        )
        paths.append(str(col.get("jsonPath", "")))
    return columns, paths


def build_table(
    rt: ResourceType,
    objects: list[JsonObj],
    *,
    api_version: str,
    list_meta: JsonObj,
    include_object: str,
    now: datetime,
    crd_version: JsonObj | None = None,
) -> JsonObj:
    builtin = _BUILTIN.get((rt.group, rt.plural))
    descriptions: dict[str, str] = {"Name": _NAME_DESCRIPTION}
    if builtin is not None:
        columns, row_fn = builtin
    else:
        columns, paths = _custom_columns(crd_version)
        for (column_name, _, _, _), path in zip(columns[1:], paths, strict=True):
            descriptions.setdefault(
                column_name, f"Custom resource definition column (in JSONPath format): {path}"
            )

        def row_fn(obj: JsonObj, moment: datetime) -> list[Any]:
            cells: list[Any] = [_name(obj)]
            for (_, col_type, _, _), path in zip(columns[1:], paths, strict=True):
                value = jsonpath(obj, path)
                if col_type == "date":
                    value = _date_cell(value, moment)
                elif path == ".metadata.creationTimestamp":
                    value = _age(obj, moment)
                cells.append(value)
            return cells

    rows: list[JsonObj] = []
    for obj in objects:
        row: JsonObj = {"cells": row_fn(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": list_meta,
        "columnDefinitions": [
            {
                "name": name,
                "type": col_type,
                "format": fmt,
                "description": descriptions.get(name, ""),
                "priority": prio,
            }
            for name, col_type, fmt, prio in columns
        ],
        "rows": rows,
    }
