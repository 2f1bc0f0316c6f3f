"""The real kube-apiserver harness end to end: start/stop lifecycle (idempotent, stops only its
own processes) and impersonation under real RBAC.

The lifecycle test needs the cached kube-apiserver build (``scaleset dev real-apiserver build``;
``scripts/test`` makes it); the impersonation test needs a running harness
(``SCALESET_TEST_KUBECONFIG``). Each is skipped with that reason otherwise."""

from __future__ import annotations

import json
import os
import ssl
from pathlib import Path

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.rbac_v1 import PolicyRule, RoleRef, Subject
from lightkube.resources.core_v1 import ConfigMap, Namespace, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import Role, RoleBinding
from tests.plugins.kube_backends import KubeBackend, namespace_name
from tests.support.waiting import eventually

from scaleset.devtools.build import (
    DEBIAN_GO_BIN,
    built_with_go,
    cached_binary,
    debian_go_version,
    default_cache,
)
from scaleset.devtools.procs import is_alive, read_record
from scaleset.devtools.real_apiserver import (
    ENV_VAR,
    HarnessError,
    StatePaths,
    read_state,
    start,
    status,
    stop,
)
from scaleset.devtools.transports import ServiceAccountRef

RBAC_PROPAGATION_BOUND_S = 15.0


def no_report(_: str) -> None:
    pass


@pytest.mark.skipif(
    cached_binary(default_cache()) is None,
    reason="kube-apiserver is not built yet (scaleset dev real-apiserver build)",
)
def test_start_is_idempotent_and_stop_ends_exactly_its_processes(tmp_path: Path) -> None:
    state_dir = tmp_path / "harness"
    paths = StatePaths(state_dir)
    messages: list[str] = []

    first = start(state_dir, messages.append)
    try:
        records = [read_record(paths.etcd_pid), read_record(paths.apiserver_pid)]
        again = start(state_dir, messages.append)
        assert again == first
        assert [read_record(paths.etcd_pid), read_record(paths.apiserver_pid)] == records
        assert status(state_dir) == first
        assert first.url.startswith("https://127.0.0.1:")
        assert any("already running" in m for m in messages)
        state = read_state(paths)
        assert state is not None
        etcd_data = Path(state["etcd_data"])
        assert etcd_data.is_dir()
        assert_admits_pods_as_production_does(first.kubeconfig)
    finally:
        stopped = stop(state_dir, no_report)

    assert stopped
    assert all(r is not None and not is_alive(r) for r in records)
    assert status(state_dir) is None
    assert not etcd_data.exists()
    assert not paths.kubeconfig.exists()
    assert stop(state_dir, no_report) is False


@pytest.mark.skipif(
    cached_binary(default_cache()) is None or not (DEBIAN_GO_BIN / "go").is_file(),
    reason="kube-apiserver is not built yet (scaleset dev real-apiserver build)",
)
def test_the_cached_kube_apiserver_was_built_by_debians_go() -> None:
    binary = cached_binary(default_cache())
    assert binary is not None

    assert built_with_go(binary) == debian_go_version()


def assert_admits_pods_as_production_does(kubeconfig: Path) -> None:
    """The started server defaults a pod's ServiceAccount (admission on) in `default`, where the
    harness created what the controller-manager would: the ServiceAccount and kube-root-ca.crt."""
    backend = KubeBackend(name="real", kubeconfig_path=kubeconfig)
    config = backend.config()
    assert config.user is not None
    assert config.user.token is not None
    with httpx2.Client(
        base_url=config.cluster.server,
        headers={"Authorization": f"Bearer {config.user.token}"},
        verify=ssl.create_default_context(cadata=backend.cluster_ca_pem()),
        timeout=30.0,
    ) as client:
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        admitted = client.post("/api/v1/namespaces/default/pods?dryRun=All", json=pod)
        root_ca = client.get("/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt")

    assert admitted.status_code == 201, admitted.text
    assert admitted.json()["spec"]["serviceAccountName"] == "default"
    assert root_ca.json()["data"] == {"ca.crt": backend.cluster_ca_pem()}


def test_stop_of_a_missing_harness_is_fine(tmp_path: Path) -> None:
    assert stop(tmp_path / "never-started", no_report) is False
    assert status(tmp_path / "never-started") is None


def test_stop_leaves_a_process_whose_pid_was_reused(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    # a pid file naming this very test process, but recorded from another program
    paths.etcd_pid.write_text(
        json.dumps({"pid": os.getpid(), "start_ticks": 1, "executable": "/usr/bin/etcd"})
    )

    assert stop(tmp_path, no_report) is False
    assert not paths.etcd_pid.exists()


@pytest.fixture
def real_backend() -> KubeBackend:
    kubeconfig = os.environ.get(ENV_VAR)
    if not kubeconfig:
        pytest.skip(f"needs the real kube-apiserver harness ({ENV_VAR} is not set)")
    return KubeBackend(name="real", kubeconfig_path=Path(kubeconfig))


async def list_config_maps(client: AsyncClient, namespace: str) -> list[str]:
    return [
        cm.metadata.name
        async for cm in client.list(ConfigMap, namespace=namespace)
        if cm.metadata and cm.metadata.name
    ]


async def test_impersonated_service_account_is_held_to_its_rbac(real_backend: KubeBackend) -> None:
    namespace = namespace_name("impersonation")
    account = ServiceAccountRef(namespace, "scaleset-controller")
    async with real_backend.client() as admin, real_backend.client(impersonate=account) as sa:
        await admin.create(Namespace(metadata=ObjectMeta(name=namespace)))
        await admin.create(
            ServiceAccount(metadata=ObjectMeta(name=account.name, namespace=namespace))
        )

        with pytest.raises(ApiError) as denied:
            await list_config_maps(sa, namespace)
        assert (denied.value.status.code, denied.value.status.reason) == (403, "Forbidden")
        assert account.username in (denied.value.status.message or "")

        await admin.create(
            Role(
                metadata=ObjectMeta(name="read-config", namespace=namespace),
                rules=[PolicyRule(apiGroups=[""], resources=["configmaps"], verbs=["get", "list"])],
            )
        )
        await admin.create(
            RoleBinding(
                metadata=ObjectMeta(name="read-config", namespace=namespace),
                roleRef=RoleRef(
                    apiGroup="rbac.authorization.k8s.io", kind="Role", name="read-config"
                ),
                subjects=[Subject(kind="ServiceAccount", name=account.name, namespace=namespace)],
            )
        )

        listed: list[list[str]] = []

        async def granted() -> bool:
            # the authorizer sees the new binding through its informer: wait for it, bounded
            try:
                listed.append(await list_config_maps(sa, namespace))
            except ApiError as error:
                if error.status.code != 403:
                    raise
                return False
            return True

        await eventually(
            granted, within=RBAC_PROPAGATION_BOUND_S, interval=0.1, what="the RoleBinding in force"
        )
        assert listed == [[]]
        with pytest.raises(ApiError) as write_denied:
            await sa.create(ConfigMap(metadata=ObjectMeta(name="c", namespace=namespace)))
        assert write_denied.value.status.code == 403
        await admin.delete(Namespace, namespace)


@pytest.mark.skipif(
    cached_binary(default_cache()) is None,
    reason="kube-apiserver is not built yet (scaleset dev real-apiserver build)",
)
def test_start_that_fails_names_the_log_and_leaves_nothing_running(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "harness")
    spawned: list[str] = []

    with pytest.raises(HarnessError) as caught:
        start(paths.root, spawned.append, ready_timeout_s=0.0)

    assert str(paths.apiserver_log) in str(caught.value)
    assert "not ready" in str(caught.value)
    assert not paths.etcd_pid.exists()
    assert not paths.apiserver_pid.exists()
    # kube-apiserver may have exited by itself before the stop (a loaded CI machine: it gives up
    # on etcd); what matters is that nothing of it is left, which the pid files show
    assert any(m.startswith("stopped etcd") for m in spawned)
    assert paths.apiserver_log.exists()
