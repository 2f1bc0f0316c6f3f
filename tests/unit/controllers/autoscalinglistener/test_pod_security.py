"""The listener pod holds its scale set's GitHub credentials: it runs under the Pod Security
"restricted" profile (non-root, read-only root filesystem with an emptyDir ``/tmp``, no
privilege escalation, every capability dropped, ``RuntimeDefault`` seccomp) with requests and
limits, so a namespace that enforces "restricted" admits it — checked with the same rules as the
controller chart's pod (``tests.support.pod_security``). A listener template the allow-list
accepts can tighten that, never loosen it, and never change what runs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from tests.support.listener_templates import ACCEPTED
from tests.support.pod_security import violations
from tests.unit.controllers.autoscalinglistener.builders import SETTINGS, listener

from scaleset.api import AutoscalingListener
from scaleset.api.listener_template import screen
from scaleset.controllers.autoscalinglistener import resources


def pod(template: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = {} if template is None else {"template": template}
    model = AutoscalingListener.model_validate(listener(**spec))
    return resources.listener_pod(model, SETTINGS, "config-digest", "proxy-digest")


def listener_container(built: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = built["spec"]["containers"][0]
    assert container["name"] == "listener"
    return container


def test_the_listener_pod_meets_the_restricted_profile() -> None:
    assert violations(pod()) == []


def test_the_root_filesystem_is_read_only_and_tmp_is_an_empty_dir() -> None:
    built = pod()
    container = listener_container(built)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert {"name": "tmp", "emptyDir": {}} in built["spec"]["volumes"]


def test_the_listener_has_requests_and_limits() -> None:
    resources_ = listener_container(pod())["resources"]
    assert set(resources_["requests"]) == {"cpu", "memory"}
    assert set(resources_["limits"]) == {"cpu", "memory"}


def test_a_template_adds_to_the_security_context_and_sets_its_own_resources() -> None:
    template = {
        "spec": {
            "securityContext": {"runAsUser": 1001, "runAsGroup": 1001},
            "containers": [
                {
                    "name": "listener",
                    "securityContext": {"runAsUser": 1001},
                    "resources": {"limits": {"memory": "1Gi"}},
                }
            ],
        }
    }
    built = pod(template)
    assert built["spec"]["securityContext"]["runAsUser"] == 1001
    assert built["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = listener_container(built)
    assert container["securityContext"]["runAsUser"] == 1001
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"] == {"limits": {"memory": "1Gi"}}
    assert violations(built) == []


WHAT_RUNS = ("image", "command", "args", "volumeMounts", "envFrom", "ports")
POD_FIELDS = ("volumes", "serviceAccountName", "hostNetwork", "hostPID", "initContainers")


@hypothesis_settings(max_examples=300, deadline=None)
@given(ACCEPTED)
def test_an_accepted_template_never_loosens_the_pod_nor_changes_what_runs(
    template: dict[str, Any],
) -> None:
    assert screen(template, "spec.template") == []
    base, built = pod(), pod(template)
    assert violations(built) == []
    assert len(built["spec"]["containers"]) == 1
    for field in WHAT_RUNS:
        assert listener_container(built).get(field) == listener_container(base).get(field)
    for field in POD_FIELDS:
        assert built["spec"].get(field) == base["spec"].get(field)
