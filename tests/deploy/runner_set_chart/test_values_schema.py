"""values.schema.json of the runner scale set chart: a value of a type the chart cannot use is
refused by Helm with an error naming its key path, and every value ARC 0.14.2's chart accepts
still renders.

The schema only checks types, and only where ARC's own templates fail on another type (a field
read out of a string, a string function given a number, ``eq`` between a number and a string) or
render a field Kubernetes refuses on apply (a list where the CRD has a string). Checks of values
(whole numbers, lengths, required keys) stay in the templates, whose messages say what to set;
``cases.ERROR_CASES`` keeps them. Every values file in ``values/`` rendering as ARC's does is
``test_arc_parity.py``.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import helm_python
import pytest
from tests.deploy.runner_set_chart.cases import BASE, CHART, Case

SCHEMA_PATH = CHART / "values.schema.json"
RUNNER = {"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}


def _values(changes: dict[str, Any]) -> dict[str, Any]:
    values = copy.deepcopy(BASE)
    values.update(copy.deepcopy(changes))
    return values


def _render(changes: dict[str, Any]) -> list[dict[str, Any]]:
    return Case("schema", _values(changes)).render()


def _spec(**fields: Any) -> dict[str, Any]:
    """A template whose spec has a runner container, plus ``fields``."""
    return {"spec": {"containers": [dict(RUNNER)], **fields}}


REFUSED: list[tuple[dict[str, Any], str]] = [
    # ARC trims the URL with a string function: a number or map fails there.
    ({"githubConfigUrl": 123}, "/githubConfigUrl"),
    ({"githubConfigUrl": {"url": "https://github.com/acme"}}, "/githubConfigUrl"),
    # ARC takes the length of each label: a number has none.
    ({"scaleSetLabels": ["linux", 5]}, "/scaleSetLabels/1"),
    # A string names a Secret, a map is one; ARC reads keys out of anything else.
    ({"githubConfigSecret": 42}, "/githubConfigSecret"),
    ({"githubConfigSecret": ["not-a-real-token"]}, "/githubConfigSecret"),
    ({"proxy": "http://proxy.example.com:3128"}, "/proxy"),
    ({"proxy": {"http": "http://proxy.example.com:3128"}}, "/proxy/http"),
    ({"proxy": {"https": {"url": 3128}}}, "/proxy/https/url"),
    (
        {"proxy": {"http": {"url": "http://p:1", "credentialSecretRef": {"name": "x"}}}},
        "/proxy/http/credentialSecretRef",
    ),
    ({"proxy": {"noProxy": ["example.com", {"host": "example.org"}]}}, "/proxy/noProxy/1"),
    # ARC prints these as they are: a number or a list where the CRD has a string.
    ({"runnerGroup": ["default"]}, "/runnerGroup"),
    ({"runnerGroup": 12}, "/runnerGroup"),
    ({"runnerScaleSetName": 12}, "/runnerScaleSetName"),
    ({"githubServerTLS": "ca.crt"}, "/githubServerTLS"),
    (
        {"githubServerTLS": {"certificateFrom": {"configMapKeyRef": "certs"}}},
        "/githubServerTLS/certificateFrom/configMapKeyRef",
    ),
    (
        {"githubServerTLS": {"certificateFrom": {"configMapKeyRef": {"name": "c", "key": 1}}}},
        "/githubServerTLS/certificateFrom/configMapKeyRef/key",
    ),
    ({"keyVault": "azure_key_vault"}, "/keyVault"),
    ({"keyVault": {"type": 1}}, "/keyVault/type"),
    # ARC reads containerMode.type out of the map and compares it with strings.
    ({"containerMode": "dind"}, "/containerMode"),
    ({"containerMode": {"type": 1}}, "/containerMode/type"),
    # Without a "work" volume in the template, kubernetes mode makes the claim the volume's spec.
    (
        {"containerMode": {"type": "kubernetes", "kubernetesModeWorkVolumeClaim": "standard"}},
        "/containerMode/kubernetesModeWorkVolumeClaim",
    ),
    (
        {
            "containerMode": {"type": "kubernetes", "kubernetesModeWorkVolumeClaim": ["a"]},
            "template": _spec(volumes=[{"name": "cache", "emptyDir": {}}]),
        },
        "/containerMode/kubernetesModeWorkVolumeClaim",
    ),
    # With the chart's runner ServiceAccount, the kubernetes modes add the rules to its Role.
    (
        {
            "containerMode": {
                "type": "kubernetes-novolume",
                "kubernetesModeAdditionalRoleRules": {"apiGroups": [""], "resources": ["pods"]},
            }
        },
        "/containerMode/kubernetesModeAdditionalRoleRules",
    ),
    (
        {
            "containerMode": {
                "type": "kubernetes-novolume",
                "kubernetesModeAdditionalRoleRules": ["pods"],
            }
        },
        "/containerMode/kubernetesModeAdditionalRoleRules/0",
    ),
    ({"listenerTemplate": "listener"}, "/listenerTemplate"),
    ({"listenerMetrics": ["gha_busy_runners"]}, "/listenerMetrics"),
    # ARC reads template.spec: a string template fails there.
    ({"template": "runner"}, "/template"),
    ({"template": {"spec": "runner"}}, "/template/spec"),
    ({"template": {"metadata": {"labels": ["ci"]}, **_spec()}}, "/template/metadata/labels"),
    ({"template": {"metadata": "ci", **_spec()}}, "/template/metadata"),
    # ARC ranges over containers, volumes, env and volumeMounts (lists, or maps of the items)
    # comparing each name with strings.
    ({"template": {"spec": {"containers": ["runner"]}}}, "/template/spec/containers/0"),
    (
        {"template": {"spec": {"containers": [{**RUNNER, "name": 7}]}}},
        "/template/spec/containers/0/name",
    ),
    (
        {"template": {"spec": {"containers": [{**RUNNER, "env": {"DOCKER_HOST": "tcp://x"}}]}}},
        "/template/spec/containers/0/env/DOCKER_HOST",
    ),
    (
        {"template": {"spec": {"containers": [{**RUNNER, "env": [{"name": 1, "value": "x"}]}]}}},
        "/template/spec/containers/0/env/0/name",
    ),
    (
        {"template": {"spec": {"containers": [{**RUNNER, "volumeMounts": ["work"]}]}}},
        "/template/spec/containers/0/volumeMounts/0",
    ),
    (
        {"template": _spec(volumes=[{"name": ["work"], "emptyDir": {}}])},
        "/template/spec/volumes/0/name",
    ),
    ({"template": _spec(volumes="work")}, "/template/spec/volumes"),
    (
        {"template": {"spec": {"containers": [{**RUNNER, "volumeMounts": "work"}]}}},
        "/template/spec/containers/0/volumeMounts",
    ),
    ({"template": _spec(initContainers={"name": "init"})}, "/template/spec/initContainers"),
    ({"template": _spec(serviceAccountName=5)}, "/template/spec/serviceAccountName"),
    (
        {"controllerServiceAccount": "arc-systems/arc-gha-rs-controller"},
        "/controllerServiceAccount",
    ),
    (
        {"controllerServiceAccount": {"name": ["arc"], "namespace": "arc-systems"}},
        "/controllerServiceAccount/name",
    ),
    ({"namespaceOverride": 5}, "/namespaceOverride"),
    ({"template": _spec(serviceAccountName=["runner"])}, "/template/spec/serviceAccountName"),
    # ARC ranges over labels and annotations, quoting each value: a map or list is no label.
    ({"labels": "team=ci"}, "/labels"),
    ({"labels": {"team": {"name": "ci"}}}, "/labels/team"),
    ({"annotations": ["owner"]}, "/annotations"),
    ({"resourceMeta": "labels"}, "/resourceMeta"),
    ({"resourceMeta": {"ephemeralRunner": ["labels"]}}, "/resourceMeta/ephemeralRunner"),
    (
        {"resourceMeta": {"ephemeralRunner": {"labels": "team=ci"}}},
        "/resourceMeta/ephemeralRunner/labels",
    ),
]


@pytest.mark.parametrize(
    ("changes", "where"), REFUSED, ids=[f"{where}-{i}" for i, (_, where) in enumerate(REFUSED)]
)
def test_a_wrong_typed_value_is_refused_naming_its_key(changes: dict[str, Any], where: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as refused:
        _render(changes)
    message = str(refused.value)
    assert "values don't meet the specifications of the schema" in message
    assert f"at '{where}'" in message, message
    assert "not-a-real-token" not in message


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    # `--set githubConfigSecret.github_app_id=10` makes a number, as in ARC's chart tests; ARC
    # turns every value of the map into a string.
    (
        "app-ids-as-numbers",
        {
            "githubConfigSecret": {
                "github_app_id": 12345,
                "github_app_installation_id": 678,
                "github_app_private_key": "-----BEGIN RSA PRIVATE KEY-----\nx\n",
            }
        },
    ),
    ("secret-name", {"githubConfigSecret": "pre-defined-secret"}),
    # ARC ignores scaleSetLabels and proxy.noProxy when they are not lists.
    ("labels-not-a-list", {"scaleSetLabels": "linux"}),
    (
        "no-proxy-not-a-list",
        {"proxy": {"http": {"url": "http://p:3128"}, "noProxy": "example.com"}},
    ),
    # ARC quotes label and annotation values.
    ("number-and-boolean-labels", {"labels": {"tier": 2, "canary": True}}),
    ("number-annotations", {"annotations": {"replicas": 3}}),
    (
        "resource-meta-numbers-and-unknown-entry",
        {
            "resourceMeta": {
                "ephemeralRunner": {"labels": {"tier": 2}, "annotations": {"a": "b"}},
                "notAnObjectOfEitherChart": {"labels": {"a": "b"}},
            }
        },
    ),
    # A mode ARC does not know renders the template unchanged (ARC's tests use "none").
    ("unknown-mode", {"containerMode": {"type": "none"}}),
    # Outside the kubernetes modes ARC never reads the claim or the role rules.
    (
        "claim-unused-in-dind",
        {"containerMode": {"type": "dind", "kubernetesModeWorkVolumeClaim": "unused"}},
    ),
    (
        "role-rules-unused-without-kube-mode",
        {"containerMode": {"type": "", "kubernetesModeAdditionalRoleRules": {"unused": True}}},
    ),
    (
        "free-form-claim",
        {
            "containerMode": {
                "type": "kubernetes",
                "kubernetesModeWorkVolumeClaim": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "fast",
                    "volumeMode": "Filesystem",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
                "kubernetesModeAdditionalRoleRules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
                ],
            }
        },
    ),
    (
        "free-form-pod-template",
        {
            "template": {
                "metadata": {"labels": {"team": "ci"}, "annotations": {"a": "b"}},
                "spec": {
                    "containers": [
                        {
                            **RUNNER,
                            "env": [{"name": "A", "value": "1"}],
                            "resources": {"limits": {"cpu": 2}},
                            "aFieldOfAFutureKubernetes": {"x": [1, 2]},
                        }
                    ],
                    "nodeSelector": {"kubernetes.io/arch": "arm64"},
                    "tolerations": [{"key": "ci", "operator": "Exists"}],
                    "priorityClassName": "runners",
                    "terminationGracePeriodSeconds": 30,
                },
            }
        },
    ),
    (
        "free-form-listener",
        {
            "listenerTemplate": {
                "metadata": {"labels": {"team": "ci"}},
                "spec": {
                    "containers": [{"name": "listener", "securityContext": {"runAsUser": 1000}}]
                },
            },
            "listenerMetrics": {"gauges": {"gha_busy_runners": {"labels": ["name"]}}},
        },
    ),
    # A null map is an unset one, in ARC's chart as in ours.
    (
        "null-maps",
        {
            "proxy": None,
            "githubServerTLS": None,
            "keyVault": None,
            "containerMode": None,
            "listenerTemplate": None,
            "listenerMetrics": None,
            "labels": None,
            "annotations": None,
            "resourceMeta": None,
            "template": {"metadata": None, "spec": {"containers": [RUNNER], "volumes": None}},
        },
    ),
    ("float-runner-counts", {"minRunners": 1.0, "maxRunners": 5.0}),
    # ARC reads these behind `if`/`with`/`default`: any empty value is unset.
    (
        "empty-values-of-other-types",
        {
            "labels": [],
            "annotations": "",
            "proxy": [],
            "githubServerTLS": False,
            "keyVault": 0,
            "listenerTemplate": [],
            "listenerMetrics": "",
            "resourceMeta": {"ephemeralRunner": [], "listenerRole": ""},
            "runnerGroup": 0,
            "runnerScaleSetName": False,
            "namespaceOverride": [],
            "template": {
                "metadata": [],
                "spec": {"containers": [RUNNER], "serviceAccountName": ""},
            },
        },
    ),
    # ARC ranges over these, so a map whose values are the items works like a list.
    (
        "maps-of-items",
        {
            "containerMode": {"type": "dind"},
            "template": {
                "spec": {
                    "containers": {
                        "a-runner": {
                            **RUNNER,
                            "env": {"a": {"name": "A", "value": "1"}},
                            "volumeMounts": {"cache": {"name": "cache", "mountPath": "/cache"}},
                        },
                        "b-sidecar": {"name": "sidecar", "image": "busybox"},
                    },
                    "volumes": {"cache": {"name": "cache", "emptyDir": {}}},
                }
            },
        },
    ),
    # The claim and the role rules are only read where they are used.
    (
        "claim-unused-with-a-work-volume",
        {
            "containerMode": {"type": "kubernetes", "kubernetesModeWorkVolumeClaim": "unused"},
            "template": _spec(volumes=[{"name": "work", "emptyDir": {}}]),
        },
    ),
    (
        "claim-unused-in-novolume-mode",
        {"containerMode": {"type": "kubernetes-novolume", "kubernetesModeWorkVolumeClaim": "x"}},
    ),
    (
        "role-rules-unused-with-own-service-account",
        {
            "containerMode": {
                "type": "kubernetes-novolume",
                "kubernetesModeAdditionalRoleRules": "unused",
            },
            "template": _spec(serviceAccountName="my-runner"),
        },
    ),
    ("unknown-top-level-key", {"replicaCount": 2}),
]


@pytest.mark.parametrize(("name", "changes"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
def test_a_value_arc_accepts_renders(name: str, changes: dict[str, Any]) -> None:
    kinds = [obj["kind"] for obj in _render(changes)]
    assert "AutoscalingRunnerSet" in kinds, name


def test_a_null_template_is_an_empty_one() -> None:
    """Helm's command line drops a null value that the chart's values.yaml sets, so the default
    template is used; a renderer that keeps the null gets our sentence, not a Go nil pointer."""
    with pytest.raises(helm_python.HelmRenderError) as refused:
        _render({"template": None})
    assert str(refused.value).startswith("execution error at")
    assert 'template.spec.containers has no container named "runner"' in str(refused.value)


def test_maps_of_items_render_as_lists_in_key_order() -> None:
    changes = dict(ACCEPTED)["maps-of-items"]
    scale_set = next(obj for obj in _render(changes) if obj["kind"] == "AutoscalingRunnerSet")
    spec = scale_set["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["runner", "sidecar"]
    runner = spec["containers"][0]
    assert runner["env"][0] == {"name": "A", "value": "1"}
    assert {"name": "cache", "mountPath": "/cache"} in runner["volumeMounts"]
    assert {"name": "cache", "emptyDir": {}} in spec["volumes"]


def test_numeric_app_ids_reach_the_secret_as_strings() -> None:
    objects = _render(dict(ACCEPTED[0][1]))
    secret = next(obj for obj in objects if obj["kind"] == "Secret")
    assert base64.b64decode(secret["data"]["github_app_id"]) == b"12345"
    assert base64.b64decode(secret["data"]["github_app_installation_id"]) == b"678"


def _closed_maps(node: Any, path: str = "") -> list[str]:
    """Schema paths that forbid unknown keys."""
    found: list[str] = []
    if isinstance(node, dict):
        if node.get("additionalProperties") is False:
            found.append(path or "/")
        for key, child in node.items():
            found.extend(_closed_maps(child, f"{path}/{key}"))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found.extend(_closed_maps(child, f"{path}/{index}"))
    return found


def test_the_schema_is_draft_07_and_allows_unknown_keys_everywhere() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert _closed_maps(schema) == []
    assert _closed_maps({"properties": {"a": {"additionalProperties": False}}}) == ["/properties/a"]
