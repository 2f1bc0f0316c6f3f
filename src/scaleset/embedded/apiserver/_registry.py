"""Which resources are served, looked up by URL or by apiVersion/kind, and discovery documents.

Built-in types are registered at start; a CRD's types join when it is established and leave when
it is deleted. Discovery (``/api``, ``/apis``, ``/apis/<group>``, resource lists) is built from
what is registered at the moment of the request, as kube-apiserver's is.
"""

from __future__ import annotations

import re
from typing import Any

from scaleset.embedded.apiserver._kinds import ResourceType
from scaleset.embedded.apiserver._store import BucketId

JsonObj = dict[str, Any]

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first, others last."""
    match = _VERSION_RE.match(version)
    if match is None:
        return (0, 0, 0, version)
    major = int(match.group(1))
    stage = {"alpha": 1, "beta": 2, None: 3}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, major, minor, "")


def _sorted_versions(versions: list[str]) -> list[str]:
    known = sorted(
        (v for v in versions if _VERSION_RE.match(v)), key=version_priority, reverse=True
    )
    others = sorted(v for v in versions if not _VERSION_RE.match(v))
    return known + others


class Registry:
    """Served ResourceTypes by (group, version, plural) and by (apiVersion, kind)."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._storage_api_version: dict[BucketId, str] = {}
        self._group_order: list[str] = []

    def add(self, rt: ResourceType, *, storage: bool = False) -> None:
        self._types[(rt.group, rt.version, rt.plural)] = rt
        if storage or rt.bucket not in self._storage_api_version:
            self._storage_api_version[rt.bucket] = rt.api_version
        if rt.group not in self._group_order:
            self._group_order.append(rt.group)

    def remove_resource(self, group: str, plural: str) -> None:
        for key in [k for k in self._types if k[0] == group and k[2] == plural]:
            del self._types[key]
        self._storage_api_version.pop((group, plural), None)
        if not any(k[0] == group for k in self._types) and group in self._group_order:
            self._group_order.remove(group)

    def set_storage_version(self, bucket: BucketId, api_version: str) -> None:
        self._storage_api_version[bucket] = api_version

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def storage_api_version(self, bucket: BucketId) -> str:
        return self._storage_api_version[bucket]

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for (g, v, _), rt in self._types.items():
            if g == group and v == version and rt.kind == kind:
                return rt
        for (g, _, _), rt in self._types.items():
            if g == group and rt.kind == kind:
                return rt
        return None

    def types(self) -> list[ResourceType]:
        return list(self._types.values())

    def namespaced_buckets(self) -> dict[BucketId, ResourceType]:
        """One served type per storage bucket of namespaced resources."""
        out: dict[BucketId, ResourceType] = {}
        for rt in self._types.values():
            if rt.namespaced and rt.bucket not in out:
                out[rt.bucket] = rt
        return out

    def versions(self, group: str) -> list[str]:
        return _sorted_versions(sorted({v for (g, v, _) in self._types if g == group}))

    def has_group_version(self, group: str, version: str) -> bool:
        return any(g == group and v == version for (g, v, _) in self._types)

    # -- discovery -----------------------------------------------------------------------------
    def api_versions(self, server_address: str) -> JsonObj:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }

    def api_group(self, group: str) -> JsonObj:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.versions(group)]
        return {
            "name": group,
            "versions": versions,
            "preferredVersion": versions[0] if versions else {},
        }

    def api_group_list(self) -> JsonObj:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [self.api_group(g) for g in self._group_order if g],
        }

    def api_group_doc(self, group: str) -> JsonObj:
        return {"kind": "APIGroup", "apiVersion": "v1", **self.api_group(group)}

    def resource_list(self, group: str, version: str) -> JsonObj:
        resources: list[JsonObj] = []
        for (g, v, _), rt in self._types.items():
            if g != group or v != version:
                continue
            entry: JsonObj = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            if rt.storage_version_hash:
                entry["storageVersionHash"] = rt.storage_version_hash
            resources.append(entry)
            for sub, verbs in rt.subresources.items():
                sub_kind = {"binding": "Binding"}.get(sub, rt.kind)
                resources.append(
                    {
                        "name": f"{rt.plural}/{sub}",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": sub_kind,
                        "verbs": list(verbs),
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }
