"""Every key of ARC's values.yaml, in each generation (0.14.2, and 0.15: the master snapshot's
keys plus what 0.15.0 added), either changes our output (as ARC's does: each such key is set in a
case that ``test_arc_equivalence`` compares with ARC's rendering) or is ignored with a warning in
the install notes and the controller's log. No key is ignored silently."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.deploy.controller_chart.cases import (
    ARC_0_15,
    ARC_0_15_ADDED,
    GENERATIONS,
    Generation,
    arc_default_values,
    arc_value_keys,
    cases,
    lookup,
    with_key,
)
from tests.deploy.controller_chart.rendering import manager_container, notes, render_ours

APPLIED: dict[str, Any] = {
    "labels": {"team": "platform"},
    "replicaCount": 3,
    "image.repository": "registry.example.com/scaleset",
    "image.pullPolicy": "Always",
    "image.tag": "9.9.9",
    "imagePullSecrets": [{"name": "regcred"}],
    "nameOverride": "ctl",
    "fullnameOverride": "my-controller",
    "env": [{"name": "X", "value": "1"}],
    "serviceAccount.create": False,
    "serviceAccount.annotations": {"a": "b"},
    "serviceAccount.name": "ctl-sa",
    "podAnnotations": {"a": "b"},
    "podLabels": {"a": "b"},
    "podSecurityContext": {"fsGroup": 2000},
    "securityContext": {"runAsUser": 1000},
    "resources": {"limits": {"memory": "256Mi"}},
    "nodeSelector": {"pool": "system"},
    "tolerations": [{"key": "k", "operator": "Exists"}],
    "affinity": {"podAntiAffinity": {}},
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
    ],
    "volumes": [{"name": "v", "emptyDir": {}}],
    "volumeMounts": [{"name": "v", "mountPath": "/v"}],
    "priorityClassName": "high",
    "metrics.controllerManagerAddr": ":9090",
    "metrics.listenerAddr": ":9091",
    "metrics.listenerEndpoint": "/m",
    "flags.logLevel": "warn",
    "flags.logFormat": "json",
    "flags.watchSingleNamespace": "runners",
    "flags.runnerMaxConcurrentReconciles": 7,
    "flags.excludeLabelPropagationPrefixes": ["x/"],
    "flags.rateLimiter.name": "typed_rate_limiter",
    "flags.healthProbeBindAddress": ":9440",
    "flags.k8sClientRateLimiterQPS": 40,
    "flags.k8sClientRateLimiterBurst": 80,
    "namespaceOverride": "elsewhere",
    "terminationGracePeriodSeconds": 50,
    "flags.autoscalingRunnerSetMaxConcurrentReconciles": 3,
    "flags.autoscalingListenerMaxConcurrentReconciles": 3,
    "flags.ephemeralRunnerSetMaxConcurrentReconciles": 3,
    "flags.ephemeralRunnerMaxConcurrentReconciles": 6,
}
"""ARC keys our chart acts on, each with a value away from the default."""

IGNORED: dict[str, Any] = {
    "flags.updateStrategy": "eventual",
    "pprof.addr": ":6060",
}
"""ARC keys our chart ignores, each with a value that draws the warning."""

METRICS = ("metrics.controllerManagerAddr", "metrics.listenerAddr", "metrics.listenerEndpoint")
ALL_METRICS = {
    "controllerManagerAddr": ":8080",
    "listenerAddr": ":8080",
    "listenerEndpoint": "/metrics",
}


def _base(key: str) -> dict[str, Any]:
    # metrics.* act together (ARC reads all three once metrics is set): vary one of a full set
    values = arc_default_values()
    if key in METRICS:
        values["metrics"] = dict(ALL_METRICS)
    if key.startswith("image."):
        # ARC's image (in ARC's defaults) is replaced with tag and all: start from another one
        values["image"]["repository"] = "registry.example.com/ci/controller"
    if key.startswith("serviceAccount.name"):
        values["serviceAccount"]["create"] = True
    return values


def _sample(key: str) -> dict[str, Any]:
    values = with_key(_base(key), key, APPLIED[key])
    if key == "serviceAccount.create":
        values = with_key(values, "serviceAccount.name", "existing")
    return values


def generation_keys(generation: Generation) -> set[str]:
    """Every key of the generation's values.yaml (0.15: and the keys 0.15.0 added)."""
    added = set(ARC_0_15_ADDED) if generation is ARC_0_15 else set()
    return set(arc_value_keys(generation)) | added


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: g.name)
def test_every_arc_key_is_applied_or_ignored(generation: Generation) -> None:
    keys = generation_keys(generation)
    assert not keys - set(APPLIED) - set(IGNORED), "not covered"
    assert not set(APPLIED) & set(IGNORED)


def test_every_applied_or_ignored_key_is_an_arc_key() -> None:
    known = set().union(*(generation_keys(g) for g in GENERATIONS))
    assert not (set(APPLIED) | set(IGNORED)) - known


@pytest.mark.parametrize("key", sorted(APPLIED))
def test_applied_key_changes_our_output(key: str) -> None:
    assert render_ours(_sample(key)) != render_ours(_base(key))


@pytest.mark.parametrize("key", sorted(APPLIED))
def test_applied_key_is_compared_with_arc_in_some_case(key: str) -> None:
    """Some case sets the key away from ARC's default, so test_arc_equivalence holds our
    rendering of it to ARC's (for a key 0.15.0 added after the master snapshot: to ARC's
    rendering without it, plus the documented difference of honouring it)."""
    generations = [g for g in GENERATIONS if key in generation_keys(g)]
    assert any(
        (found := lookup(c.values, key))[0] and found[1] != lookup(arc_default_values(g), key)[1]
        for g in generations
        for c in cases(g)
    ), f"no case sets {key}"


IGNORED_ENV = "SCALESET_IGNORED_VALUES"


def _without_ignored_list(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The objects without the controller's list of ignored values, and that list."""
    listed = ""
    for container in manager_container(objects)["env"]:
        if container["name"] == IGNORED_ENV:
            listed = container["value"]
    manager = manager_container(objects)
    manager["env"] = [item for item in manager["env"] if item["name"] != IGNORED_ENV]
    return objects, listed


@pytest.mark.parametrize("key", sorted(IGNORED))
def test_ignored_key_changes_nothing_but_warns(key: str) -> None:
    values = with_key(arc_default_values(), key, IGNORED[key])
    base = with_key(with_key(arc_default_values(), "flags.updateStrategy", None), key, None)
    ours, listed = _without_ignored_list(render_ours(values))
    assert ours == _without_ignored_list(render_ours(base))[0]
    assert f"WARNING: value {key} is ignored" in notes(values)
    assert f"WARNING: value {key} is ignored" not in notes(base)
    assert key in [entry["key"] for entry in json.loads(listed)]  # logged by the controller


def test_arc_defaults_with_the_users_image_draw_no_warning() -> None:
    """ARC's image is refused (test_arc_values_files); with the user's own image in its place,
    ARC 0.14.2's default values draw one warning, for the flags.updateStrategy they set."""
    warnings = [line for line in notes(arc_default_values()).splitlines() if "WARNING" in line]
    assert [line.split(" is ignored")[0] for line in warnings] == [
        "WARNING: value flags.updateStrategy"
    ]
    assert "WARNING" not in notes({})


def test_unknown_keys_are_warned_about() -> None:
    text = notes({"replicas": 2, "flags": {"logLevle": "info"}})
    assert "WARNING: value replicas is ignored: this chart does not know this value" in text
    assert "WARNING: value flags.logLevle is ignored" in text
