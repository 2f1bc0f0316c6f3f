"""Pods as the real registry treats them: defaulting, validation, status isolation, graceful delete.

What a status write may contain (and how podIP/podIPs are kept in step) is in ``_pod_status``.

Defaults follow a 1.20 kube-apiserver with the DefaultTolerationSeconds and Priority admission
plugins on; ServiceAccount admission (also on, as on our real test server) is in ``_admission``.
A pod that is not bound to a node, or that already finished, is deleted at once; a bound pod gets
a deletionTimestamp and a grace period and stays until a grace-0 delete (the kubelet's
confirmation).
"""

from __future__ import annotations

import json
from typing import Any

from scaleset.embedded.apiserver import _names, _pod_status
from scaleset.embedded.apiserver._errors import (
    FieldError,
    duplicate,
    field_not_found,
    forbidden,
    invalid_value,
    not_supported,
    required,
)
from scaleset.embedded.apiserver._kinds import Strategy
from scaleset.embedded.apiserver._patch import PatchMeta
from scaleset.embedded.apiserver._typed_decode import check_types

POD_DEFINITION = "io.k8s.api.core.v1.Pod"

JsonObj = dict[str, Any]

_CONTAINER_META = PatchMeta(
    merge_key="name",
    fields={
        "ports": PatchMeta(merge_key="containerPort"),
        "env": PatchMeta(merge_key="name"),
        "volumeMounts": PatchMeta(merge_key="mountPath"),
        "volumeDevices": PatchMeta(merge_key="devicePath"),
    },
)
POD_SPEC_PATCH_META = PatchMeta(
    fields={
        "containers": _CONTAINER_META,
        "initContainers": _CONTAINER_META,
        "ephemeralContainers": _CONTAINER_META,
        "volumes": PatchMeta(merge_key="name"),
        "imagePullSecrets": PatchMeta(merge_key="name"),
        "hostAliases": PatchMeta(merge_key="ip"),
        "topologySpreadConstraints": PatchMeta(merge_key="topologyKey"),
    }
)
METADATA_PATCH_META = PatchMeta(
    fields={
        "finalizers": PatchMeta(merge_primitives=True),
        "ownerReferences": PatchMeta(merge_key="uid"),
    }
)
POD_PATCH_META = PatchMeta(
    fields={
        "metadata": METADATA_PATCH_META,
        "spec": POD_SPEC_PATCH_META,
        "status": PatchMeta(fields={"conditions": PatchMeta(merge_key="type")}),
    }
)

POD_FIELD_LABELS = {
    "spec.nodeName": "spec.nodeName",
    "spec.restartPolicy": "spec.restartPolicy",
    "spec.schedulerName": "spec.schedulerName",
    "spec.serviceAccountName": "spec.serviceAccountName",
    "status.phase": "status.phase",
    "status.podIP": "status.podIP",
    "status.nominatedNodeName": "status.nominatedNodeName",
}

_DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]


def _default_probe(probe: object) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http_get = probe.get("httpGet")
    if isinstance(http_get, dict):
        http_get.setdefault("path", "/")
        http_get.setdefault("scheme", "HTTP")


def _default_container(container: JsonObj) -> None:
    image = container.get("image", "")
    if "imagePullPolicy" not in container and isinstance(image, str):
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
        container["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    resources = container.setdefault("resources", {})
    if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        requests = resources.setdefault("requests", {})
        if isinstance(requests, dict):
            for name, value in resources["limits"].items():
                requests.setdefault(name, value)
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        value_from = env.get("valueFrom") if isinstance(env, dict) else None
        if isinstance(value_from, dict) and isinstance(value_from.get("fieldRef"), dict):
            value_from["fieldRef"].setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe))


def _default_volume(volume: JsonObj) -> None:
    for source in ("secret", "configMap"):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", 420)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")
    if isinstance(volume.get("downwardAPI"), dict):
        volume["downwardAPI"].setdefault("defaultMode", 420)
    if isinstance(volume.get("projected"), dict):
        volume["projected"].setdefault("defaultMode", 420)
    if not any(k != "name" for k in volume):
        volume["emptyDir"] = {}


def _qos_class(spec: JsonObj) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    containers += [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits.get(name)) != limits.get(name):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod_spec(spec: JsonObj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    # v1 conversion: the deprecated serviceAccount fills an empty serviceAccountName, and is
    # always written back as a copy of it
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    else:
        spec.pop("serviceAccountName", None)
        spec.pop("serviceAccount", None)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                _default_container(container)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _default_volume(volume)


def _validate_containers(containers: object, path: str, volumes: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(containers, list):
        return errs
    seen: set[str] = set()
    for i, container in enumerate(containers):
        cpath = f"{path}[{i}]"
        if not isinstance(container, dict):
            errs.append(invalid_value(cpath, container, "must be an object"))
            continue
        name = container.get("name", "")
        if not name:
            errs.append(required(f"{cpath}.name"))
        else:
            errs.extend(invalid_value(f"{cpath}.name", name, m) for m in _names.dns1123_label(name))
            if name in seen:
                errs.append(duplicate(f"{cpath}.name", name))
            seen.add(name)
        if not container.get("image"):
            errs.append(required(f"{cpath}.image"))
        policy = container.get("imagePullPolicy")
        if policy not in (None, "Always", "IfNotPresent", "Never"):
            errs.append(
                not_supported(
                    f"{cpath}.imagePullPolicy", policy, ["Always", "IfNotPresent", "Never"]
                )
            )
        for j, mount in enumerate(container.get("volumeMounts") or []):
            mpath = f"{cpath}.volumeMounts[{j}]"
            if not isinstance(mount, dict):
                continue
            if not mount.get("name"):
                errs.append(required(f"{mpath}.name"))
            elif mount["name"] not in volumes:
                errs.append(field_not_found(f"{mpath}.name", mount["name"]))
            if not mount.get("mountPath"):
                errs.append(required(f"{mpath}.mountPath"))
        for j, env in enumerate(container.get("env") or []):
            if isinstance(env, dict) and not env.get("name"):
                errs.append(required(f"{cpath}.env[{j}].name"))
    return errs


def validate_pod_spec(spec: object, path: str = "spec") -> list[FieldError]:
    if not isinstance(spec, dict):
        spec = {"restartPolicy": "Always"}
    errs: list[FieldError] = []
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        if not isinstance(volume, dict):
            continue
        name = volume.get("name", "")
        if not name:
            errs.append(required(f"{path}.volumes[{i}].name"))
        elif name in volumes:
            errs.append(duplicate(f"{path}.volumes[{i}].name", name))
        volumes.add(name)
    containers = spec.get("containers")
    if not containers:
        errs.append(required(f"{path}.containers"))
    errs.extend(_validate_containers(containers, f"{path}.containers", volumes))
    errs.extend(_validate_containers(spec.get("initContainers"), f"{path}.initContainers", volumes))
    policy = spec.get("restartPolicy")
    if policy not in _RESTART_POLICIES:
        errs.append(not_supported(f"{path}.restartPolicy", policy, _RESTART_POLICIES))
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        errs.append(
            invalid_value(
                f"{path}.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"
            )
        )
    node = spec.get("nodeName")
    if node:
        errs.extend(
            invalid_value(f"{path}.nodeName", node, m) for m in _names.dns1123_subdomain(node)
        )
    return errs


def _mutable_view(spec: JsonObj) -> str:
    """The spec with the fields a pod update may change blanked out."""
    view = json.loads(json.dumps(spec))
    for key in ("containers", "initContainers"):
        for container in view.get(key) or []:
            if isinstance(container, dict):
                container.pop("image", None)
    view.pop("activeDeadlineSeconds", None)
    view.pop("tolerations", None)
    return json.dumps(view, sort_keys=True)


class PodStrategy(Strategy):
    kind = "Pod"
    namespaced = True
    strict_finalizers = True
    field_selector_error = "unsupported"
    status_subresource = True
    graceful = True
    return_deleted_object = True
    patch_meta = POD_PATCH_META
    top_level_fields = frozenset({"spec", "status"})

    def shape(self, obj: JsonObj) -> JsonObj:
        obj = super().shape(obj)
        check_types("Pod", POD_DEFINITION, obj, ("spec", "status"))
        status = obj.get("status")
        if isinstance(status, dict):
            _pod_status.normalize_status(status)
        return obj

    def default(self, obj: JsonObj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_pod_spec(spec)

    def prepare_create(self, obj: JsonObj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
            return
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        tolerations = spec.setdefault("tolerations", [])
        if isinstance(tolerations, list):
            for default in _DEFAULT_TOLERATIONS:
                if not any(
                    isinstance(t, dict)
                    and t.get("key") == default["key"]
                    and t.get("effect") in (None, "", "NoExecute")
                    for t in tolerations
                ):
                    tolerations.append(dict(default))
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}

    def validate(self, obj: JsonObj) -> list[FieldError]:
        return validate_pod_spec(obj.get("spec"))

    def prepare_update(self, new: JsonObj, old: JsonObj) -> None:
        new["status"] = old.get("status", {})
        spec = new.get("spec")
        if isinstance(spec, dict):
            default_pod_spec(spec)

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        errs = self.validate(new)
        new_spec, old_spec = new.get("spec"), old.get("spec")
        if errs or not isinstance(new_spec, dict) or not isinstance(old_spec, dict):
            return errs
        old_tolerations = old_spec.get("tolerations") or []
        new_tolerations = new_spec.get("tolerations") or []
        if _mutable_view(new_spec) != _mutable_view(old_spec) or any(
            t not in new_tolerations for t in old_tolerations
        ):
            errs.append(
                forbidden(
                    "spec",
                    "pod updates may not change fields other than `spec.containers[*].image`, "
                    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or "
                    "`spec.tolerations` (only additions to existing tolerations)",
                )
            )
        return errs

    def prepare_status_update(self, new: JsonObj, old: JsonObj) -> JsonObj:
        result = dict(new)
        result["spec"] = old.get("spec", {})
        meta = dict(new.get("metadata", {}))
        if "ownerReferences" in old["metadata"]:
            meta["ownerReferences"] = old["metadata"]["ownerReferences"]
        else:
            meta.pop("ownerReferences", None)
        meta.pop("deletionTimestamp", None)
        result["metadata"] = meta
        status = result.get("status")
        if isinstance(status, dict) and isinstance(status.get("conditions"), list):
            # metav1.Time fields of a typed condition come back as null when unset
            status["conditions"] = [
                {"lastProbeTime": None, "lastTransitionTime": None, **c}
                if isinstance(c, dict)
                else c
                for c in status["conditions"]
            ]
        return result

    def validate_status_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        return _pod_status.validate_status_update(new, old)

    def grace_period(self, obj: JsonObj, requested: int | None) -> int:
        spec = obj.get("spec") or {}
        period = (
            requested if requested is not None else spec.get("terminationGracePeriodSeconds", 0)
        )
        if not spec.get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            return 0
        return int(period or 0)
