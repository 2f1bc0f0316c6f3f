"""The values files the runner scale set chart is tested with, shared by the tests and by
``regenerate_arc_goldens.py`` (which renders ARC 0.14.2's chart with the same cases).

- ``render_cases()``: one ``Case`` per file in ``values/`` — each renders, in our chart and in
  ARC's; the golden output of ARC's is ``tests/data/arc-0.14.2/runner-set/<case>.yaml``. ARC's
  ``gha-runner-scale-set`` chart at master 2ee6b3b8 (the base of 0.15.0) renders every case
  byte for byte the same (its values.yaml and templates did not change after 0.14.2), so these
  goldens stand for both generations.
- ``ERROR_CASES``: values our chart refuses, each with a pattern its message must match. ARC's
  outcome for each is recorded in ``errors.yaml`` next to the goldens (ARC refuses most of them
  too; the rest are documented differences in ``test_arc_parity.py``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python
import yaml
from tests.support.helm import render

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
CHART = ROOT / "deploy" / "charts" / "scaleset-runner-set"
VALUES = HERE / "values"
GOLDENS = ROOT / "tests" / "data" / "arc-0.14.2" / "runner-set"
ARC_ERRORS = GOLDENS / "errors.yaml"
ARC_VALUES_KEYS = GOLDENS / "values-keys.yaml"

RELEASE = "arc-runner-set"
NAMESPACE = "arc-runners"
KUBE_VERSIONS = {"dind-kube-1.28": "v1.28.3"}
"""Cases rendered for another Kubernetes version than Helm's default (which is >= 1.29)."""


@dataclass(frozen=True)
class Case:
    name: str
    values: dict[str, Any]
    kube_version: str | None = None
    release: str = RELEASE
    namespace: str = NAMESPACE

    def render(self, chart: Path = CHART, values: dict[str, Any] | None = None) -> list[Any]:
        """The chart's objects for this case (or for ``values`` instead of the case's)."""
        return render(
            chart,
            copy.deepcopy(self.values if values is None else values),
            name=self.release,
            namespace=self.namespace,
            kube_version=self.kube_version,
        )


def render_cases() -> list[Case]:
    return [
        Case(path.stem, yaml.safe_load(path.read_text()), KUBE_VERSIONS.get(path.stem))
        for path in sorted(VALUES.glob("*.yaml"))
    ]


BASE: dict[str, Any] = {
    "githubConfigUrl": "https://github.com/acme/widgets",
    "githubConfigSecret": {"github_token": "not-a-real-token"},
    "controllerServiceAccount": {"name": "arc-gha-rs-controller", "namespace": "arc-systems"},
}


@dataclass(frozen=True)
class ErrorCase:
    name: str
    changes: dict[str, Any]
    message: str
    """A regular expression our chart's error message must match."""
    drop: tuple[str, ...] = ()
    """Top-level keys of ``BASE`` left out."""
    release: str = RELEASE

    @property
    def values(self) -> dict[str, Any]:
        values = {k: copy.deepcopy(v) for k, v in BASE.items() if k not in self.drop}
        values.update(copy.deepcopy(self.changes))
        return values

    def render(self, chart: Path = CHART) -> list[Any]:
        return render(chart, self.values, name=self.release, namespace=NAMESPACE)


_NO_RUNNER = {"containers": [{"name": "other", "image": "other-image:latest"}]}

ERROR_CASES: tuple[ErrorCase, ...] = (
    ErrorCase(
        "min-greater-than-max",
        {"minRunners": 5, "maxRunners": 3},
        r"minRunners \(5\) must not be greater than maxRunners \(3\)",
    ),
    ErrorCase("min-negative", {"minRunners": -1}, r"minRunners must be >= 0, got -1"),
    ErrorCase("max-negative", {"maxRunners": -2}, r"maxRunners must be >= 0, got -2"),
    ErrorCase(
        "min-a-string",
        {"minRunners": "5"},
        r'minRunners must be a whole number >= 0, got "5" \(a string\)',
    ),
    ErrorCase(
        "max-a-fraction", {"maxRunners": 2.5}, r"maxRunners must be a whole number >= 0, got 2.5"
    ),
    ErrorCase("no-url", {}, r"githubConfigUrl is required", drop=("githubConfigUrl",)),
    ErrorCase(
        "empty-secret-name", {"githubConfigSecret": ""}, r"githubConfigSecret is empty: give the"
    ),
    ErrorCase(
        "secret-without-credentials",
        {"githubConfigSecret": {"github_token": ""}},
        r"githubConfigSecret has no credentials",
    ),
    ErrorCase(
        "app-without-key",
        {"githubConfigSecret": {"github_app_id": "10", "github_app_installation_id": "100"}},
        r"github_app_id is set, so .*github_app_private_key are required",
    ),
    ErrorCase(
        "name-too-long",
        {"runnerScaleSetName": "r" * 46},
        r"must have 1 to 45 characters; \"r{46}\" has 46",
    ),
    ErrorCase(
        "namespace-too-long",
        {"namespaceOverride": "n" * 64},
        r"the namespace must have at most 63 characters",
    ),
    ErrorCase(
        "empty-scale-set-label",
        {"scaleSetLabels": ["linux", ""]},
        r"scaleSetLabels: each label must be a non-empty string of less than 256 characters",
    ),
    ErrorCase(
        "long-scale-set-label",
        {"scaleSetLabels": ["l" * 256]},
        r"scaleSetLabels: each label must be a non-empty string of less than 256 characters",
    ),
    ErrorCase(
        "no-controller-found",
        {},
        r"no controller Deployment found .*Set controllerServiceAccount.name and "
        r"controllerServiceAccount.namespace",
        drop=("controllerServiceAccount",),
    ),
    ErrorCase(
        "dind-without-runner",
        {"containerMode": {"type": "dind"}, "template": {"spec": _NO_RUNNER}},
        r'template.spec.containers has no container named "runner": the GitHub runner runs in it',
    ),
    ErrorCase(
        "kubernetes-without-runner",
        {
            "containerMode": {"type": "kubernetes"},
            "template": {"spec": {**_NO_RUNNER, "volumes": [{"name": "work", "emptyDir": {}}]}},
        },
        r'template.spec.containers has no container named "runner"',
    ),
    ErrorCase(
        "kubernetes-without-work-volume",
        {"containerMode": {"type": "kubernetes"}},
        r"containerMode.kubernetesModeWorkVolumeClaim is empty and template.spec.volumes has no "
        r'volume named "work"',
    ),
    ErrorCase(
        "no-runner-container",
        {"template": {"spec": {**_NO_RUNNER, "volumes": [{"name": "foo", "emptyDir": {}}]}}},
        r'template.spec.containers has no container named "runner"',
    ),
    ErrorCase(
        "restart-policy-on-failure",
        {"template": {"spec": {"restartPolicy": "OnFailure"}}},
        r'template.spec.restartPolicy must be Never \(or unset\), got "OnFailure"',
    ),
    ErrorCase(
        "proxy-without-url",
        {"proxy": {"https": {"credentialSecretRef": "proxy-auth"}}},
        r"proxy.https.url is required when proxy.https is set",
    ),
    ErrorCase(
        "tls-without-config-map-key",
        {"githubServerTLS": {"certificateFrom": {"configMapKeyRef": {"name": "certs"}}}},
        r"githubServerTLS needs certificateFrom.configMapKeyRef.name and "
        r"certificateFrom.configMapKeyRef.key",
    ),
    ErrorCase(
        "unsupported-vault",
        {"keyVault": {"type": "hashicorp"}, "githubConfigSecret": "in-vault"},
        r'keyVault.type "hashicorp" is not supported',
    ),
)


def notes(values: dict[str, Any], chart: Path = CHART) -> str:
    """The chart's NOTES.txt for ``values``."""
    with helm_python.Chart.load(chart) as loaded:
        manifests = loaded.render(copy.deepcopy(values), name=RELEASE, namespace=NAMESPACE)
    return next(text for path, text in manifests.items() if path.endswith("/NOTES.txt"))
