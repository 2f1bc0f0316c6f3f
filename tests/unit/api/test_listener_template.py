"""``listener_template.screen``: a scale set's author may place and size the listener, give it
environment variables and tighten its security — nothing else, each refusal naming its field —
and ``refusals`` applies it (and the http rule) unless the controller's ``Policy`` allows."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from tests.support.listener_templates import ACCEPTED

from scaleset.api import AutoscalingRunnerSet, Policy, Refusal, refusals
from scaleset.api.listener_template import screen

PATH = "spec.listenerTemplate"


@hypothesis_settings(max_examples=300, deadline=None)
@given(ACCEPTED)
def test_what_listener_templates_are_for_is_accepted(template: dict[str, Any]) -> None:
    assert screen(template, PATH) == []


FORBIDDEN: list[tuple[str, Any]] = [
    ("spec.volumes", [{"name": "keys", "secret": {"secretName": "other-listener-config"}}]),
    ("spec.hostNetwork", True),
    ("spec.hostPID", True),
    ("spec.initContainers", [{"name": "x", "image": "evil"}]),
    ("spec.nodeName", "node-1"),
    ("spec.runtimeClassName", "unconfined"),
    ("spec.securityContext.runAsUser", 0),
    ("spec.securityContext.runAsNonRoot", False),
    ("spec.securityContext.sysctls", [{"name": "kernel.msgmax", "value": "1"}]),
    ("spec.securityContext.seccompProfile", {"type": "Unconfined"}),
    ("spec.containers[0].image", "evil:1"),
    ("spec.containers[0].command", ["sh", "-c", "cat /keys/*"]),
    ("spec.containers[0].args", ["--steal"]),
    ("spec.containers[0].volumeMounts", [{"name": "keys", "mountPath": "/keys"}]),
    ("spec.containers[0].envFrom", [{"secretRef": {"name": "other"}}]),
    ("spec.containers[0].ports", [{"containerPort": 80, "hostPort": 80}]),
    ("spec.containers[0].env[0].valueFrom", {"secretKeyRef": {"name": "o", "key": "k"}}),
    ("spec.containers[0].env[0].valueFrom", {"configMapKeyRef": {"name": "o", "key": "k"}}),
    ("spec.containers[0].resources.claims", [{"name": "gpu"}]),
    ("spec.containers[0].securityContext.privileged", True),
    ("spec.containers[0].securityContext.allowPrivilegeEscalation", True),
    ("spec.containers[0].securityContext.readOnlyRootFilesystem", False),
    ("spec.containers[0].securityContext.runAsUser", 0),
    ("spec.containers[0].securityContext.capabilities", {"add": ["NET_ADMIN"]}),
    ("spec.containers[0].securityContext.capabilities", {"drop": ["NET_RAW"]}),
    ("spec.containers[0].securityContext.seccompProfile", {"type": "Unconfined"}),
    ("spec.containers[0].securityContext.appArmorProfile", {"type": "Unconfined"}),
    ("spec.containers[0].securityContext.procMount", "Unmasked"),
    ("spec.containers[0].securityContext.seLinuxOptions", {"type": "spc_t"}),
    ("spec.containers[0].securityContext.windowsOptions", {"hostProcess": True}),
    ("metadata.name", "x"),
]


def put(template: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``template`` with ``value`` at ``path`` (a missing list item is the listener
    container)."""
    result = copy.deepcopy(template)
    node: Any = result
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part, following in zip(parts, [*parts[1:], None], strict=True):
        if following is None:
            node[part] = value
        elif part.isdigit():
            while len(node) <= int(part):
                node.append({"name": "listener"})
            node = node[int(part)]
        else:
            node = node.setdefault(part, [] if following.isdigit() else {})
    return result


@hypothesis_settings(max_examples=200, deadline=None)
@given(ACCEPTED, st.sampled_from(FORBIDDEN))
def test_each_forbidden_field_is_refused_by_its_path(
    template: dict[str, Any], forbidden: tuple[str, Any]
) -> None:
    path, value = forbidden
    if ".env[" in path:
        template = copy.deepcopy(template)
        spec = template.setdefault("spec", {})
        spec["containers"] = [{"name": "listener", "env": [{"name": "V"}]}]
    changed = put(template, path, value)
    refused = [item.field for item in screen(changed, PATH)]
    assert refused == [f"{PATH}.{path}"]


def test_another_container_is_refused_by_its_index() -> None:
    template = {"spec": {"containers": [{"name": "listener"}, {"name": "sidecar", "image": "x"}]}}
    refused = screen(template, PATH)
    assert [item.field for item in refused] == [f"{PATH}.spec.containers[1]"]
    assert "listener" in refused[0].message


def test_the_message_says_how_an_admin_allows_the_full_template() -> None:
    (refused,) = screen({"spec": {"volumes": []}}, PATH)
    assert "--allow-full-listener-template" in refused.message


def scale_set(url: str, listener_template: dict[str, Any] | None) -> AutoscalingRunnerSet:
    spec: dict[str, Any] = {
        "githubConfigUrl": url,
        "githubConfigSecret": "s",
        "template": {"spec": {"containers": [{"name": "runner"}]}},
    }
    if listener_template is not None:
        spec["listenerTemplate"] = listener_template
    return AutoscalingRunnerSet.model_validate(
        {"metadata": {"name": "a", "namespace": "n"}, "spec": spec}
    )


HOST_PATH = {"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (
            Policy(),
            [
                ("spec.githubConfigUrl", "InsecureGitHubUrl"),
                ("spec.listenerTemplate.spec.volumes", "ListenerTemplateRefused"),
            ],
        ),
        (
            Policy(allow_http_github_url=True),
            [("spec.listenerTemplate.spec.volumes", "ListenerTemplateRefused")],
        ),
        (
            Policy(allow_full_listener_template=True),
            [("spec.githubConfigUrl", "InsecureGitHubUrl")],
        ),
        (Policy(allow_http_github_url=True, allow_full_listener_template=True), []),
    ],
)
def test_refusals_follow_the_policy(policy: Policy, expected: list[tuple[str, str]]) -> None:
    found = refusals(scale_set("http://github.internal/acme", HOST_PATH), policy)
    assert [(item.field, item.reason) for item in found] == expected
    assert all(isinstance(item, Refusal) for item in found)


def test_https_and_an_invalid_url_are_not_refused_for_their_scheme() -> None:
    assert refusals(scale_set("https://github.com/acme", None), Policy()) == []
    assert refusals(scale_set("ftp://github.com/acme", None), Policy()) == [], (
        "an invalid URL is validate()'s to report"
    )
