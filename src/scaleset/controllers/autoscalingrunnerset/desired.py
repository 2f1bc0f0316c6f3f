"""What the EphemeralRunnerSet and the AutoscalingListener of a scale set should look like, built
from the AutoscalingRunnerSet the way ARC builds them, and how to
get an existing object there with one merge patch. Pure functions.

Change detection: each object we write carries ``scaleset.dev/spec-hash``, a digest of the
desired spec parts, labels and annotations. Equal digest: nothing to do, whatever the API server
did to the stored shape. Different (or absent, e.g. an object ARC wrote): the parts are compared
*normalised* (empty objects, lists, strings and nulls dropped — Go serialises zero values that
the chart never wrote) and only the parts that really differ go into the patch, together with the
new digest. So taking over ARC's objects, or handing them back, writes no spec that did not
change: no runner is replaced and no listener restarted for it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scaleset.api import keys
from scaleset.api.naming import github_url_labels, listener_name
from scaleset.api.owned import controller_reference, string_map
from scaleset.controllers.autoscalingrunnerset.observed import (
    MAX_INT32,
    ListenerView,
    RunnerSetView,
    ScaleSetView,
)
from scaleset.controllers.autoscalingrunnerset.settings import Settings

PRESERVED_RUNNER_SPEC_FIELDS = ("proxySecretRef",)
"""Fields of ``spec.ephemeralRunnerSpec`` the EphemeralRunnerSet controller owns (the proxy
Secret it makes for the runners); kept as they are."""

RUNNER_SPEC_FIELDS = (
    "githubServerTLS",
    "proxy",
    "vaultConfig",
    "ephemeralRunnerConfigSecretMetadata",
)
"""Copied from the scale set's spec into ``spec.ephemeralRunnerSpec`` when set."""

LISTENER_SPEC_FIELDS = (
    ("proxy", "proxy"),
    ("githubServerTLS", "githubServerTLS"),
    ("vaultConfig", "vaultConfig"),
    ("listenerMetrics", "metrics"),
    ("listenerTemplate", "template"),
    ("listenerConfigSecretMetadata", "configSecretMetadata"),
    ("listenerServiceAccountMetadata", "serviceAccountMetadata"),
    ("listenerRoleMetadata", "roleMetadata"),
    ("listenerRoleBindingMetadata", "roleBindingMetadata"),
    ("warmWindows", "warmWindows"),
)
"""(scale set field, listener field) pairs copied when set."""


@dataclass(frozen=True)
class DesiredRunnerSet:
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    runner_spec: dict[str, Any]
    runner_metadata: dict[str, Any] | None
    hash: str


@dataclass(frozen=True)
class DesiredListener:
    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict[str, Any]
    hash: str


# --- hashing, normalising, diffing -------------------------------------------------------------


def digest(value: object) -> str:
    """A stable digest of JSON data (canonical encoding, sha256, 16 hex characters)."""
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def normalized(value: Any) -> Any:
    """``value`` without nulls, empty strings, empty objects and empty lists, at any depth."""
    if isinstance(value, Mapping):
        cleaned = {key: normalized(item) for key, item in value.items()}
        return {key: item for key, item in cleaned.items() if not _empty(item)}
    if isinstance(value, list):
        return [normalized(item) for item in value]
    return value


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == {} or value == []


def same(current: Any, desired: Any) -> bool:
    """Equal once both are normalised."""
    return bool(normalized(current) == normalized(desired))


def merge_diff(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns ``current`` into ``desired``: changed and new
    keys with their value, nested objects recursively, removed keys as null. Lists are replaced
    whole (merge patch cannot do better)."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        old = current.get(key)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            nested = merge_diff(old, value)
            if nested:
                patch[key] = nested
        elif old != value or key not in current:
            patch[key] = value
    for key in current:
        if key not in desired:
            patch[key] = None
    return patch


def differing_fields(current: Any, desired: Any, path: str) -> list[str]:
    """The paths (below ``path``) whose normalised values differ, one level down from ``path``
    when both are objects: ``spec.ephemeralRunnerSpec.githubConfigUrl``. Names only, never
    values (an Event quotes them)."""
    left, right = normalized(current), normalized(desired)
    if left == right:
        return []
    if not (isinstance(left, Mapping) and isinstance(right, Mapping)):
        return [path]
    return [f"{path}.{key}" for key in sorted({*left, *right}) if left.get(key) != right.get(key)]


def changed_entries(current: Mapping[str, str], desired: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``desired`` that ``current`` lacks or holds with another value (labels and
    annotations are merged, never pruned: others may have added theirs)."""
    return {key: value for key, value in desired.items() if current.get(key) != value}


# --- labels ------------------------------------------------------------------------------------


def propagated_labels(
    scale_set: ScaleSetView,
    computed: Mapping[str, str],
    extra: Mapping[str, str],
    exclude_prefixes: Iterable[str],
) -> dict[str, str]:
    """ARC's label merge: the scale set's labels, then ``computed`` over them, then ``extra``
    (user metadata) where it does not clash with ``computed``; keys with an excluded prefix are
    dropped everywhere."""
    prefixes = tuple(exclude_prefixes)

    def kept(key: str) -> bool:
        return not any(key.startswith(prefix) for prefix in prefixes)

    labels = {key: value for key, value in scale_set.labels.items() if kept(key)}
    labels.update({key: value for key, value in computed.items() if kept(key)})
    for key, value in extra.items():
        if kept(key) and key not in computed:
            labels[key] = value
    return labels


def url_labels(scale_set: ScaleSetView) -> dict[str, str]:
    """The ``actions.github.com/{enterprise,organization,repository}`` labels (empty for an
    invalid URL: validation reports it)."""
    try:
        return github_url_labels(scale_set.model.spec.github_config_url)
    except ValueError:
        return {}


def _common_labels(scale_set: ScaleSetView, component: str) -> dict[str, str]:
    labels = {
        keys.PART_OF_LABEL: keys.PART_OF_VALUE,
        keys.COMPONENT_LABEL: component,
        keys.SCALE_SET_NAME_LABEL: scale_set.name,
        keys.SCALE_SET_NAMESPACE_LABEL: scale_set.namespace,
    }
    version = scale_set.labels.get(keys.VERSION_LABEL)
    if version is not None:
        labels[keys.VERSION_LABEL] = version
    labels.update(url_labels(scale_set))
    return labels


def _meta(spec: Mapping[str, Any], field: str, part: str) -> dict[str, str]:
    meta = spec.get(field)
    values = meta.get(part) if isinstance(meta, Mapping) else None
    return string_map(values)


def _object_metadata(
    scale_set: ScaleSetView, component: str, field: str, settings: Settings
) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations of the ``component`` object the scale set owns: ARC's label
    merge of the common labels with the user's ``spec.<field>.labels``, and the user's
    ``spec.<field>.annotations``."""
    spec = scale_set.spec
    labels = propagated_labels(
        scale_set,
        _common_labels(scale_set, component),
        _meta(spec, field, "labels"),
        settings.exclude_label_prefixes,
    )
    return labels, _meta(spec, field, "annotations")


# --- the EphemeralRunnerSet --------------------------------------------------------------------


def runner_set(
    scale_set: ScaleSetView,
    scale_set_id: int,
    scale_set_name: str,
    runner_group_name: str,
    settings: Settings,
    name: str | None = None,
) -> DesiredRunnerSet:
    """The runner set of ``scale_set`` (called ``name``, default the scale set's name)."""
    spec = scale_set.spec
    runner_spec: dict[str, Any] = {
        "githubConfigUrl": scale_set.model.spec.github_config_url,
        "githubConfigSecret": scale_set.model.spec.github_config_secret,
        "runnerScaleSetId": scale_set_id,
    }
    for field in RUNNER_SPEC_FIELDS:
        value = spec.get(field)
        if value is not None:
            runner_spec[field] = value
    template = spec.get("template")
    template = template if isinstance(template, Mapping) else {}
    if isinstance(template.get("metadata"), Mapping) and template["metadata"]:
        runner_spec["metadata"] = template["metadata"]
    pod_spec = template.get("spec")
    runner_spec["spec"] = pod_spec if isinstance(pod_spec, Mapping) else {}
    runner_metadata = spec.get("ephemeralRunnerMetadata")
    labels, annotations = _object_metadata(
        scale_set, keys.COMPONENT_RUNNER_SET, "ephemeralRunnerSetMetadata", settings
    )
    annotations[keys.RUNNER_GROUP_NAME_ANNOTATION] = runner_group_name
    annotations[keys.RUNNER_SCALE_SET_NAME_ANNOTATION] = scale_set_name
    hashed = {
        "labels": labels,
        "annotations": annotations,
        "ephemeralRunnerSpec": runner_spec,
        "ephemeralRunnerMetadata": runner_metadata,
    }
    return DesiredRunnerSet(
        name or scale_set.name,
        labels,
        annotations,
        runner_spec,
        runner_metadata if isinstance(runner_metadata, dict) else None,
        digest(hashed),
    )


def runner_set_body(scale_set: ScaleSetView, desired: DesiredRunnerSet) -> dict[str, Any]:
    """The EphemeralRunnerSet to create: no replicas yet (the listener sets them), patch id 0."""
    spec: dict[str, Any] = {"patchID": 0, "ephemeralRunnerSpec": desired.runner_spec}
    if desired.runner_metadata is not None:
        spec["ephemeralRunnerMetadata"] = desired.runner_metadata
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": desired.name,
            "namespace": scale_set.namespace,
            "labels": desired.labels,
            "annotations": {**desired.annotations, keys.SPEC_HASH_ANNOTATION: desired.hash},
            "ownerReferences": [
                controller_reference("AutoscalingRunnerSet", scale_set.name, scale_set.uid)
            ],
        },
        "spec": spec,
    }


@dataclass(frozen=True)
class RunnerSetPatch:
    """The merge patch bringing a runner set to ``desired``; ``spec_changed``: the runner spec
    or runner metadata really differs (runners will be replaced), else only metadata moves;
    ``changed_fields``: the spec fields that differ (their paths)."""

    body: dict[str, Any]
    spec_changed: bool
    changed_fields: tuple[str, ...] = ()


def runner_spec_target(current: RunnerSetView, desired: DesiredRunnerSet) -> dict[str, Any]:
    """The runner spec the runner set must have: the desired one, plus the fields the
    EphemeralRunnerSet controller owns as they are."""
    target = dict(desired.runner_spec)
    for field in PRESERVED_RUNNER_SPEC_FIELDS:
        if field in current.runner_spec and field not in target:
            target[field] = current.runner_spec[field]
    return target


def runner_set_patch(current: RunnerSetView, desired: DesiredRunnerSet) -> RunnerSetPatch:
    """Everything but ``replicas`` and ``patchID`` (the listener's) is brought to ``desired``."""
    target = runner_spec_target(current, desired)
    changed = [
        *differing_fields(current.runner_spec, target, "spec.ephemeralRunnerSpec"),
        *differing_fields(
            current.runner_metadata, desired.runner_metadata, "spec.ephemeralRunnerMetadata"
        ),
    ]
    spec: dict[str, Any] = {}
    if not same(current.runner_spec, target):
        spec["ephemeralRunnerSpec"] = merge_diff(current.runner_spec, target)
    if not same(current.runner_metadata, desired.runner_metadata):
        if desired.runner_metadata is None:
            spec["ephemeralRunnerMetadata"] = None
        else:
            spec["ephemeralRunnerMetadata"] = merge_diff(
                current.runner_metadata or {}, desired.runner_metadata
            )
    metadata: dict[str, Any] = {
        "annotations": {
            **changed_entries(current.annotations, desired.annotations),
            keys.SPEC_HASH_ANNOTATION: desired.hash,
        }
    }
    labels = changed_entries(current.labels, desired.labels)
    if labels:
        metadata["labels"] = labels
    body: dict[str, Any] = {"metadata": metadata}
    if spec:
        body["spec"] = spec
    return RunnerSetPatch(body, bool(spec), tuple(changed))


# --- the AutoscalingListener -------------------------------------------------------------------


def effective_min_max(scale_set: ScaleSetView) -> tuple[int, int]:
    spec = scale_set.model.spec
    minimum = spec.min_runners if spec.min_runners is not None else 0
    maximum = spec.max_runners if spec.max_runners is not None else MAX_INT32
    return minimum, maximum


def listener(
    scale_set: ScaleSetView, scale_set_id: int, runner_set_name: str, settings: Settings
) -> DesiredListener:
    """The listener of ``scale_set``, scaling runner set ``runner_set_name``."""
    spec = scale_set.spec
    minimum, maximum = effective_min_max(scale_set)
    listener_spec: dict[str, Any] = {
        "githubConfigUrl": scale_set.model.spec.github_config_url,
        "githubConfigSecret": scale_set.model.spec.github_config_secret,
        "runnerScaleSetId": scale_set_id,
        "autoscalingRunnerSetNamespace": scale_set.namespace,
        "autoscalingRunnerSetName": scale_set.name,
        "ephemeralRunnerSetName": runner_set_name,
        "minRunners": minimum,
        "maxRunners": maximum,
        "image": settings.listener_image,
    }
    if settings.image_pull_secrets:
        listener_spec["imagePullSecrets"] = [{"name": name} for name in settings.image_pull_secrets]
    for source, target in LISTENER_SPEC_FIELDS:
        value = spec.get(source)
        if value is not None:
            listener_spec[target] = value
    labels, annotations = _object_metadata(
        scale_set, keys.COMPONENT_LISTENER, "autoscalingListener", settings
    )
    name = listener_name(
        scale_set.name,
        scale_set.namespace,
        scale_set.model.spec.runner_group,
        scale_set.model.spec.github_config_url,
    )
    hashed = {"labels": labels, "annotations": annotations, "spec": listener_spec}
    return DesiredListener(
        settings.controller_namespace, name, labels, annotations, listener_spec, digest(hashed)
    )


def listener_body(desired: DesiredListener) -> dict[str, Any]:
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "AutoscalingListener",
        "metadata": {
            "name": desired.name,
            "namespace": desired.namespace,
            "labels": desired.labels,
            "annotations": {**desired.annotations, keys.SPEC_HASH_ANNOTATION: desired.hash},
        },
        "spec": desired.spec,
    }


@dataclass(frozen=True)
class ListenerPatch:
    body: dict[str, Any]
    spec_changed: bool


def listener_patch(current: ListenerView, desired: DesiredListener) -> ListenerPatch:
    spec = current.obj.spec
    metadata: dict[str, Any] = {
        "annotations": {
            **changed_entries(current.obj.annotations, desired.annotations),
            keys.SPEC_HASH_ANNOTATION: desired.hash,
        }
    }
    labels = changed_entries(current.obj.labels, desired.labels)
    if labels:
        metadata["labels"] = labels
    body: dict[str, Any] = {"metadata": metadata}
    changed = not same(spec, desired.spec)
    if changed:
        body["spec"] = merge_diff(spec, desired.spec)
    return ListenerPatch(body, changed)


# --- the scale set on GitHub -------------------------------------------------------------------


def scale_set_labels(scale_set: ScaleSetView) -> tuple[str, ...]:
    """The scale set's labels on GitHub as ARC 0.14 sends them: its name, then
    ``spec.runnerScaleSetLabels`` (the chart's ``scaleSetLabels``), duplicates dropped (GitHub
    matches labels case-insensitively, so ``GPU`` and ``gpu`` are one label; the first spelling
    is kept)."""
    names = [scale_set.scale_set_name, *scale_set.model.spec.runner_scale_set_labels]
    kept: dict[str, str] = {}
    for label in names:
        if label and label.casefold() not in kept:
            kept[label.casefold()] = label
    return tuple(kept.values())


def same_labels(actual: Iterable[str], desired: Iterable[str]) -> bool:
    """GitHub matches labels case-insensitively; order does not matter."""
    return {label.casefold() for label in actual} == {label.casefold() for label in desired}
