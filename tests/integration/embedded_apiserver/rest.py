"""Helpers of the embedded API server's own tests: raw REST bodies and paths, patch content
types, the defaults the server's controllers put in every namespace."""

from __future__ import annotations

from typing import Any

JsonObj = dict[str, Any]
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}

# what the server's controllers put in every namespace (as kube-controller-manager does)
ROOT_CA = "kube-root-ca.crt"
NAMESPACE_DEFAULTS = ("serviceaccounts/default", f"configmaps/{ROOT_CA}")


def configmap(name: str, **extra: Any) -> JsonObj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **extra}}


def cm_path(namespace: str, name: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    return f"{path}/{name}" if name else path


def pod(name: str, **spec: Any) -> JsonObj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
    }


def pod_path(namespace: str, name: str = "", sub: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/pods"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path
