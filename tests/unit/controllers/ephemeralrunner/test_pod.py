"""The runner pod and JIT Secret builders (ARC's shapes),
and the controller's settings from the environment."""

from __future__ import annotations

import base64

import pytest
from pydantic import SecretStr
from tests.unit.controllers.ephemeralrunner.builders import runner, template

from scaleset.api import EphemeralRunner, keys
from scaleset.controllers.ephemeralrunner.pod import jit_secret, runner_pod, work_folder
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.controllers.ephemeralrunner.setup import ENVIRONMENT
from scaleset.github import JitRunnerConfig, RunnerReference


def model(**spec: object) -> EphemeralRunner:
    raw = runner(spec=dict(spec))
    raw["metadata"]["labels"] = {"app.kubernetes.io/component": "runner", "shared": "er"}
    raw["metadata"]["annotations"] = {"actions.github.com/patch-id": "3"}
    return EphemeralRunner.model_validate(raw)


def env_of(pod: dict[str, object]) -> dict[str, dict[str, object]]:
    containers = pod["spec"]["containers"]  # type: ignore[index]
    runner_container = next(c for c in containers if c["name"] == "runner")  # type: ignore[attr-defined]
    return {var["name"]: var for var in runner_container["env"]}


def test_the_pod_is_the_template_with_arcs_labels_annotations_owner_and_env() -> None:
    er = model(
        metadata={"labels": {"shared": "template", "team": "a"}, "annotations": {"x": "y"}},
        spec=template(nodeSelector={"kubernetes.io/os": "linux"}),
    )
    pod = runner_pod(er, user_agent="scaleset/1.0")
    meta = pod["metadata"]
    assert (meta["name"], meta["namespace"]) == ("arc-runner-abc", "ns")
    assert meta["labels"]["shared"] == "template"  # template labels win over the runner's
    assert meta["labels"]["team"] == "a"
    assert meta["labels"][keys.EPHEMERAL_RUNNER_LABEL] == "True"
    assert meta["labels"][keys.POD_TEMPLATE_HASH_LABEL]
    assert meta["annotations"] == {"actions.github.com/patch-id": "3", "x": "y"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunner",
            "name": "arc-runner-abc",
            "uid": "runner-uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    env = env_of(pod)
    assert env[keys.RUNNER_JIT_CONFIG_ENV]["valueFrom"] == {
        "secretKeyRef": {"name": "arc-runner-abc", "key": "jitToken"}
    }
    assert env[keys.RUNNER_EXTRA_USER_AGENT_ENV]["value"] == "scaleset/1.0"
    assert env[keys.RUNNER_DEPRECATED_EXIT_CODE_ENV]["value"] == "1"


@pytest.mark.parametrize("policy", [None, "Never"])
def test_L5_the_pod_never_restarts(policy: str | None) -> None:
    spec = template() if policy is None else template(restartPolicy=policy)
    assert runner_pod(model(spec=spec), user_agent="ua")["spec"]["restartPolicy"] == "Never"


def test_template_env_is_kept_and_ours_wins() -> None:
    spec = template()
    spec["containers"][0]["env"] = [
        {"name": "KEEP", "value": "1"},
        {"name": keys.RUNNER_JIT_CONFIG_ENV, "value": "from the template"},
    ]
    env = env_of(runner_pod(model(spec=spec), user_agent="ua"))
    assert env["KEEP"]["value"] == "1"
    assert "valueFrom" in env[keys.RUNNER_JIT_CONFIG_ENV]


def test_proxy_env_comes_from_the_proxy_secret_when_configured() -> None:
    er = model(
        proxy={"https": {"url": "http://proxy:3128"}, "noProxy": ["internal"]},
        proxySecretRef="runner-proxy",
    )
    env = env_of(runner_pod(er, user_agent="ua"))
    assert env["https_proxy"]["valueFrom"] == {
        "secretKeyRef": {"name": "runner-proxy", "key": "https_proxy"}
    }
    assert env["no_proxy"]["valueFrom"] == {
        "secretKeyRef": {"name": "runner-proxy", "key": "no_proxy"}
    }
    assert "http_proxy" not in env


def test_the_jit_secret_has_arcs_keys_metadata_and_owner() -> None:
    er = model(
        ephemeralRunnerConfigSecretMetadata={"labels": {"l": "1"}, "annotations": {"a": "2"}}
    )
    config = JitRunnerConfig(
        runner=RunnerReference(id=42, name="arc-runner-abc", runner_scale_set_id=7),
        encoded_jit_config=SecretStr("opaque-config"),
    )
    secret = jit_secret(er, config)
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {
        "jitToken": "opaque-config",
        "runnerName": "arc-runner-abc",
        "runnerId": "42",
        "scaleSetId": "7",
    }
    assert secret["metadata"]["name"] == "arc-runner-abc"
    assert secret["metadata"]["labels"] == {"l": "1"}
    assert secret["metadata"]["annotations"] == {"a": "2"}
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "runner-uid-1"


def test_the_work_folder_is_the_runner_containers_working_dir() -> None:
    spec = template()
    spec["containers"][0]["workingDir"] = "/work"
    assert work_folder(model(spec=spec)) == "/work"
    assert work_folder(model()) == ""


def test_settings_come_from_the_environment() -> None:
    settings = ENVIRONMENT.read(
        {"SCALESET_JOB_COMPLETION_GRACE": "45", "SCALESET_RUNNER_POD_PENDING_TIMEOUT": "600"}
    )
    assert (settings.grace_period, settings.pod_pending_timeout) == (45.0, 600.0)
    assert ENVIRONMENT.read({}).grace_period == Settings().grace_period
    with pytest.raises(ValueError, match="SCALESET_JOB_COMPLETION_GRACE"):
        ENVIRONMENT.read({"SCALESET_JOB_COMPLETION_GRACE": "soon"})
