"""The controller pod meets the Pod Security Standards' "restricted" profile (which includes
"baseline"), checked rule by rule as the Kubernetes documentation lists them
(``tests.support.pod_security``, the checker the listener pod's tests use too), for our
defaults and for every case whose values do not loosen it themselves."""

from __future__ import annotations

from typing import Any

import pytest
from tests.deploy.controller_chart.cases import case, case_names
from tests.deploy.controller_chart.rendering import only, render_ours
from tests.support.pod_security import violations


def pod_of(values: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = only(render_ours(values), "Deployment")["spec"]["template"]
    return template


@pytest.mark.parametrize("name", case_names())
def test_restricted_by_default_and_in_every_case(name: str) -> None:
    assert violations(pod_of(case(name).values)) == []


def test_read_only_root_filesystem_with_a_writable_tmp() -> None:
    pod = pod_of({})
    container = pod["spec"]["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert {"name": "tmp", "emptyDir": {}} in pod["spec"]["volumes"]


@pytest.mark.parametrize(
    ("values", "rule"),
    [
        ({"securityContext": {"allowPrivilegeEscalation": True}}, "allowPrivilegeEscalation"),
        ({"securityContext": {"capabilities": {"drop": None, "add": ["NET_ADMIN"]}}}, "adds"),
        ({"securityContext": {"runAsNonRoot": False}}, "runAsNonRoot"),
        (
            {
                "podSecurityContext": {"seccompProfile": None},
                "securityContext": {"seccompProfile": None},
            },
            "seccomp",
        ),
        ({"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}, "hostPath"),
    ],
)
def test_the_check_sees_a_loosened_pod(values: dict[str, Any], rule: str) -> None:
    assert any(rule in v for v in violations(pod_of(values)))
