"""The EphemeralRunner a set creates, as ARC builds it."""

from __future__ import annotations

from typing import Any

from scaleset.api import keys
from scaleset.controllers.ephemeralrunnerset.runner_body import expected_runner_spec, runner_body
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET


def runner_set(**spec: Any) -> KubeObject:
    return KubeObject(
        EPHEMERAL_RUNNER_SET,
        {
            "metadata": {
                "name": "arc",
                "namespace": "ci",
                "uid": "uid-arc",
                "labels": {keys.COMPONENT_LABEL: keys.COMPONENT_RUNNER_SET, "team": "a"},
                "annotations": {
                    keys.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc",
                    "kubectl.kubernetes.io/last-applied-configuration": "{}",
                    "scaleset.dev/listener-state": '{"sessionId": "x"}',
                    keys.SPEC_HASH_ANNOTATION: "abc",
                },
            },
            "spec": {
                "replicas": 2,
                "patchID": 4,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": "https://github.com/acme",
                    "runnerScaleSetId": 7,
                    "futureField": {"kept": True},
                    "spec": {"containers": [{"name": "runner", "image": "r:1"}]},
                },
                **spec,
            },
        },
    )


def test_a_runner_carries_the_sets_metadata_patch_id_finalizers_and_owner() -> None:
    extra = {"labels": {"team": "b", "x": "1"}, "annotations": {"cost": "42"}}
    body = runner_body(runner_set(ephemeralRunnerMetadata=extra), patch_id=4)
    meta = body["metadata"]
    assert meta["generateName"] == "arc-runner-"
    assert meta["namespace"] == "ci"
    assert meta["labels"] == {keys.COMPONENT_LABEL: keys.COMPONENT_RUNNER, "team": "b", "x": "1"}
    assert meta["annotations"] == {
        keys.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc",
        keys.PATCH_ID_ANNOTATION: "4",
        "cost": "42",
    }
    assert meta["finalizers"] == [
        keys.EPHEMERAL_RUNNER_FINALIZER,
        keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER,
    ]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": keys.API_VERSION,
            "kind": "EphemeralRunnerSet",
            "name": "arc",
            "uid": "uid-arc",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert body["spec"]["futureField"] == {"kept": True}, "unknown fields travel as they are"
    assert "proxySecretRef" not in body["spec"]


def test_with_a_proxy_every_runner_names_the_sets_proxy_secret() -> None:
    rs = runner_set()
    rs.raw["spec"]["ephemeralRunnerSpec"]["proxy"] = {"http": {"url": "http://p:1"}}
    spec = expected_runner_spec(rs)
    assert spec["proxySecretRef"].startswith("arc-")
    assert spec["proxySecretRef"].endswith("-runner-proxy")
    assert runner_body(rs, 1)["spec"] == spec
