"""Runner pods carry no ServiceAccount token they do not need: in the default and dind container
modes the runner never talks to the Kubernetes API, so its pod gets
``automountServiceAccountToken: false`` (ARC mounts the no-permission ServiceAccount's token).
The kubernetes modes need the token (the container hooks create the job's pods), and their Role
can read the namespace's Secrets — the GitHub credentials Secret too — so the install notes warn.
A template that sets ``automountServiceAccountToken`` or its own ``serviceAccountName`` keeps
its choice."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.deploy.runner_set_chart.cases import BASE, CHART, NAMESPACE, RELEASE, notes
from tests.support.helm import render

RUNNER = {"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}
CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def values(mode: str, **spec: Any) -> dict[str, Any]:
    result: dict[str, Any] = copy.deepcopy(BASE)
    result["template"] = {"spec": {"containers": [dict(RUNNER)], **spec}}
    if mode:
        result["containerMode"] = {"type": mode, "kubernetesModeWorkVolumeClaim": CLAIM}
    return result


def runner_pod_spec(chart_values: dict[str, Any]) -> dict[str, Any]:
    objects = render(CHART, chart_values, name=RELEASE, namespace=NAMESPACE)
    scale_set = next(o for o in objects if o["kind"] == "AutoscalingRunnerSet")
    spec: dict[str, Any] = scale_set["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("mode", ["", "dind"])
def test_default_and_dind_runner_pods_mount_no_token(mode: str) -> None:
    assert runner_pod_spec(values(mode))["automountServiceAccountToken"] is False


@pytest.mark.parametrize("mode", ["kubernetes", "kubernetes-novolume"])
def test_kubernetes_mode_runner_pods_keep_the_token_and_the_notes_warn(mode: str) -> None:
    assert "automountServiceAccountToken" not in runner_pod_spec(values(mode))
    text = notes(values(mode))
    assert "WARNING" in text
    assert "Secrets" in text
    assert "githubConfigSecret" in text


@pytest.mark.parametrize("mode", ["", "dind"])
def test_the_default_modes_do_not_warn_about_secrets(mode: str) -> None:
    assert "can read every Secret" not in notes(values(mode))


@pytest.mark.parametrize("choice", [True, False])
def test_a_template_that_sets_it_keeps_its_choice(choice: bool) -> None:
    spec = runner_pod_spec(values("", automountServiceAccountToken=choice))
    assert spec["automountServiceAccountToken"] is choice


def test_a_template_naming_its_own_service_account_keeps_the_token() -> None:
    spec = runner_pod_spec(values("", serviceAccountName="deployer"))
    assert spec["serviceAccountName"] == "deployer"
    assert "automountServiceAccountToken" not in spec
