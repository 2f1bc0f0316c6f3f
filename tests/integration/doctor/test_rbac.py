"""``deploy/rbac/doctor-clusterrole.yaml`` on a real kube-apiserver: ``scaleset doctor`` run with
a ServiceAccount token bound to nothing but that ClusterRole completes without one 403, reports
exactly what it reports as admin, and the (verb, group, resource) it used are exactly what the
ClusterRole grants — no grant missing, none unused. Real kube-apiserver only: the embedded
server serves no ClusterRoles.

The token comes from the TokenRequest API and reaches the doctor the way a person's would: a
kubeconfig file passed to ``scaleset doctor --kubeconfig``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from tests.integration.doctor.world import Cluster
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret
from tests.support.waiting import eventually

from scaleset.api.listener_rbac import granted_accesses
from scaleset.clock import SystemClock
from scaleset.doctor.diagnose import diagnose
from scaleset.doctor.main import run_doctor
from scaleset.kube import Forbidden, KubeClient, ObjectKey
from scaleset.kube.access import AccessRecorder
from scaleset.kube.resources import EPHEMERAL_RUNNER, SERVICE_ACCOUNT

MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "rbac" / "doctor-clusterrole.yaml"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture(autouse=True)
def real_only(kube_backend: KubeBackend) -> None:
    if kube_backend.name != "real":
        pytest.skip("the embedded API server serves no ClusterRoles")


def doctor_rules() -> list[dict[str, Any]]:
    [role] = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    assert role["kind"] == "ClusterRole"
    rules: list[dict[str, Any]] = role["rules"]
    return rules


@asynccontextmanager
async def bound_cluster_role(
    http: httpx2.AsyncClient, namespace: str, account: str
) -> AsyncIterator[None]:
    """The manifest's ClusterRole (under a unique name) bound cluster-wide to the account."""
    name = f"scaleset-doctor-test-{secrets.token_hex(4)}"
    created = [
        (f"{RBAC}/clusterroles", {"metadata": {"name": name}, "rules": doctor_rules()}),
        (
            f"{RBAC}/clusterrolebindings",
            {
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            },
        ),
    ]
    try:
        for path, body in created:
            answer = await http.post(path, json=body)
            assert answer.status_code == 201, answer.text
        yield
    finally:
        for path, _ in created:
            await http.delete(f"{path}/{name}")


async def token_kubeconfig(
    backend: KubeBackend, client: KubeClient, namespace: str, account: str, path: Path
) -> Path:
    """A kubeconfig for ``account`` with a token from the TokenRequest API."""
    await client.create(SERVICE_ACCOUNT, {"metadata": {"name": account, "namespace": namespace}})
    answer = await client.create_subresource(
        SERVICE_ACCOUNT,
        ObjectKey(namespace, account),
        "token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    token = register_secret(str(answer["status"]["token"]))
    return write_kubeconfig(backend, account, token, path)


def write_kubeconfig(backend: KubeBackend, account: str, token: str, path: Path) -> Path:
    admin = yaml.safe_load(backend.kubeconfig_path.read_text())
    cluster = admin["clusters"][0]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": account, "user": {"token": token}}],
                "contexts": [
                    {"name": account, "context": {"cluster": cluster["name"], "user": account}}
                ],
                "current-context": account,
            }
        )
    )
    return path


def cli(kubeconfig: Path, namespace: str) -> tuple[int, dict[str, Any]]:
    """``scaleset doctor --kubeconfig K --namespace N --output json`` (no GitHub token)."""
    printed: list[str] = []
    code = run_doctor(
        kubeconfig=kubeconfig, namespace=namespace, output="json", environ={}, echo=printed.append
    )
    return code, json.loads("".join(printed))


async def test_the_doctor_cluster_role_is_all_the_doctor_needs(
    cluster: Cluster,
    kube_backend: KubeBackend,
    kube_http: httpx2.AsyncClient,
    tmp_path: Path,
) -> None:
    ns = cluster.namespace
    # something to find: a Failed runner holding its slot and two listeners for one scale set;
    # a controller whose Lease the doctor reads
    await cluster.runner("set-runner-failed", phase="Failed", reason="TooManyPodFailures")
    await cluster.listener("arc-listener")
    await cluster.listener("scaleset-listener")
    await cluster.controller()
    await cluster.lease(renewed=datetime.now(UTC))
    kubeconfig = await token_kubeconfig(
        kube_backend, cluster.client, ns, "doctor", tmp_path / "doctor.kubeconfig"
    )
    async with bound_cluster_role(kube_http, ns, "doctor"):
        probe = KubeClient.from_kubeconfig(kubeconfig)
        try:

            async def in_force() -> bool:
                try:
                    await probe.list(EPHEMERAL_RUNNER, namespace=ns)
                except Forbidden:
                    return False
                return True

            await eventually(in_force, within=15.0, what="the ClusterRoleBinding in force")
        finally:
            await probe.close()
        access = AccessRecorder()
        scoped = KubeClient.from_kubeconfig(kubeconfig, access=access)
        try:
            as_doctor = await diagnose(scoped, SystemClock(), namespace=ns)
        finally:
            await scoped.close()
        as_admin = await diagnose(cluster.client, SystemClock(), namespace=ns)
        code, printed = await asyncio.to_thread(cli, kubeconfig, ns)
        admin_code, admin_printed = await asyncio.to_thread(cli, kube_backend.kubeconfig_path, ns)

    assert [s.check for s in as_doctor.skipped] == ["registration-missing"], as_doctor.skipped
    assert "Forbidden" not in json.dumps([s.why for s in as_doctor.skipped])
    assert as_doctor == as_admin
    assert {f.check for f in as_doctor.findings} >= {
        "terminal-holding-slot",
        "listener-session-conflict",
    }
    assert (code, printed) == (admin_code, admin_printed)
    assert code == 1
    used = {(a.verb, a.group, a.rbac_resource) for a in access.accesses()}
    granted = granted_accesses(doctor_rules())
    assert used == granted, (
        f"granted, unused: {sorted(granted - used)}; used, not granted: {sorted(used - granted)}"
    )


async def test_a_doctor_refused_every_read_says_so_and_exits_3(
    cluster: Cluster, kube_backend: KubeBackend, tmp_path: Path
) -> None:
    """A ServiceAccount bound to nothing: every read is Forbidden — not "healthy"."""
    await cluster.runner("set-runner-failed", phase="Failed")
    kubeconfig = await token_kubeconfig(
        kube_backend, cluster.client, cluster.namespace, "nobody", tmp_path / "nobody.kubeconfig"
    )
    printed: list[str] = []
    code = await asyncio.to_thread(
        run_doctor,
        kubeconfig=kubeconfig,
        namespace=cluster.namespace,
        output="table",
        environ={},
        echo=printed.append,
    )
    assert code == 3
    [line] = "\n".join(printed).splitlines()
    assert line.startswith("could not look: every read was refused (Forbidden (403)): ")
