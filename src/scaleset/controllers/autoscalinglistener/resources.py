"""The listener's objects, built from the AutoscalingListener in ARC's shape: pure functions, no
I/O.

=====================  =================  ====================================================
object                 namespace          name
=====================  =================  ====================================================
ServiceAccount         listener's         the listener's name
Role, RoleBinding      scale set's        the listener's name (rules: ``api.listener_rbac``)
config Secret          listener's         ``<listener>-config``, key ``config.json``
proxy Secret           listener's         ``<listener>-proxy``: ``http_proxy``, ``https_proxy``,
                                          ``no_proxy``
Pod                    listener's         the listener's name
=====================  =================  ====================================================

Labels follow ARC: the listener's labels plus the scale set's name/namespace (computed labels
win over the user's ``*Metadata`` labels; ``--exclude-label-propagation-prefix`` drops keys),
plus ``auto-scaling-listener-name``/``-namespace`` on every object (ARC puts them on the Role
and RoleBinding; on the pod they are the controller's watch selector). The objects in the
listener's namespace are owned by the listener (controller reference).

The pod: container ``listener`` running the listener command with ``LISTENER_CONFIG_PATH`` =
``/etc/gha-listener/config.json`` (the config Secret mounted read-only, volume
``listener-config``), the proxy variables from the proxy Secret, port ``metrics`` when listener
metrics are on, ``terminationMessagePolicy: FallbackToLogsOnError`` (the last log lines — the
listener's one-line reason for exiting — become the container's termination message, which
the controller shows in the listener's condition), ServiceAccount = the listener's,
``nodeSelector`` ``kubernetes.io/os: linux``, ``restartPolicy: Never``, grace 60 s, and the
listener's image pull Secrets. The listener holds its scale set's GitHub credentials, so the pod
meets the Pod Security "restricted" profile (ARC's has no security context): non-root,
``RuntimeDefault`` seccomp, no privilege escalation, every capability dropped, a read-only root
filesystem with an emptyDir at ``/tmp`` (the image's ``HOME``), and requests and limits.

Then ``spec.template`` is merged as ARC merges it: template labels and annotations are added
without overriding; the container named ``listener`` gets the template's ``image`` and
``command`` when set, its ``env``, ``args``, ``ports``, ``envFrom``, ``volumeMounts`` and
``volumeDevices`` appended, its ``securityContext`` merged key by key into ours, and every other
field it sets; other containers are appended; ``volumes`` appended; ServiceAccount fields are
ignored; the pod ``securityContext`` is merged key by key; every other pod field the template
sets replaces ours (``nodeSelector: {}`` removes the default, an absent one keeps it) — priority
class, tolerations, affinity (e.g. keeping the listener off spot nodes) come from here. Which
template fields reach this merge at all is the controller's policy
(``scaleset.api.listener_template``: by default only what cannot loosen the pod or change what
runs). Deliberate difference: a pod field the template leaves out keeps our value (ARC resets
about thirty of them, e.g. the grace period, whenever a template is given).

``scaleset.dev/listener-pod-hash`` on the pod is a digest of its spec and of the contents of
the config and proxy Secrets: a listener reads its config once, so a different digest means
the pod must be replaced (labels and annotations alone are patched in place).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from scaleset.api import AutoscalingListener, ResourceMeta, keys, to_json
from scaleset.api.listener_rbac import RBAC_GROUP, listener_role_rules
from scaleset.api.naming import listener_config_secret_name, listener_proxy_secret_name
from scaleset.api.owned import controller_reference
from scaleset.controllers.autoscalinglistener.inputs import Inputs
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.runtime.probes import parse_bind_address

CONFIG_DIRECTORY = "/etc/gha-listener"
CONFIG_PATH = f"{CONFIG_DIRECTORY}/{keys.LISTENER_CONFIG_KEY}"
CONFIG_PATH_ENV = "LISTENER_CONFIG_PATH"
CONFIG_VOLUME = "listener-config"
METRICS_PORT_NAME = "metrics"
TERMINATION_GRACE_SECONDS = 60
TMP_VOLUME = "tmp"
TMP_DIRECTORY = "/tmp"  # noqa: S108 - a mount path in the pod (the image's HOME), an emptyDir
POD_SECURITY_CONTEXT: Mapping[str, Any] = {
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY_CONTEXT: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""The Pod Security "restricted" profile: a namespace that enforces it admits the listener."""
LISTENER_RESOURCES: Mapping[str, Any] = {
    "requests": {"cpu": "50m", "memory": "128Mi"},
    "limits": {"cpu": "1", "memory": "512Mi"},
}
"""The listener's requests and limits (an idle listener's RSS is about 101 MB,
bench/results/controller_memory.md); a template's ``resources`` replace them."""
LISTENER_OWNED_SELECTOR = keys.LISTENER_NAME_LABEL
"""Label selector (``exists``) of the pods this controller watches."""

_APPENDED_CONTAINER_LISTS = ("env", "args", "ports", "envFrom", "volumeMounts", "volumeDevices")
_MERGED_MAPS = frozenset({"securityContext"})
"""Fields whose template value is merged key by key into ours (a key set to null removes
ours), so a template that sets ``runAsUser`` keeps the rest of the restricted defaults."""
_SERVICE_ACCOUNT_FIELDS = frozenset(
    {"serviceAccountName", "serviceAccount", "automountServiceAccountToken"}
)
_NON_EMPTY_CONTAINER_FIELDS = ("image", "command")


# --- labels and metadata ----------------------------------------------------------------------


def _kept(key: str, exclude: Iterable[str]) -> bool:
    return not any(key.startswith(prefix) for prefix in exclude)


def merge_labels(
    base: Mapping[str, str], overwrite: Mapping[str, str], exclude: Iterable[str]
) -> dict[str, str]:
    """ARC's ``filterAndMergeLabels``: ``base`` then ``overwrite`` on top, both without the
    excluded prefixes."""
    prefixes = tuple(exclude)
    merged = {k: v for k, v in base.items() if _kept(k, prefixes)}
    merged.update({k: v for k, v in overwrite.items() if _kept(k, prefixes)})
    return merged


def _meta(meta: ResourceMeta | None) -> tuple[dict[str, str], dict[str, str]]:
    if meta is None:
        return {}, {}
    return dict(meta.labels), dict(meta.annotations)


def scale_set_labels(listener: AutoscalingListener) -> dict[str, str]:
    spec = listener.spec
    return {
        keys.SCALE_SET_NAMESPACE_LABEL: spec.autoscaling_runner_set_namespace,
        keys.SCALE_SET_NAME_LABEL: spec.autoscaling_runner_set_name,
    }


def listener_labels(listener: AutoscalingListener) -> dict[str, str]:
    return {
        keys.LISTENER_NAMESPACE_LABEL: listener.metadata.namespace,
        keys.LISTENER_NAME_LABEL: listener.metadata.name,
    }


def _labels(
    listener: AutoscalingListener,
    settings: Settings,
    user: Mapping[str, str],
    *,
    with_listener_labels: bool = True,
) -> dict[str, str]:
    computed = merge_labels(
        listener.metadata.labels, scale_set_labels(listener), settings.exclude_label_prefixes
    )
    if with_listener_labels:
        computed.update(listener_labels(listener))
    return merge_labels(user, computed, settings.exclude_label_prefixes)


def _owned_metadata(
    listener: AutoscalingListener, name: str, labels: dict[str, str], annotations: dict[str, str]
) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": listener.metadata.namespace,
        "labels": labels,
        "annotations": annotations,
        "ownerReferences": [
            controller_reference(
                "AutoscalingListener", listener.metadata.name, listener.metadata.uid
            )
        ],
    }


def _owned_secret(
    listener: AutoscalingListener,
    name: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    data: Mapping[str, bytes],
) -> dict[str, Any]:
    """An Opaque Secret the listener owns (the config and the proxy Secret), ``data``
    base64-encoded."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _owned_metadata(listener, name, labels, annotations),
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }


def _scale_set_namespace_metadata(
    listener: AutoscalingListener, settings: Settings, meta: ResourceMeta | None
) -> dict[str, Any]:
    """The metadata of the Role or RoleBinding: the listener's name in the scale set's
    namespace, the user's ``meta`` labels and annotations, no owner reference."""
    user_labels, annotations = _meta(meta)
    return {
        "name": listener.metadata.name,
        "namespace": listener.spec.autoscaling_runner_set_namespace,
        "labels": _labels(listener, settings, user_labels),
        "annotations": annotations,
    }


# --- ServiceAccount, Role, RoleBinding ---------------------------------------------------------


def service_account(listener: AutoscalingListener, settings: Settings) -> dict[str, Any]:
    user_labels, annotations = _meta(listener.spec.service_account_metadata)
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _owned_metadata(
            listener,
            listener.metadata.name,
            _labels(listener, settings, user_labels),
            annotations,
        ),
    }


def role(listener: AutoscalingListener, settings: Settings) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": _scale_set_namespace_metadata(listener, settings, listener.spec.role_metadata),
        "rules": listener_role_rules(listener.spec.ephemeral_runner_set_name),
    }


def role_ref(listener: AutoscalingListener) -> dict[str, Any]:
    return {"apiGroup": RBAC_GROUP, "kind": "Role", "name": listener.metadata.name}


def role_binding_subjects(listener: AutoscalingListener) -> list[dict[str, Any]]:
    return [
        {
            "kind": "ServiceAccount",
            "name": listener.metadata.name,
            "namespace": listener.metadata.namespace,
        }
    ]


def role_binding(listener: AutoscalingListener, settings: Settings) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _scale_set_namespace_metadata(
            listener, settings, listener.spec.role_binding_metadata
        ),
        "roleRef": role_ref(listener),
        "subjects": role_binding_subjects(listener),
    }


# --- the config Secret ------------------------------------------------------------------------


def config_document(
    listener: AutoscalingListener, inputs: Inputs, settings: Settings
) -> dict[str, Any]:
    """ARC's listener config (``cmd/ghalistener/config.Config``), key for key and in ARC's order:
    what ``scaleset listener`` and ARC's ``/ghalistener`` both read; plus ``warm_windows``
    (``spec.warmWindows`` as the CRD spells each item) when the listener has any."""
    spec = listener.spec
    credentials = inputs.credentials
    return {
        "configure_url": spec.github_config_url,
        "vault_type": "",
        "vault_lookup_key": "",
        "github_app_id": credentials.app_id,
        "github_app_installation_id": credentials.installation_id,
        "github_app_private_key": credentials.private_key,
        "github_token": credentials.token,
        "ephemeral_runner_set_namespace": spec.autoscaling_runner_set_namespace,
        "ephemeral_runner_set_name": spec.ephemeral_runner_set_name,
        "max_runners": spec.max_runners,
        "min_runners": spec.min_runners,
        "runner_scale_set_id": spec.runner_scale_set_id,
        "runner_scale_set_name": spec.autoscaling_runner_set_name,
        "server_root_ca": inputs.root_ca,
        "log_level": settings.log_level,
        "log_format": settings.log_format,
        "metrics_addr": settings.metrics_addr if settings.metrics_enabled else "",
        "metrics_endpoint": settings.metrics_endpoint if settings.metrics_enabled else "",
        "metrics": to_json(spec.metrics) if spec.metrics is not None else None,
        # scaleset's listener only (ARC's ignores unknown keys); left out without windows, so
        # the document of a scale set without them is ARC's byte for byte
        **(
            {"warm_windows": [to_json(window) for window in spec.warm_windows]}
            if spec.warm_windows
            else {}
        ),
    }


def encode_config(document: Mapping[str, Any]) -> bytes:
    """The bytes of ``config.json`` (one line and a newline, as Go's JSON encoder writes)."""
    return json.dumps(document, separators=(",", ":")).encode() + b"\n"


def content_digest(values: Mapping[str, Any] | None) -> str:
    """Digest of a Secret's content (or of ``config.json``'s decoded document): canonical JSON,
    so the same content always compares equal whatever the key order or spacing."""
    encoded = json.dumps(values, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def config_secret_labels(listener: AutoscalingListener, settings: Settings) -> dict[str, str]:
    user_labels, _ = _meta(listener.spec.config_secret_metadata)
    return merge_labels(
        user_labels,
        {**scale_set_labels(listener), **listener_labels(listener)},
        settings.exclude_label_prefixes,
    )


def config_secret_annotations(listener: AutoscalingListener) -> dict[str, str]:
    return _meta(listener.spec.config_secret_metadata)[1]


def config_secret(
    listener: AutoscalingListener, document: Mapping[str, Any], settings: Settings
) -> dict[str, Any]:
    """The listener's config Secret: ``document`` (``config_document``), encoded, under
    ``LISTENER_CONFIG_KEY``."""
    return _owned_secret(
        listener,
        listener_config_secret_name(listener.metadata.name),
        config_secret_labels(listener, settings),
        config_secret_annotations(listener),
        {keys.LISTENER_CONFIG_KEY: encode_config(document)},
    )


# --- the proxy Secret -------------------------------------------------------------------------


def proxy_secret_labels(listener: AutoscalingListener) -> dict[str, str]:
    return {**scale_set_labels(listener), **listener_labels(listener)}


def proxy_secret(listener: AutoscalingListener, data: Mapping[str, str]) -> dict[str, Any]:
    """The listener's proxy Secret: ``data``, the proxy variables, one key each."""
    return _owned_secret(
        listener,
        listener_proxy_secret_name(listener.metadata.name),
        proxy_secret_labels(listener),
        {},
        {key: value.encode() for key, value in data.items()},
    )


# --- the pod ----------------------------------------------------------------------------------


def _proxy_env(listener: AutoscalingListener) -> list[dict[str, Any]]:
    proxy = listener.spec.proxy
    if proxy is None:
        return []
    secret = listener_proxy_secret_name(listener.metadata.name)
    env: list[dict[str, Any]] = []
    for wanted, key in (
        (proxy.http is not None, keys.PROXY_HTTP_KEY),
        (proxy.https is not None, keys.PROXY_HTTPS_KEY),
        (bool(proxy.no_proxy), keys.PROXY_NO_PROXY_KEY),
    ):
        if wanted:
            env.append({"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    return env


def _metrics_port(settings: Settings) -> list[dict[str, Any]]:
    address = parse_bind_address(settings.metrics_addr)
    if address is None:
        return []
    return [{"containerPort": address[1], "protocol": "TCP", "name": METRICS_PORT_NAME}]


def base_pod(listener: AutoscalingListener, settings: Settings) -> dict[str, Any]:
    """The listener pod before the template is merged."""
    name = listener.metadata.name
    container: dict[str, Any] = {
        "name": keys.LISTENER_CONTAINER,
        "image": listener.spec.image,
        "command": list(settings.command),
        "env": [{"name": CONFIG_PATH_ENV, "value": CONFIG_PATH}, *_proxy_env(listener)],
        "volumeMounts": [
            {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIRECTORY, "readOnly": True},
            {"name": TMP_VOLUME, "mountPath": TMP_DIRECTORY},
        ],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "resources": copy.deepcopy(dict(LISTENER_RESOURCES)),
        "securityContext": copy.deepcopy(dict(CONTAINER_SECURITY_CONTEXT)),
    }
    ports = _metrics_port(settings)
    if ports:
        container["ports"] = ports
    spec: dict[str, Any] = {
        "serviceAccountName": name,
        "nodeSelector": {keys.OS_LABEL: "linux"},
        "securityContext": copy.deepcopy(dict(POD_SECURITY_CONTEXT)),
        "containers": [container],
        "volumes": [
            {
                "name": CONFIG_VOLUME,
                "secret": {"secretName": listener_config_secret_name(name)},
            },
            {"name": TMP_VOLUME, "emptyDir": {}},
        ],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
    }
    pull_secrets = [to_json(ref) for ref in listener.spec.image_pull_secrets]
    if pull_secrets:
        spec["imagePullSecrets"] = pull_secrets
    labels = {**listener.metadata.labels, **listener_labels(listener)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": listener.metadata.namespace,
            "labels": labels,
            "annotations": {},
            "ownerReferences": [
                controller_reference(
                    "AutoscalingListener", listener.metadata.name, listener.metadata.uid
                )
            ],
        },
        "spec": spec,
    }


def merge_template(pod: dict[str, Any], template: Mapping[str, Any] | None) -> dict[str, Any]:
    """``pod`` with the listener template merged (see the module docstring); a new object."""
    merged = copy.deepcopy(pod)
    if not template:
        return merged
    template = copy.deepcopy(dict(template))
    metadata = template.get("metadata") if isinstance(template.get("metadata"), Mapping) else {}
    for part in ("labels", "annotations"):
        extra = metadata.get(part) if isinstance(metadata, Mapping) else None
        if isinstance(extra, Mapping):
            target = merged["metadata"].setdefault(part, {})
            for key, value in extra.items():
                target.setdefault(str(key), value)
    tspec = template.get("spec")
    if not isinstance(tspec, Mapping):
        return merged
    spec = merged["spec"]
    for key, value in tspec.items():
        if key in _SERVICE_ACCOUNT_FIELDS:
            continue
        if key == "containers":
            _merge_containers(spec, value)
        elif key == "volumes":
            spec["volumes"] = [*spec.get("volumes", []), *(value or [])]
        elif key in _MERGED_MAPS:
            spec[key] = _merged_map(spec.get(key), value)
        else:
            spec[key] = value
    return merged


def _merged_map(ours: Any, theirs: Any) -> Any:
    """``theirs`` key by key over ``ours`` (both objects), else ``theirs``."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        return {**ours, **theirs}
    return theirs


def _merge_containers(spec: dict[str, Any], containers: Any) -> None:
    if not isinstance(containers, list):
        return
    listener = spec["containers"][0]
    for container in containers:
        if not isinstance(container, Mapping):
            continue
        if container.get("name") != keys.LISTENER_CONTAINER:
            spec["containers"].append(dict(container))
            continue
        for key, value in container.items():
            if key == "name":
                continue
            if key in _NON_EMPTY_CONTAINER_FIELDS:
                if value:
                    listener[key] = value
            elif key in _APPENDED_CONTAINER_LISTS:
                listener[key] = [*listener.get(key, []), *(value or [])]
            elif key in _MERGED_MAPS:
                listener[key] = _merged_map(listener.get(key), value)
            else:
                listener[key] = value


def pod_hash(pod_spec: Mapping[str, Any], config_digest: str, proxy_digest: str) -> str:
    return content_digest({"spec": pod_spec, "config": config_digest, "proxy": proxy_digest})


def listener_pod(
    listener: AutoscalingListener, settings: Settings, config_digest: str, proxy_digest: str
) -> dict[str, Any]:
    """The listener pod to create: base, template merged, hash annotation set."""
    pod = merge_template(base_pod(listener, settings), listener.spec.template)
    pod["metadata"]["annotations"][keys.LISTENER_POD_HASH_ANNOTATION] = pod_hash(
        pod["spec"], config_digest, proxy_digest
    )
    return pod
