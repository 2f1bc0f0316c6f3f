"""What a container starts with, read from the API at start: env from Secrets, ConfigMaps and
the pod's own fields, and Secret volumes. A missing Secret or key fails the start the way a
real kubelet reports it (CreateContainerConfigError for env, ContainerCreating + FailedMount
for volumes), and the start goes through once the object is fixed."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from tests.integration.kubelet.pods import (
    KubeletFactory,
    advance,
    container,
    create_pod,
    is_running,
    phase,
    pod_manifest,
    state_of,
    wait_event,
    wait_pod,
    waiting_reason,
)

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import ContainerRun, ContainerRuntime
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import CONFIG_MAP, POD, SECRET


class Recorder:
    """A program that remembers the environment and files of each start, then runs on."""

    def __init__(self) -> None:
        self.runs: list[ContainerRun] = []

    async def __call__(self, run: ContainerRun) -> int:
        self.runs.append(run)
        await run.stop.wait()
        return 0


def b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


async def create_secret(
    client: KubeClient, namespace: str, name: str, data: Mapping[str, str]
) -> None:
    body = {"metadata": {"name": name}, "data": {k: b64(v) for k, v in data.items()}}
    await client.create(SECRET, body, namespace=namespace)


def jit_env() -> dict[str, object]:
    return {
        "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
        "valueFrom": {"secretKeyRef": {"name": "runner-jit", "key": "jitToken"}},
    }


async def test_secret_key_ref_failures_are_create_container_config_errors(
    client: KubeClient, namespace: str, start_kubelet: KubeletFactory, clock: ManualClock
) -> None:
    program = Recorder()
    async with start_kubelet(runtime=ContainerRuntime(default=program)):
        manifest = pod_manifest("runner", containers=[container("runner", env=[jit_env()])])
        await create_pod(client, namespace, manifest)

        pod = await wait_pod(
            client,
            namespace,
            "runner",
            lambda p: waiting_reason(p, "runner") == "CreateContainerConfigError",
            "CreateContainerConfigError",
        )
        assert state_of(pod, "runner")[1]["message"] == 'secret "runner-jit" not found'
        assert phase(pod) == "Pending"

        await create_secret(client, namespace, "runner-jit", {"runnerName": "x"})
        await advance(clock, 10)
        pod = await wait_pod(
            client,
            namespace,
            "runner",
            lambda p: "couldn't find key" in str(state_of(p, "runner")[1].get("message")),
            "missing key reported",
        )
        assert state_of(pod, "runner")[1] == {
            "reason": "CreateContainerConfigError",
            "message": f"couldn't find key jitToken in Secret {namespace}/runner-jit",
        }
        assert program.runs == []

        await client.patch_merge(
            SECRET, ObjectKey(namespace, "runner-jit"), {"data": {"jitToken": b64("jit-value")}}
        )
        await advance(clock, 10)
        await wait_pod(client, namespace, "runner", lambda p: is_running(p, "runner"), "running")
        assert len(program.runs) == 1
        assert program.runs[0].env["ACTIONS_RUNNER_INPUT_JITCONFIG"] == "jit-value"
        assert "jit-value" not in repr(program.runs[0])

        await wait_event(client, namespace, "Failed", 'Error: secret "runner-jit" not found')


async def test_env_from_config_maps_fields_and_references(
    client: KubeClient, namespace: str, start_kubelet: KubeletFactory
) -> None:
    program = Recorder()
    async with start_kubelet(runtime=ContainerRuntime(default=program)):
        await client.create(
            CONFIG_MAP,
            {"metadata": {"name": "settings"}, "data": {"LEVEL": "debug", "REGION": "eu"}},
            namespace=namespace,
        )
        await create_secret(client, namespace, "creds", {"user": "alice"})
        env = [
            {"name": "GREETING", "value": "hello"},
            {"name": "MESSAGE", "value": "$(GREETING) $(USER_NAME) $(UNDEFINED) $$(GREETING)"},
            {"name": "USER_NAME", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user"}}},
            {"name": "LATE", "value": "$(USER_NAME)"},
            {
                "name": "LEVEL_COPY",
                "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "LEVEL"}},
            },
            {
                "name": "OPTIONAL",
                "valueFrom": {
                    "secretKeyRef": {"name": "nope", "key": "k", "optional": True},
                },
            },
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {
                "name": "TEAM",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['team']"}},
            },
        ]
        manifest = pod_manifest(
            "app",
            labels={"sim": "yes", "team": "infra"},
            containers=[
                container(
                    env=env, envFrom=[{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}]
                )
            ],
        )
        await create_pod(client, namespace, manifest)
        pod = await wait_pod(client, namespace, "app", is_running, "running")
        seen = program.runs[0].env
        assert seen["GREETING"] == "hello"
        assert seen["MESSAGE"] == "hello $(USER_NAME) $(UNDEFINED) $(GREETING)"
        assert seen["LATE"] == "alice"
        assert seen["USER_NAME"] == "alice"
        assert seen["LEVEL_COPY"] == "debug"
        assert seen["CFG_LEVEL"] == "debug"
        assert seen["CFG_REGION"] == "eu"
        assert "OPTIONAL" not in seen
        assert seen["POD_NAME"] == "app"
        assert seen["POD_NS"] == namespace
        assert seen["NODE"] == "sim-node-1"
        assert seen["POD_IP"] == pod.status["podIP"]
        assert seen["HOST_IP"] == pod.status["hostIP"]
        assert seen["TEAM"] == "infra"
        assert seen["HOSTNAME"] == "app"


async def test_a_missing_config_map_key_is_reported_with_its_kind(
    client: KubeClient, namespace: str, kubelet: object
) -> None:
    await client.create(CONFIG_MAP, {"metadata": {"name": "cm"}, "data": {}}, namespace=namespace)
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "missing"}}}]
    await create_pod(client, namespace, pod_manifest("cfg", containers=[container(env=env)]))
    pod = await wait_pod(
        client,
        namespace,
        "cfg",
        lambda p: waiting_reason(p, "main") == "CreateContainerConfigError",
        "config error",
    )
    assert state_of(pod, "main")[1]["message"] == (
        f"couldn't find key missing in ConfigMap {namespace}/cm"
    )


async def test_secret_volumes_are_mounted_and_a_missing_one_blocks_in_container_creating(
    client: KubeClient, namespace: str, start_kubelet: KubeletFactory, clock: ManualClock
) -> None:
    program = Recorder()
    async with start_kubelet(runtime=ContainerRuntime(default=program)):
        volumes = [
            {"name": "config", "secret": {"secretName": "listener-config"}},
            {
                "name": "picked",
                "secret": {
                    "secretName": "listener-config",
                    "items": [{"key": "config.json", "path": "nested/settings.json"}],
                },
            },
        ]
        mounts = [
            {"name": "config", "mountPath": "/etc/gha-listener", "readOnly": True},
            {"name": "picked", "mountPath": "/opt/picked"},
        ]
        manifest = pod_manifest(
            "listener", containers=[container(volumeMounts=mounts)], volumes=volumes
        )
        await create_pod(client, namespace, manifest)
        pod = await wait_pod(
            client, namespace, "listener", lambda p: "containerStatuses" in p.status, "status"
        )
        assert waiting_reason(pod, "main") == "ContainerCreating"
        await wait_event(
            client,
            namespace,
            "FailedMount",
            'MountVolume.SetUp failed for volume "config" : secret "listener-config" not found',
        )

        await create_secret(client, namespace, "listener-config", {"other": "1"})
        await advance(clock, 10)  # the mount is retried: now the items key is missing
        await wait_event(
            client,
            namespace,
            "FailedMount",
            'MountVolume.SetUp failed for volume "picked" : '
            "secret references non-existent secret key: config.json",
        )
        pod = await client.get(POD, ObjectKey(namespace, "listener"))
        assert waiting_reason(pod, "main") == "ContainerCreating"  # never a config error
        assert phase(pod) == "Pending"
        assert program.runs == []

        await client.patch_merge(
            SECRET,
            ObjectKey(namespace, "listener-config"),
            {"data": {"config.json": b64('{"a": 1}')}},
        )
        await advance(clock, 10)
        await wait_pod(client, namespace, "listener", is_running, "running")
        files = program.runs[0].files
        assert files["/etc/gha-listener/config.json"] == b'{"a": 1}'
        assert files["/etc/gha-listener/other"] == b"1"
        assert files["/opt/picked/nested/settings.json"] == b'{"a": 1}'
        assert "/opt/picked/other" not in files
