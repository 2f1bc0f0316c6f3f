"""Environment and volume resolution against an in-memory set of Secrets and ConfigMaps: the
values a container gets and the kubelet's messages when something is missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scaleset.embedded.kubelet.config import (
    ContainerConfigError,
    SourceKind,
    VolumeMountError,
    container_files,
    decode_data,
    expand,
    field_value,
    resolve_environment,
    resolve_volumes,
)


class Objects:
    """A ``SourceReader`` over dicts; counts reads (each container start reads afresh)."""

    def __init__(self, objects: dict[tuple[SourceKind, str], dict[str, bytes]]) -> None:
        self.objects = objects
        self.reads = 0

    async def read(self, kind: SourceKind, namespace: str, name: str) -> Mapping[str, bytes] | None:
        assert namespace == "ns"
        self.reads += 1
        return self.objects.get((kind, name))


POD: dict[str, Any] = {
    "metadata": {
        "name": "runner-1",
        "namespace": "ns",
        "uid": "u-1",
        "labels": {"app": "x", "tier": "ci"},
        "annotations": {"note": "hi"},
    },
    "spec": {"nodeName": "sim-node-1", "serviceAccountName": "runner"},
    "status": {"hostIP": "10.0.0.10", "podIP": "10.64.0.2", "podIPs": [{"ip": "10.64.0.2"}]},
}


async def test_secret_key_ref_messages_match_the_kubelet() -> None:
    container = {
        "env": [{"name": "JIT", "valueFrom": {"secretKeyRef": {"name": "jit", "key": "jitToken"}}}]
    }
    with pytest.raises(ContainerConfigError) as missing:
        await resolve_environment(POD, container, Objects({}))
    assert missing.value.message == 'secret "jit" not found'
    with pytest.raises(ContainerConfigError) as no_key:
        await resolve_environment(POD, container, Objects({("Secret", "jit"): {"other": b"1"}}))
    assert no_key.value.message == "couldn't find key jitToken in Secret ns/jit"
    env = await resolve_environment(
        POD, container, Objects({("Secret", "jit"): {"jitToken": b"s3cr3t"}})
    )
    assert env["JIT"] == "s3cr3t"
    assert "s3cr3t" not in str(no_key.value)


async def test_config_map_refs_and_env_from() -> None:
    objects = Objects({("ConfigMap", "cm"): {"A": b"1", "B": b"2"}})
    container = {
        "envFrom": [
            {"configMapRef": {"name": "cm"}, "prefix": "P_"},
            {"secretRef": {"name": "absent", "optional": True}},
        ],
        "env": [
            {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "A"}}},
            {"name": "P_B", "value": "override"},
        ],
    }
    env = await resolve_environment(POD, container, objects)
    assert env == {"HOSTNAME": "runner-1", "P_A": "1", "P_B": "override", "A": "1"}
    with pytest.raises(ContainerConfigError) as caught:
        await resolve_environment(
            POD, {"envFrom": [{"configMapRef": {"name": "nope"}}]}, Objects({})
        )
    assert caught.value.message == 'configmap "nope" not found'
    bad = {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "Z"}}}]}
    with pytest.raises(ContainerConfigError) as missing_key:
        await resolve_environment(POD, bad, objects)
    assert missing_key.value.message == "couldn't find key Z in ConfigMap ns/cm"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("metadata.name", "runner-1"),
        ("metadata.namespace", "ns"),
        ("metadata.uid", "u-1"),
        ("metadata.labels['tier']", "ci"),
        ("metadata.annotations['note']", "hi"),
        ("metadata.labels['absent']", ""),
        ("metadata.labels", 'app="x"\ntier="ci"'),
        ("spec.nodeName", "sim-node-1"),
        ("spec.serviceAccountName", "runner"),
        ("status.hostIP", "10.0.0.10"),
        ("status.podIP", "10.64.0.2"),
        ("status.podIPs", "10.64.0.2"),
    ],
)
def test_field_refs(path: str, value: str) -> None:
    assert field_value(POD, path) == value


def test_an_unsupported_field_path_fails_the_start() -> None:
    with pytest.raises(ContainerConfigError, match=r"unsupported fieldPath: spec\.containers"):
        field_value(POD, "spec.containers")


async def test_resource_field_refs_are_not_supported() -> None:
    container = {"env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "cpu"}}}]}
    with pytest.raises(ContainerConfigError, match="unsupported valueFrom"):
        await resolve_environment(POD, container, Objects({}))


def test_references_expand_like_the_kubelet() -> None:
    defined = {"A": "1", "B": "two"}
    assert expand("$(A)-$(B)", defined) == "1-two"
    assert expand("$(C) stays", defined) == "$(C) stays"
    assert expand("$$(A) escaped, $$ dollar", defined) == "$(A) escaped, $ dollar"
    assert expand("no refs $A", defined) == "no refs $A"


async def test_volumes_become_files_and_failures_are_failed_mounts() -> None:
    pod = {
        **POD,
        "spec": {
            "volumes": [
                {"name": "all", "secret": {"secretName": "s"}},
                {
                    "name": "some",
                    "configMap": {"name": "c", "items": [{"key": "k", "path": "d/f"}]},
                },
                {"name": "opt", "secret": {"secretName": "absent", "optional": True}},
                {"name": "scratch", "emptyDir": {}},
                {
                    "name": "proj",
                    "projected": {
                        "sources": [{"secret": {"name": "s"}}, {"configMap": {"name": "c"}}]
                    },
                },
            ]
        },
    }
    objects = Objects({("Secret", "s"): {"a": b"A", "b": b"B"}, ("ConfigMap", "c"): {"k": b"K"}})
    volumes = await resolve_volumes(pod, objects)
    assert volumes == {
        "all": {"a": b"A", "b": b"B"},
        "some": {"d/f": b"K"},
        "opt": {},
        "scratch": {},
        "proj": {"a": b"A", "b": b"B", "k": b"K"},
    }
    files = container_files(
        {
            "volumeMounts": [
                {"name": "all", "mountPath": "/etc/s/"},
                {"name": "some", "mountPath": "/etc/c"},
                {"name": "all", "mountPath": "/single", "subPath": "a"},
                {"name": "all", "mountPath": "/nothing", "subPath": "zzz"},
            ]
        },
        volumes,
    )
    assert files == {
        "/etc/s/a": b"A",
        "/etc/s/b": b"B",
        "/etc/c/d/f": b"K",
        "/single": b"A",
    }

    with pytest.raises(VolumeMountError) as missing:
        await resolve_volumes(pod, Objects({("ConfigMap", "c"): {"k": b"K"}}))
    assert (
        missing.value.message == 'MountVolume.SetUp failed for volume "all" : secret "s" not found'
    )
    with pytest.raises(VolumeMountError) as no_key:
        await resolve_volumes(pod, Objects({("Secret", "s"): {}, ("ConfigMap", "c"): {}}))
    assert no_key.value.message == (
        'MountVolume.SetUp failed for volume "some" : '
        "configmap references non-existent config key: k"
    )


def test_decoding_secret_and_config_map_data() -> None:
    secret = {"data": {"a": "QQ==", "broken": "%%%", "n": 5}}
    assert decode_data(secret, "Secret") == {"a": b"A"}
    config_map = {"data": {"a": "text"}, "binaryData": {"b": "Qg=="}}
    assert decode_data(config_map, "ConfigMap") == {"a": b"text", "b": b"B"}
