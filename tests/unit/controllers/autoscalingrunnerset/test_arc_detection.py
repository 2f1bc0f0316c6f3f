"""Recognising ARC's own controller pod (takeover guard) — and never scaleset's."""

from __future__ import annotations

from typing import Any

import pytest

from scaleset.api import keys
from scaleset.controllers.autoscalingrunnerset.arc_detection import (
    arc_controllers,
    controller_pod_record,
    image_repository_name,
    is_arc_controller,
)
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import POD

ARC = "ghcr.io/actions/gha-runner-scale-set-controller:0.14.2"
OURS = "ghcr.io/scaleset/scaleset:1.0"


def pod(
    image: str,
    *,
    labels: dict[str, str] | None = None,
    phase: str = "Running",
    deleting: bool = False,
    name: str = "arc-gha-rs-controller-x",
) -> KubeObject:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "arc-systems",
        "labels": {keys.PART_OF_LABEL: keys.CONTROLLER_PART_OF_VALUE} if labels is None else labels,
    }
    if deleting:
        metadata["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    raw = {
        "metadata": metadata,
        "spec": {"containers": [{"name": "manager", "image": image, "args": ["--x"]}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready"}]},
    }
    return KubeObject(POD, controller_pod_record(raw))


@pytest.mark.parametrize(
    ("image", "name"),
    [
        (ARC, "gha-runner-scale-set-controller"),
        (
            "registry.corp/mirror/gha-runner-scale-set-controller@sha256:abc",
            "gha-runner-scale-set-controller",
        ),
        ("gha-runner-scale-set-controller", "gha-runner-scale-set-controller"),
        ("localhost:5000/scaleset:1.0", "scaleset"),
    ],
)
def test_image_repository_name(image: str, name: str) -> None:
    assert image_repository_name(image) == name


def test_a_running_arc_controller_is_recognised() -> None:
    assert is_arc_controller(pod(ARC), OURS)
    assert is_arc_controller(pod(ARC, phase="Pending"), OURS)
    assert arc_controllers([pod(ARC), pod(OURS, name="scaleset-0")], OURS) == (
        "arc-systems/arc-gha-rs-controller-x",
    )


@pytest.mark.parametrize(
    "candidate",
    [
        pod(OURS),
        pod(ARC, phase="Succeeded"),
        pod(ARC, phase="Failed"),
        pod(ARC, deleting=True),
        pod(ARC, labels={}),
    ],
    ids=["scaleset", "succeeded", "failed", "deleting", "unlabelled"],
)
def test_what_is_not_a_live_arc_controller(candidate: KubeObject) -> None:
    assert not is_arc_controller(candidate, OURS)


def test_a_pod_running_our_own_image_is_never_arc_whatever_the_image_is_called() -> None:
    assert not is_arc_controller(pod(ARC), own_image=ARC)


def test_the_cached_record_keeps_only_names_images_and_phase() -> None:
    record = pod(ARC).raw
    assert record["spec"] == {"containers": [{"name": "manager", "image": ARC}]}
    assert record["status"] == {"phase": "Running"}
