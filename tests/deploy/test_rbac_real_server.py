"""The charts' RBAC is enough, on kube-apiserver's own authorizer: the controller manager runs a
scale set with a ServiceAccount token bound to nothing but what the two charts render.

On the real kube-apiserver (``SCALESET_TEST_KUBECONFIG``; skipped without it), in namespaces of
its own: the controller chart's RBAC (single-namespace mode, the only mode that cannot touch other
tests' scale sets on a shared server) and the runner scale set chart's manager Role are applied,
the controller's ServiceAccount gets a token (TokenRequest), and the demo system runs with the
controller manager on that token (its own start-up CRD check first). Jobs are queued; the runner
set scales up, every job succeeds, it scales back to zero — and no request of the process was
refused (``rest_client_requests_total{code="403"}`` does not move; the listener counts on its own
registry, and the demo's other clients are administrators). The listener Role the controller
creates passes the real escalation check, or the listener would never poll.
"""

from __future__ import annotations

import base64
import os
import secrets
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from prometheus_client import REGISTRY
from tests.deploy.controller_chart.rendering import TEST_IMAGE
from tests.deploy.scenario import CONTROLLER_CHART, RUNNER_SET_CHART, runner_set_values
from tests.support.helm import SOURCE, render
from tests.support.waiting import eventually

from scaleset.clock import SystemClock
from scaleset.controllers import manager_process
from scaleset.controllers.crd_check import installed_crd_problem
from scaleset.demo.system import SCALE_SET_NAME, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.devtools.real_apiserver import ENV_VAR
from scaleset.embedded.actions.model import JobState
from scaleset.kube import KubeClient
from scaleset.kube.resources import EPHEMERAL_RUNNER

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not os.environ.get(ENV_VAR), reason=f"needs the real kube-apiserver ({ENV_VAR})"
    ),
]

RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def path_of(obj: dict[str, Any]) -> str:
    kind = obj["kind"]
    namespace = obj["metadata"].get("namespace", "")
    if kind == "ServiceAccount":
        return f"/api/v1/namespaces/{namespace}/serviceaccounts"
    plural = kind.lower() + "s"
    scope = f"/namespaces/{namespace}" if kind in ("Role", "RoleBinding") else ""
    return f"/apis/rbac.authorization.k8s.io/v1{scope}/{plural}"


def forbidden_count() -> float:
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "rest_client_requests"
        for sample in metric.samples
        if sample.name == "rest_client_requests_total" and sample.labels.get("code") == "403"
    )


def admin_kubeconfig() -> dict[str, Any]:
    document = yaml.safe_load(Path(os.environ[ENV_VAR]).read_text())
    assert isinstance(document, dict)
    return document


@pytest.fixture
async def admin() -> AsyncIterator[httpx2.AsyncClient]:
    document = admin_kubeconfig()
    cluster = document["clusters"][0]["cluster"]
    user = document["users"][0]["user"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    async with httpx2.AsyncClient(
        base_url=cluster["server"],
        headers={"Authorization": f"Bearer {user['token']}"},
        verify=ssl.create_default_context(cadata=ca),
        timeout=30.0,
        trust_env=False,
    ) as http:
        yield http


def token_kubeconfig(token: str, path: Path) -> Path:
    """The admin kubeconfig's cluster with ``token`` as the only credential."""
    document = admin_kubeconfig()
    document["users"] = [{"name": "controller", "user": {"token": token}}]
    for context in document["contexts"]:
        context["context"]["user"] = "controller"
    path.write_text(yaml.safe_dump(document))
    path.chmod(0o600)
    return path


async def test_the_controller_scales_a_runner_set_with_only_the_charts_rbac(
    admin: httpx2.AsyncClient, tmp_path: Path
) -> None:
    suffix = secrets.token_hex(3)
    controller_ns, runner_ns, release = f"rbac-sys-{suffix}", f"rbac-run-{suffix}", f"rb{suffix}"
    for namespace in (controller_ns, runner_ns):
        created = await admin.post("/api/v1/namespaces", json={"metadata": {"name": namespace}})
        assert created.status_code == 201, created.text
    controller = render(
        CONTROLLER_CHART,
        {"flags": {"watchSingleNamespace": runner_ns}, "image": TEST_IMAGE},
        name=release,
        namespace=controller_ns,
    )
    account = next(o for o in controller if o["kind"] == "ServiceAccount")["metadata"]["name"]
    runner_set = render(
        RUNNER_SET_CHART,
        runner_set_values(account, controller_ns),
        name=SCALE_SET_NAME,
        namespace=runner_ns,
    )
    applied = [o for o in (*controller, *runner_set) if o["kind"] in RBAC_KINDS]
    cluster_scoped: list[str] = []
    try:
        for obj in applied:
            obj.pop(SOURCE, None)
            answer = await admin.post(path_of(obj), json=obj)
            assert answer.status_code == 201, answer.text
            if obj["kind"].startswith("Cluster"):
                cluster_scoped.append(f"{path_of(obj)}/{obj['metadata']['name']}")
        requested = await admin.post(
            f"/api/v1/namespaces/{controller_ns}/serviceaccounts/{account}/token",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
        assert requested.status_code == 201, requested.text
        kubeconfig = token_kubeconfig(requested.json()["status"]["token"], tmp_path / "kc")
        await run_as_the_controller(kubeconfig, controller_ns, runner_ns)
    finally:
        for path in cluster_scoped:
            await admin.delete(path)


async def run_as_the_controller(kubeconfig: Path, controller_ns: str, runner_ns: str) -> None:
    options = manager_process.ControllerOptions(
        controller_namespace=controller_ns, listener_image="x", watch_namespaces=(runner_ns,)
    )
    probe = KubeClient.from_kubeconfig(
        kubeconfig, settings=manager_process.client_settings(options)
    )
    try:

        async def bound() -> bool:  # the authorizer's RBAC cache catches up
            try:
                await probe.list(EPHEMERAL_RUNNER, namespace=runner_ns)
            except Exception:
                return False
            return True

        await eventually(bound, within=30, what="the chart's RBAC in force", interval=0.2)
        assert await installed_crd_problem(probe) is None  # what serve() checks first
    finally:
        await probe.close()

    clock = SystemClock()
    system = DemoSystem(
        clock=clock,
        truth=Truth(zombie_bound=15.0),
        min_runners=0,
        max_runners=3,
        grace=3.0,
        kubeconfig=Path(os.environ[ENV_VAR]),
        started_at=clock.monotonic(),
        controller_namespace=controller_ns,
        runner_namespace=runner_ns,
        controller_kubeconfig=kubeconfig,
    )
    refused_before = forbidden_count()
    await system.start()
    try:
        assert system.fake is not None
        assert system.client is not None
        control, client = system.fake.control, system.client
        await control.wait_for(
            lambda t: any(s.polls > 0 for s in t.sessions), within=90, what="listener session"
        )
        jobs = [control.queue_job([SCALE_SET_NAME], duration_seconds=1.0) for _ in range(3)]
        await eventually(
            lambda: all(control.snapshot().job(j).state == JobState.COMPLETED for j in jobs),
            within=120,
            what="three jobs run on runners the controller made",
            interval=0.2,
        )
        results = {(control.snapshot().job(j).result or "").lower() for j in jobs}
        assert results <= {"succeeded", "success"}, results

        async def scaled_down() -> bool:
            listed = await client.list(EPHEMERAL_RUNNER, namespace=runner_ns)
            return not listed.items

        await eventually(scaled_down, within=90, what="back to zero runners", interval=0.2)
        assert system.controller_failed() is None
    finally:
        await system.stop()
    assert forbidden_count() == refused_before, "the controller was refused a request"
