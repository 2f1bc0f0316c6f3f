"""The listener's objects as built (no server): the config is exactly what ``scaleset listener``
(and ARC's ``/ghalistener``) read, the pod is in ARC's shape with ``listenerTemplate`` merged as
ARC merges it, the Role is the declared list, and the controller's own rules cover it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.controllers.autoscalinglistener.builders import (
    INPUTS,
    NAME,
    NAMESPACE,
    PAT,
    SCALE_SET_NAMESPACE,
    SETTINGS,
    UID,
    listener,
)

from scaleset.api import AutoscalingListener, keys, validate
from scaleset.api.listener_rbac import LISTENER_ACCESSES, granted_accesses, listener_role_rules
from scaleset.controllers.autoscalinglistener import plan, resources, settings
from scaleset.controllers.autoscalinglistener.inputs import Credentials, Inputs
from scaleset.controllers.autoscalinglistener.observed import observe_secret
from scaleset.controllers.autoscalinglistener.rbac import controller_rules
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import SECRET
from scaleset.listener import exits
from scaleset.listener.config import parse_config

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "arc"
ARC_CONFIG_KEYS = [
    "configure_url",
    "vault_type",
    "vault_lookup_key",
    "github_app_id",
    "github_app_installation_id",
    "github_app_private_key",
    "github_token",
    "ephemeral_runner_set_namespace",
    "ephemeral_runner_set_name",
    "max_runners",
    "min_runners",
    "runner_scale_set_id",
    "runner_scale_set_name",
    "server_root_ca",
    "log_level",
    "log_format",
    "metrics_addr",
    "metrics_endpoint",
    "metrics",
]
"""ARC's ``ghalistener`` Config JSON tags, in its field order (the AppConfig keys embedded)."""

APP_KEY = """-----BEGIN RSA PRIVATE KEY-----
MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu
KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm
o3qGy0t6z09AIJtH+5OeRV1be+N4cDYJKffGzDa88vQENZiRm0GRq6a+HPGQMd2k
TQIhAKMSvzIBnni7ot/OSie2TmJLY4SwTQAevXysE2RbFDYdAiEBCUEaRQnMnbp7
9mxDXDf6AU0cN/RPBjb9qSHDcWZHGzUCIG2Es59z8ugGrDY+pxLQnwfotadxd+Uy
v/Ow5T0q5gIJAiEAyS4RaI9YG8EWx/2w0T67ZUVAw8eOMB6BIUg0Xcu+3okCIBOs
/5OiPgoTdSy7bcF9IGpSE8ZgGKzgYQVZeN97YE00
-----END RSA PRIVATE KEY-----
"""


def model(**spec: Any) -> AutoscalingListener:
    return AutoscalingListener.model_validate(listener(**spec))


def pod(**spec: Any) -> dict[str, Any]:
    return resources.listener_pod(model(**spec), SETTINGS, "c", "p")


def container(built: dict[str, Any], name: str = "listener") -> dict[str, Any]:
    return next(c for c in built["spec"]["containers"] if c["name"] == name)


# --- the config --------------------------------------------------------------------------------


def test_the_config_has_arcs_keys_in_arcs_order_and_the_listener_reads_it() -> None:
    document = resources.config_document(model(), INPUTS, SETTINGS)
    assert list(document) == ARC_CONFIG_KEYS
    config = parse_config(resources.encode_config(document))
    assert config.configure_url == "https://github.com/acme"
    assert config.github_token.get_secret_value() == PAT
    assert (config.ephemeral_runner_set_namespace, config.ephemeral_runner_set_name) == (
        SCALE_SET_NAMESPACE,
        "arc",
    )
    assert (config.min_runners, config.max_runners, config.runner_scale_set_id) == (0, 10, 7)
    assert config.runner_scale_set_name == "arc"
    assert (config.log_level, config.log_format) == ("debug", "text")
    assert (config.metrics_addr, config.metrics_endpoint) == (":8080", "/metrics")


def test_warm_windows_reach_the_listener_and_a_listener_without_them_gets_arcs_document() -> None:
    window = {
        "days": ["Mon-Fri"],
        "start": "08:00",
        "end": "18:00",
        "timeZone": "UTC",
        "minRunners": 3,
    }
    document = resources.config_document(model(warmWindows=[window]), INPUTS, SETTINGS)
    assert list(document) == [*ARC_CONFIG_KEYS, "warm_windows"]
    config = parse_config(resources.encode_config(document))
    assert [(w.start, w.end, w.zone, w.min_runners) for w in config.windows] == [
        (480, 1080, "UTC", 3)
    ]
    assert list(resources.config_document(model(warmWindows=[]), INPUTS, SETTINGS)) == (
        ARC_CONFIG_KEYS
    )
    changed = resources.config_document(
        model(warmWindows=[{**window, "minRunners": 4}]), INPUTS, SETTINGS
    )
    assert resources.content_digest(changed) != resources.content_digest(document), (
        "a changed window is a changed config: the listener pod is replaced (it reads it once)"
    )


def test_github_app_credentials_and_a_ca_reach_the_listener() -> None:
    inputs = Inputs(
        credentials=Credentials(app_id="123", installation_id=456, private_key=APP_KEY),
        root_ca="-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    config = parse_config(
        resources.encode_config(resources.config_document(model(), inputs, SETTINGS))
    )
    assert (config.github_app_id, config.github_app_installation_id) == ("123", 456)
    assert config.github_app_private_key.get_secret_value() == APP_KEY
    assert "BEGIN CERTIFICATE" in config.server_root_ca


def test_listener_metrics_config_and_disabled_metrics_reach_the_listener() -> None:
    metrics = {"gauges": {"gha_assigned_jobs": {"labels": ["name", "namespace"]}}}
    off = settings.Settings(metrics_addr="0", log_level="info", log_format="json")
    document = resources.config_document(model(metrics=metrics), INPUTS, off)
    config = parse_config(resources.encode_config(document))
    assert config.metrics is not None
    assert config.metrics.gauges["gha_assigned_jobs"].labels == ("name", "namespace")
    assert (config.metrics_addr, config.metrics_endpoint) == ("", "")
    assert (config.log_level, config.log_format) == ("info", "json")
    built = resources.listener_pod(model(), off, "c", "p")
    assert "ports" not in container(built), "no metrics port when listener metrics are off"


@pytest.mark.parametrize("address", ["", " 0 ", "  "])
def test_every_way_of_saying_off_is_off_and_a_bad_address_is_refused(address: str) -> None:
    assert not settings.Settings(metrics_addr=address).metrics_enabled
    assert settings.Settings(metrics_addr="127.0.0.1:9090").metrics_enabled
    with pytest.raises(ValueError, match="bind address 'metrics'"):
        settings.Settings(metrics_addr="metrics")


def test_the_config_secret_is_named_and_keyed_like_arcs() -> None:
    document = resources.config_document(model(), INPUTS, SETTINGS)
    secret = resources.config_secret(model(), document, SETTINGS)
    assert secret["metadata"]["name"] == f"{NAME}-config"
    assert secret["metadata"]["namespace"] == NAMESPACE
    assert list(secret["data"]) == [keys.LISTENER_CONFIG_KEY]
    assert json.loads(base64.b64decode(secret["data"]["config.json"])) == document
    owner = secret["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "AutoscalingListener",
        NAME,
        UID,
        True,
    )


def test_the_exit_codes_the_controller_explains_are_the_listeners() -> None:
    codes = {
        exits.EXIT_CONFIG: "ListenerConfigInvalid",
        exits.EXIT_GITHUB_REFUSED: "GitHubRefused",
        exits.EXIT_RUNNER_SET_GONE: "RunnerSetMissing",
        exits.EXIT_KUBE_REFUSED: "KubernetesRefused",
        exits.EXIT_INTERNAL: "ListenerCrashed",
    }
    assert {code: reason for code, (reason, _) in plan.EXIT_REASONS.items()} == codes


def test_the_default_command_is_scaleset_listener_and_listener_entrypoint_overrides_it() -> None:
    assert settings.command_from_environ({}) == ("scaleset", "listener")
    assert settings.command_from_environ({"LISTENER_ENTRYPOINT": "/ghalistener"}) == (
        "/ghalistener",
    )


# --- the pod -----------------------------------------------------------------------------------


def test_the_pod_is_in_arcs_shape() -> None:
    built = pod(imagePullSecrets=[{"name": "regcred"}], proxy={"https": {"url": "http://p:1"}})
    spec = built["spec"]
    assert built["metadata"]["name"] == NAME
    assert spec["serviceAccountName"] == NAME
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["restartPolicy"] == "Never"
    assert spec["terminationGracePeriodSeconds"] == 60
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["volumes"] == [
        {"name": "listener-config", "secret": {"secretName": f"{NAME}-config"}},
        {"name": "tmp", "emptyDir": {}},
    ]
    main_container = container(built)
    assert main_container["image"] == "ghcr.io/scaleset/scaleset:1.0.0"
    assert main_container["command"] == ["scaleset", "listener"]
    env = {e["name"]: e for e in main_container["env"]}
    assert env["LISTENER_CONFIG_PATH"]["value"] == "/etc/gha-listener/config.json"
    assert env["https_proxy"]["valueFrom"]["secretKeyRef"] == {
        "name": f"{NAME}-proxy",
        "key": "https_proxy",
    }
    assert "http_proxy" not in env
    assert "no_proxy" not in env
    assert main_container["volumeMounts"] == [
        {"name": "listener-config", "mountPath": "/etc/gha-listener", "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    assert main_container["ports"] == [
        {"containerPort": 8080, "protocol": "TCP", "name": "metrics"}
    ]
    assert built["metadata"]["labels"]["app.kubernetes.io/component"] == (
        "runner-scale-set-listener"
    )
    assert built["metadata"]["labels"][keys.LISTENER_NAME_LABEL] == NAME
    owner = built["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["blockOwnerDeletion"]) == (
        "AutoscalingListener",
        UID,
        True,
    )
    assert keys.LISTENER_POD_HASH_ANNOTATION in built["metadata"]["annotations"]


def test_the_template_merges_as_arcs_does() -> None:
    template = {
        "metadata": {
            "labels": {"team": "ci", keys.LISTENER_NAME_LABEL: "not-ours"},
            "annotations": {"note": "x"},
        },
        "spec": {
            "serviceAccountName": "ignored",
            "securityContext": {"runAsNonRoot": True},
            "priorityClassName": "system-cluster-critical",
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "spot", "operator": "DoesNotExist"},
                                ]
                            }
                        ]
                    }
                }
            },
            "volumes": [{"name": "extra", "emptyDir": {}}],
            "containers": [
                {
                    "name": "listener",
                    "imagePullPolicy": "Always",
                    "env": [{"name": "EXTRA", "value": "1"}],
                    "securityContext": {"readOnlyRootFilesystem": True},
                    "image": "",
                },
                {"name": "sidecar", "image": "busybox"},
            ],
        },
    }
    built = pod(template=template)
    spec = built["spec"]
    assert spec["serviceAccountName"] == NAME
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }, "merged into ours"
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["tolerations"][0]["key"] == "spot"
    assert "nodeAffinity" in spec["affinity"]
    assert [v["name"] for v in spec["volumes"]] == ["listener-config", "tmp", "extra"]
    assert [c["name"] for c in spec["containers"]] == ["listener", "sidecar"]
    main_container = container(built)
    assert main_container["imagePullPolicy"] == "Always"
    assert main_container["image"] == "ghcr.io/scaleset/scaleset:1.0.0", "empty image ignored"
    assert [e["name"] for e in main_container["env"]] == ["LISTENER_CONFIG_PATH", "EXTRA"]
    assert main_container["securityContext"] == resources.CONTAINER_SECURITY_CONTEXT
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}, "absent: default kept"
    assert spec["terminationGracePeriodSeconds"] == 60, "absent: ours kept (ARC clears it)"
    labels = built["metadata"]["labels"]
    assert labels["team"] == "ci"
    assert labels[keys.LISTENER_NAME_LABEL] == NAME, "template labels never override ours"
    assert built["metadata"]["annotations"]["note"] == "x"


@pytest.mark.parametrize(
    ("node_selector", "expected"),
    [({}, {}), ({"pool": "system"}, {"pool": "system"})],
)
def test_a_node_selector_in_the_template_replaces_the_default(
    node_selector: dict[str, str], expected: dict[str, str]
) -> None:
    built = pod(template={"spec": {"nodeSelector": node_selector}})
    assert built["spec"]["nodeSelector"] == expected


def test_the_pod_hash_follows_spec_and_config_not_labels() -> None:
    def pod_hash(built: dict[str, Any]) -> str:
        return str(built["metadata"]["annotations"][keys.LISTENER_POD_HASH_ANNOTATION])

    base = pod_hash(resources.listener_pod(model(), SETTINGS, "c1", "p"))
    assert pod_hash(resources.listener_pod(model(), SETTINGS, "c2", "p")) != base
    assert pod_hash(resources.listener_pod(model(), SETTINGS, "c1", "p2")) != base
    relabelled = AutoscalingListener.model_validate(listener(labels={"x": "y"}))
    assert pod_hash(resources.listener_pod(relabelled, SETTINGS, "c1", "p")) == base
    assert pod_hash(resources.listener_pod(model(image="other:1"), SETTINGS, "c1", "p")) != base


# --- RBAC --------------------------------------------------------------------------------------


def test_the_role_is_the_declared_list_and_lives_in_the_scale_set_namespace() -> None:
    role = resources.role(model(), SETTINGS)
    assert role["metadata"]["namespace"] == SCALE_SET_NAMESPACE
    assert role["metadata"]["name"] == NAME
    assert role["rules"] == listener_role_rules("arc")
    assert granted_accesses(role["rules"]) == {
        ("get", keys.GROUP, "ephemeralrunners"),
        ("list", keys.GROUP, "ephemeralrunners"),
        ("watch", keys.GROUP, "ephemeralrunners"),
        ("patch", keys.GROUP, "ephemeralrunners/status"),
        ("get", keys.GROUP, "ephemeralrunnersets"),
        ("patch", keys.GROUP, "ephemeralrunnersets"),
        ("create", "", "events"),
        ("patch", "", "events"),
    }
    named = [r for r in role["rules"] if "resourceNames" in r]
    assert named == [
        {
            "apiGroups": [keys.GROUP],
            "resources": ["ephemeralrunnersets"],
            "verbs": ["get", "patch"],
            "resourceNames": ["arc"],
        }
    ]
    labels = role["metadata"]["labels"]
    assert labels[keys.LISTENER_NAMESPACE_LABEL] == NAMESPACE
    assert labels[keys.LISTENER_NAME_LABEL] == NAME


def test_the_role_binding_binds_the_listener_service_account_across_namespaces() -> None:
    binding = resources.role_binding(model(), SETTINGS)
    assert binding["metadata"]["namespace"] == SCALE_SET_NAMESPACE
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": NAME,
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]


def test_the_controllers_own_rules_cover_everything_the_listener_role_grants() -> None:
    """The escalation check: the controller can only grant what it holds."""
    held = granted_accesses(controller_rules())
    for access in LISTENER_ACCESSES:
        for verb in access.verbs:
            assert (verb, access.group, access.resource) in held


def test_excluded_label_prefixes_are_not_propagated() -> None:
    raw = listener(labels={"team.example.com/owner": "ci", "keep": "yes"})
    excluded = settings.Settings(exclude_label_prefixes=("team.example.com/",))
    account = resources.service_account(AutoscalingListener.model_validate(raw), excluded)
    assert "team.example.com/owner" not in account["metadata"]["labels"]
    assert account["metadata"]["labels"]["keep"] == "yes"


# --- taking over ARC's objects -------------------------------------------------------------------


def test_an_arc_listener_is_taken_over_with_its_template_and_pull_secrets() -> None:
    raw = yaml.safe_load((FIXTURES / "autoscalinglistener.yaml").read_text())
    arc = AutoscalingListener.model_validate(raw)
    assert validate(arc) == []
    built = resources.listener_pod(arc, SETTINGS, "c", "p")
    assert built["spec"]["imagePullSecrets"] == [{"name": "ghcr-pull"}]
    assert container(built)["resources"] == {"limits": {"memory": "256Mi"}}
    assert built["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    config = parse_config(resources.encode_config(resources.config_document(arc, INPUTS, SETTINGS)))
    assert (config.min_runners, config.max_runners) == (1, 2147483647)
    assert config.metrics is not None
    assert config.metrics.gauges["gha_desired_runners"].labels == ("name", "namespace")


def test_a_config_written_by_arc_with_the_same_content_is_not_rewritten() -> None:
    """Go's encoder orders and spaces differently: content, not bytes, is compared."""
    document = resources.config_document(model(), INPUTS, SETTINGS)
    go_style = json.dumps(dict(reversed(list(document.items()))), indent=1) + "\n"
    secret = KubeObject(
        SECRET,
        {
            "metadata": {"name": f"{NAME}-config", "namespace": NAMESPACE, "uid": "s"},
            "data": {"config.json": base64.b64encode(go_style.encode()).decode()},
        },
    )
    view = observe_secret(secret, UID, config=True)
    assert view.digest == resources.content_digest(document)
    changed = dict(document, max_runners=3)
    assert view.digest != resources.content_digest(changed)
