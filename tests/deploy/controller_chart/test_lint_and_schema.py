"""Helm lint (strict) is clean for every case, and values.schema.json refuses the types ARC's
chart would only fail on later (at apply, or when the controller starts)."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest
from tests.deploy.controller_chart.cases import CHART, case, case_names
from tests.deploy.controller_chart.rendering import render_ours
from tests.support.helm import lint


@pytest.mark.parametrize("name", case_names())
def test_lint_strict_is_clean(name: str) -> None:
    assert lint(CHART, case(name).values) == []


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"replicaCount": "2 replicas"}, "/replicaCount"),
        ({"replicaCount": 1.5}, "/replicaCount"),
        ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ({"imagePullSecrets": ["regcred"]}, "/imagePullSecrets/0"),
        ({"env": {"X": "1"}}, "/env"),
        ({"serviceAccount": {"create": "yes"}}, "/serviceAccount/create"),
        (
            {"flags": {"runnerMaxConcurrentReconciles": "many"}},
            "/flags/runnerMaxConcurrentReconciles",
        ),
        ({"flags": {"rateLimiter": {"name": "leaky"}}}, "/flags/rateLimiter/name"),
        ({"namespaces": ["Not_A_Namespace"]}, "/namespaces/0"),
        ({"scaleset": {"jobCompletionGrace": -1}}, "/scaleset/jobCompletionGrace"),
        ({"scaleset": {"workers": {"ephemeralrunner": 0}}}, "/scaleset/workers/ephemeralrunner"),
        ({"scaleset": {"syncPeriod": "1 minute"}}, "/scaleset/syncPeriod"),
        ({"scaleset": {"jobCompletionGrase": 30}}, "/scaleset"),
    ],
)
def test_schema_refuses(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as refused:
        render_ours(values)
    assert f"at '{where}'" in str(refused.value)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"serviceAccount": {"name": "default"}}, "cannot be set to 'default'"),
        ({"serviceAccount": {"create": False}}, "must be set if serviceAccount.create is false"),
        (
            {
                "metrics": {
                    "controllerManagerAddr": "x",
                    "listenerAddr": ":1",
                    "listenerEndpoint": "/",
                }
            },
            "metrics.controllerManagerAddr must end with a numeric port",
        ),
    ],
)
def test_template_refuses(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm_python.HelmRenderError) as refused:
        render_ours(values)
    assert message in str(refused.value)
