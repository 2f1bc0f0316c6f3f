"""Pod status as a 1.20 server decodes and validates it on ``pods/{name}/status`` writes.

Decoding (``normalize_status``) is what the round trip v1 -> internal -> v1 does to a status:
fields Go omits when empty disappear, and ``podIP`` / ``podIPs`` are kept in step (either one
fills the other; ``podIP`` wins when they disagree, since the internal type has only the list).

Validation (``validate_status_update``) is ``ValidatePodStatusUpdate`` without the ObjectMeta
part (the generic update path checks metadata): condition types, ``nominatedNodeName``, container
state transitions the restart policy forbids, and pod IPs — in that order, worded as the real
server words them (including its ``metadata.conditions[i].Type`` field path).

Values of the wrong JSON type (a number where a string belongs) are a 400 decode error on the
real server; here they are left to the generic code and skipped by these checks.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from scaleset.embedded.apiserver import _names
from scaleset.embedded.apiserver._errors import (
    FieldError,
    GoLiteral,
    duplicate,
    forbidden,
    invalid_value,
)

JsonObj = dict[str, Any]

# PodStatus fields tagged omitempty: an empty value does not survive a decode
_OMIT_EMPTY_STRINGS = (
    "phase",
    "message",
    "reason",
    "nominatedNodeName",
    "hostIP",
    "podIP",
    "qosClass",
)
_OMIT_EMPTY_LISTS = (
    "conditions",
    "podIPs",
    "containerStatuses",
    "initContainerStatuses",
    "ephemeralContainerStatuses",
)
# condition types the kubelet owns; every other type must be a qualified name
_SYSTEM_CONDITIONS = frozenset({"PodScheduled", "Ready", "Initialized"})
_NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_NOT_TERMINATED = "may not be transitioned to non-terminated state"

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _entry_ip(entry: object) -> str:
    ip = entry.get("ip") if isinstance(entry, dict) else None
    return ip if isinstance(ip, str) else ""


def _sync_pod_ips(status: JsonObj) -> None:
    pod_ip = status.get("podIP")
    if not isinstance(pod_ip, str):
        pod_ip = ""
    pod_ips = status.get("podIPs")
    if not isinstance(pod_ips, list):
        pod_ips = []
    if pod_ip and (not pod_ips or _entry_ip(pod_ips[0]) != pod_ip):
        pod_ips = [{"ip": pod_ip}]
    if pod_ips:
        status["podIPs"] = pod_ips
        first = _entry_ip(pod_ips[0])
        if first:
            status["podIP"] = first
        else:
            status.pop("podIP", None)
    else:
        status.pop("podIPs", None)
        status.pop("podIP", None)


def normalize_status(status: JsonObj) -> None:
    """A decoded status as the real server keeps it (mutates ``status``)."""
    for key in _OMIT_EMPTY_STRINGS:
        if status.get(key, None) == "":
            del status[key]
    for key in _OMIT_EMPTY_LISTS:
        if status.get(key, None) == []:
            del status[key]
    if "podIP" in status or "podIPs" in status:
        _sync_pod_ips(status)


def parse_ip(value: str) -> IpAddress | None:
    """The address Go's ``net.ParseIP`` reads from ``value``, or None when it reads none.

    Python's parser agrees with Go's on dotted quads (no leading zeros) and IPv6 text,
    except that it accepts a ``%zone`` suffix, which Go does not.
    """
    if "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _is_ipv4(address: IpAddress) -> bool:
    """Go's ``To4() != nil``: IPv4, including IPv4-mapped IPv6."""
    return isinstance(address, ipaddress.IPv4Address) or address.ipv4_mapped is not None


def _go_pod_ip(ip: str) -> str:
    return f"core.PodIP{{IP:{json.dumps(ip, ensure_ascii=False)}}}"


def _validate_pod_ips(status: JsonObj) -> list[FieldError]:
    pod_ips = status.get("podIPs")
    if not isinstance(pod_ips, list):
        return []
    path = "status.podIPs"
    ips = [_entry_ip(entry) for entry in pod_ips]
    parsed = [parse_ip(ip) for ip in ips]
    errs = [
        invalid_value(f"{path}[{i}]", ip, _NOT_AN_IP)
        for i, (ip, address) in enumerate(zip(ips, parsed, strict=True))
        if address is None
    ]
    if len(ips) <= 1:
        return errs
    addresses = [a for a in parsed if a is not None]
    if len(addresses) < len(parsed):
        # k8s.io/utils/net.IsDualStackIPs stops at the first address that did not parse
        errs.append(
            FieldError(
                "Internal",
                path,
                detail="failed to check for dual stack with error:ip <nil> is invalid",
            )
        )
        dual_stack = False
    else:
        families = {_is_ipv4(a) for a in addresses}
        dual_stack = families == {True, False}
    if not dual_stack or len(ips) > 2:
        listed = GoLiteral("[]core.PodIP{" + ", ".join(_go_pod_ip(ip) for ip in ips) + "}")
        errs.append(
            invalid_value(path, listed, "may specify no more than one IP for each IP family")
        )
    seen: set[str] = set()
    for i, ip in enumerate(ips):
        if ip in seen:
            errs.append(duplicate(f"{path}[{i}]", GoLiteral(_go_pod_ip(ip))))
        seen.add(ip)
    return errs


def _validate_conditions(status: JsonObj) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, condition in enumerate(status.get("conditions") or []):
        kind = condition.get("type", "") if isinstance(condition, dict) else None
        if not isinstance(kind, str) or kind in _SYSTEM_CONDITIONS:
            continue
        path = f"metadata.conditions[{i}].Type"
        errs.extend(invalid_value(path, kind, m) for m in _names.qualified_name(kind))
    return errs


def _terminated(container_status: object) -> bool:
    state = container_status.get("state") if isinstance(container_status, dict) else None
    return isinstance(state, dict) and isinstance(state.get("terminated"), dict)


def _exit_code(container_status: JsonObj) -> object:
    return container_status["state"]["terminated"].get("exitCode", 0)


def _validate_transitions(
    new_statuses: object, old_statuses: object, path: str, restart_policy: object
) -> list[FieldError]:
    """A container the restart policy will not restart stays terminated once it terminated."""
    if restart_policy == "Always":
        return []
    if not isinstance(old_statuses, list) or not isinstance(new_statuses, list):
        return []
    errs: list[FieldError] = []
    for i, old in enumerate(old_statuses):
        if not isinstance(old, dict) or not _terminated(old):
            continue
        if _exit_code(old) != 0 and restart_policy == "OnFailure":
            continue
        name = old.get("name", "")
        errs.extend(
            forbidden(f"{path}[{i}].state", _NOT_TERMINATED)
            for new in new_statuses
            if isinstance(new, dict) and new.get("name", "") == name and not _terminated(new)
        )
    return errs


def validate_status_update(new: JsonObj, old: JsonObj) -> list[FieldError]:
    """The status rules of ``ValidatePodStatusUpdate``, in the real server's order."""
    new_status = new.get("status")
    old_status = old.get("status")
    new_status = new_status if isinstance(new_status, dict) else {}
    old_status = old_status if isinstance(old_status, dict) else {}
    errs = _validate_conditions(new_status)
    nominated = new_status.get("nominatedNodeName", "")
    if (
        isinstance(nominated, str)
        and nominated
        and nominated != old_status.get("nominatedNodeName", "")
    ):
        errs.extend(
            invalid_value("status.nominatedNodeName", nominated, m)
            for m in _names.dns1123_subdomain(nominated)
        )
    restart_policy = (old.get("spec") or {}).get("restartPolicy")
    for key in ("containerStatuses", "initContainerStatuses"):
        errs.extend(
            _validate_transitions(
                new_status.get(key), old_status.get(key), f"status.{key}", restart_policy
            )
        )
    errs.extend(_validate_pod_ips(new_status))
    return errs
