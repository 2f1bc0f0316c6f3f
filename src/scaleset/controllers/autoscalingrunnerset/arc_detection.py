"""Is ARC's own controller still running? (takeover guard)

Two controllers acting on the same AutoscalingRunnerSets fight: ARC deletes listeners that are
not built its way, rewrites runner sets and deletes scale sets over its version gate. So
scaleset does nothing to a scale set while ARC's controller runs (condition + Event), and
docs/takeover-from-arc.md says to scale it to 0 first.

How it is recognised: a pod labelled ``app.kubernetes.io/part-of=gha-rs-controller`` (the label
ARC's controller chart puts on its pods, and the one the scale-set chart looks up), not being
deleted and not finished, one of whose containers runs ARC's image — the image repository's
last path segment is ``gha-runner-scale-set-controller``, wherever it is mirrored, whatever tag
or digest. scaleset's own pods may carry the same label (so the chart finds scaleset's service
account); their image is scaleset's, so they never match. Only the namespaces the controller
watches are seen (with ``--watch-single-namespace``, ARC running elsewhere is not noticed).
"""

from __future__ import annotations

from typing import Any

from scaleset.api import keys
from scaleset.kube.objects import JsonObject, KubeObject, drop_managed_fields

ARC_CONTROLLER_IMAGE = "gha-runner-scale-set-controller"
CONTROLLER_POD_SELECTOR = f"{keys.PART_OF_LABEL}={keys.CONTROLLER_PART_OF_VALUE}"
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


def controller_pod_record(raw: JsonObject) -> JsonObject:
    """The cached record of a controller-chart pod: metadata, ``status.phase`` and each
    container's name and image (the runtime's default pod record drops images)."""
    drop_managed_fields(raw)
    spec = raw.get("spec")
    containers: list[dict[str, Any]] = []
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        containers = [
            {"name": item.get("name", ""), "image": item.get("image", "")}
            for item in spec["containers"]
            if isinstance(item, dict)
        ]
    raw["spec"] = {"containers": containers}
    status = raw.get("status")
    raw["status"] = {"phase": status.get("phase")} if isinstance(status, dict) else {}
    return raw


def image_repository_name(image: str) -> str:
    """``ghcr.io/actions/gha-runner-scale-set-controller:0.14.2`` → the last path segment
    without tag or digest (``gha-runner-scale-set-controller``)."""
    without_digest = image.split("@", 1)[0]
    last = without_digest.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def is_arc_controller(pod: KubeObject, own_image: str = "") -> bool:
    """The pod is a live ARC controller (rules in the module docstring); ``own_image`` is the
    image scaleset's controller runs."""
    if pod.labels.get(keys.PART_OF_LABEL) != keys.CONTROLLER_PART_OF_VALUE or pod.is_deleting:
        return False
    if pod.status.get("phase") in FINISHED_PHASES:
        return False
    containers = pod.spec.get("containers")
    if not isinstance(containers, list):
        return False
    images = [
        container["image"]
        for container in containers
        if isinstance(container, dict) and isinstance(container.get("image"), str)
    ]
    if own_image and own_image in images:
        return False
    return any(image_repository_name(image) == ARC_CONTROLLER_IMAGE for image in images)


def arc_controllers(pods: list[KubeObject], own_image: str = "") -> tuple[str, ...]:
    """``namespace/name`` of each live ARC controller pod, sorted."""
    return tuple(sorted(str(pod.key) for pod in pods if is_arc_controller(pod, own_image)))
