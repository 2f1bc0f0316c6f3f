"""The chart's CRDs are the repository's, and the objects the chart renders are accepted by an
API server: the chart's CRDs first, then every object, created and read back. The embedded
server serves ServiceAccounts, Roles and RoleBindings (not Deployments, ClusterRoles or
PodDisruptionBudgets); the real kube-apiserver (SCALESET_TEST_KUBECONFIG) takes all of them
except what its version does not serve (v1.20 has no policy/v1, so no PodDisruptionBudget)."""

from __future__ import annotations

import secrets
from typing import Any

import httpx2
import pytest
import yaml
from tests.deploy.controller_chart.cases import CHART, CRDS
from tests.deploy.controller_chart.rendering import render_ours
from tests.plugins.kube_backends import KubeBackend
from tests.support.helm import SOURCE
from tests.support.kube import install_actions_crds

from scaleset.api.crds import all_crds

PLURALS = {
    "ServiceAccount": "serviceaccounts",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Deployment": "deployments",
    "PodDisruptionBudget": "poddisruptionbudgets",
}
EMBEDDED_KINDS = {"ServiceAccount", "Role", "RoleBinding"}


def test_chart_crds_are_the_repository_crds() -> None:
    chart = sorted(path.name for path in (CHART / "crds").glob("*.yaml"))
    assert chart == sorted(path.name for path in CRDS.glob("*.yaml"))
    for name in chart:
        assert (CHART / "crds" / name).read_bytes() == (CRDS / name).read_bytes(), name
        assert not (CHART / "crds" / name).is_symlink()


def test_chart_crds_are_what_the_code_declares() -> None:
    rendered = [
        o for o in render_ours({}, include_crds=True) if o["kind"] == "CustomResourceDefinition"
    ]
    for crd in rendered:
        crd.pop(SOURCE)
    by_name = {crd["metadata"]["name"]: crd for crd in all_crds()}
    assert {crd["metadata"]["name"]: crd for crd in rendered} == by_name


def _path(obj: dict[str, Any]) -> str:
    group_version = obj["apiVersion"]
    prefix = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    namespace = obj["metadata"].get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{scope}/{PLURALS[obj['kind']]}"


async def _served(http: httpx2.AsyncClient, group_version: str) -> bool:
    path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    return (await http.get(path)).status_code == 200


@pytest.mark.parametrize("mode", ["cluster", "namespaced"])
async def test_rendered_objects_apply(
    mode: str, kube_backend: KubeBackend, kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await install_actions_crds(kube_backend)  # the chart's CRDs (see the two tests above)
    release = f"t{secrets.token_hex(3)}"
    values: dict[str, Any] = {
        "replicaCount": 2,
        "metrics": {
            "controllerManagerAddr": ":8080",
            "listenerAddr": ":8080",
            "listenerEndpoint": "/metrics",
        },
    }
    if mode == "namespaced":
        values["flags"] = {"watchSingleNamespace": namespace}
    objects = render_ours(values, name=release, namespace=namespace)
    applied: list[dict[str, Any]] = []
    skipped: list[str] = []
    try:
        for obj in objects:
            obj.pop(SOURCE)
            if kube_backend.name == "embedded" and obj["kind"] not in EMBEDDED_KINDS:
                continue
            if not await _served(kube_http, obj["apiVersion"]):
                skipped.append(f"{obj['apiVersion']} {obj['kind']}")
                continue
            created = await kube_http.post(_path(obj), json=obj)
            assert created.status_code == 201, (
                f"{obj['kind']} {obj['metadata']['name']}: {created.text}"
            )
            applied.append(obj)
            read = await kube_http.get(f"{_path(obj)}/{obj['metadata']['name']}")
            assert read.status_code == 200
            body = read.json()
            for field in ("rules", "roleRef", "subjects"):
                if field in obj:
                    assert body[field] == obj[field], field
            if obj["kind"] == "Deployment":
                container = body["spec"]["template"]["spec"]["containers"][0]
                assert container["args"] == obj["spec"]["template"]["spec"]["containers"][0]["args"]
                assert container["securityContext"]["readOnlyRootFilesystem"] is True
        kinds = {obj["kind"] for obj in applied}
        if kube_backend.name == "embedded":
            assert kinds == EMBEDDED_KINDS
        else:
            assert set(skipped) <= {"policy/v1 PodDisruptionBudget"}, skipped
            assert kinds >= {"Deployment", "ClusterRole", "ClusterRoleBinding", "Role"}
    finally:
        for obj in reversed(applied):
            if not obj["metadata"].get("namespace"):  # cluster-scoped: outlives the namespace
                await kube_http.delete(f"{_path(obj)}/{obj['metadata']['name']}")


def test_chart_crd_files_parse_as_single_documents() -> None:
    for path in (CHART / "crds").glob("*.yaml"):
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        assert len(documents) == 1
        assert documents[0]["kind"] == "CustomResourceDefinition"
