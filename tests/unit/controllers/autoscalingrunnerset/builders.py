"""Objects for the AutoscalingRunnerSet ``plan`` tests: a scale set, runner sets and listeners
as the API server returns them (raw JSON in a ``KubeObject``), and small readers of a plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from scaleset.api import keys
from scaleset.controllers.autoscalingrunnerset import desired
from scaleset.controllers.autoscalingrunnerset.actions import (
    Action,
    Note,
    Report,
    Wait,
    WriteStatus,
)
from scaleset.controllers.autoscalingrunnerset.observed import (
    ChartObject,
    Feedback,
    ListenerView,
    Observed,
    ScaleSetInfo,
    Verified,
    runner_set_view,
    scale_set_view,
)
from scaleset.controllers.autoscalingrunnerset.plan import plan
from scaleset.controllers.autoscalingrunnerset.settings import Settings
from scaleset.controllers.decisions import notes_of
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    Kind,
)

NOW = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)
NAMESPACE = "arc-runners"
NAME = "arc-runner-set"
UID = "ars-uid-1"
CONTROLLER_NAMESPACE = "arc-systems"
URL = "https://github.com/acme"
SCALE_SET_ID = 7
IMAGE = "ghcr.io/scaleset/scaleset:1.0"
SETTINGS = Settings(controller_namespace=CONTROLLER_NAMESPACE, listener_image=IMAGE)
FINALIZER = keys.AUTOSCALING_RUNNER_SET_FINALIZER


def template(image: str = "runner:1") -> dict[str, Any]:
    return {
        "spec": {
            "containers": [{"name": "runner", "image": image, "command": ["/home/runner/run.sh"]}],
            "restartPolicy": "Never",
        }
    }


def scale_set(
    *,
    spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    finalizers: Sequence[str] = (FINALIZER,),
    deleting: bool = False,
    generation: int = 1,
    status: dict[str, Any] | None = None,
    registered: bool = True,
    name: str = NAME,
) -> KubeObject:
    base_annotations: dict[str, str] = {}
    if registered:
        base_annotations = {
            keys.RUNNER_SCALE_SET_ID_ANNOTATION: str(SCALE_SET_ID),
            keys.RUNNER_SCALE_SET_NAME_ANNOTATION: name,
            keys.RUNNER_GROUP_NAME_ANNOTATION: "Default",
        }
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": UID,
        "resourceVersion": "10",
        "generation": generation,
        "labels": {keys.ORGANIZATION_LABEL: "acme", **(labels or {})},
        "annotations": {**base_annotations, **(annotations or {})},
        "finalizers": list(finalizers),
    }
    if deleting:
        metadata["deletionTimestamp"] = "2027-01-15T07:59:00Z"
    raw: dict[str, Any] = {
        "apiVersion": keys.API_VERSION,
        "kind": "AutoscalingRunnerSet",
        "metadata": metadata,
        "spec": {
            "githubConfigUrl": URL,
            "githubConfigSecret": "github-config",
            "template": template(),
            **(spec or {}),
        },
    }
    if status is not None:
        raw["status"] = status
    return KubeObject(AUTOSCALING_RUNNER_SET, raw)


def info(**changes: Any) -> ScaleSetInfo:
    base = ScaleSetInfo(
        id=SCALE_SET_ID,
        name=NAME,
        runner_group_id=1,
        runner_group_name="Default",
        labels=(NAME,),
        disable_update=True,
    )
    return replace(base, **changes)


def verified(generation: int = 1, at: datetime = NOW, **changes: Any) -> Verified:
    return Verified(info(**changes), generation, at)


def owner(uid: str = UID, name: str = NAME) -> dict[str, Any]:
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "AutoscalingRunnerSet",
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def runner_set(
    name: str = NAME,
    *,
    in_sync_with: KubeObject | None = None,
    runner_spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    deleting: bool = False,
    created: str = "2027-01-15T07:00:00Z",
    uid: str | None = None,
) -> KubeObject:
    """A runner set; ``in_sync_with``: exactly what the controller would have written for that
    scale set (spec, labels, annotations, digest)."""
    meta_labels = dict(labels or {})
    meta_annotations = dict(annotations or {})
    spec: dict[str, Any] = {"patchID": 0, "replicas": 2}
    if in_sync_with is not None:
        view = scale_set_view(in_sync_with)
        wanted = desired.runner_set(
            view,
            view.scale_set_id or SCALE_SET_ID,
            view.annotations.get(keys.RUNNER_SCALE_SET_NAME_ANNOTATION, NAME),
            view.annotations.get(keys.RUNNER_GROUP_NAME_ANNOTATION, "Default"),
            SETTINGS,
            name=name,
        )
        meta_labels = {**wanted.labels, **meta_labels}
        meta_annotations = {
            **wanted.annotations,
            keys.SPEC_HASH_ANNOTATION: wanted.hash,
            **meta_annotations,
        }
        spec["ephemeralRunnerSpec"] = wanted.runner_spec
    if runner_spec is not None:
        spec["ephemeralRunnerSpec"] = runner_spec
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": uid or f"ers-{name}",
        "resourceVersion": "20",
        "creationTimestamp": created,
        "labels": meta_labels,
        "annotations": meta_annotations,
        "ownerReferences": [owner()],
        "finalizers": [keys.EPHEMERAL_RUNNER_SET_FINALIZER],
    }
    if deleting:
        metadata["deletionTimestamp"] = "2027-01-15T07:59:30Z"
    return KubeObject(
        EPHEMERAL_RUNNER_SET,
        {
            "apiVersion": keys.API_VERSION,
            "kind": "EphemeralRunnerSet",
            "metadata": metadata,
            "spec": spec,
            "status": {"currentReplicas": 0, "phase": "Running", **(status or {})},
        },
    )


def listener(
    scale_set_obj: KubeObject,
    *,
    runner_set_name: str = NAME,
    settings: Settings = SETTINGS,
    name: str | None = None,
    spec: dict[str, Any] | None = None,
    deleting: bool = False,
) -> KubeObject:
    """The listener as the controller would have written it (``spec`` overrides fields)."""
    view = scale_set_view(scale_set_obj)
    wanted = desired.listener(view, view.scale_set_id or SCALE_SET_ID, runner_set_name, settings)
    metadata: dict[str, Any] = {
        "name": name or wanted.name,
        "namespace": CONTROLLER_NAMESPACE,
        "uid": f"al-{name or wanted.name}",
        "resourceVersion": "30",
        "labels": wanted.labels,
        "annotations": {**wanted.annotations, keys.SPEC_HASH_ANNOTATION: wanted.hash},
    }
    if deleting:
        metadata["deletionTimestamp"] = "2027-01-15T07:59:40Z"
    body = {**wanted.spec, **(spec or {})}
    if spec is not None:
        metadata["annotations"][keys.SPEC_HASH_ANNOTATION] = "older"
    return KubeObject(
        AUTOSCALING_LISTENER,
        {
            "apiVersion": keys.API_VERSION,
            "kind": "AutoscalingListener",
            "metadata": metadata,
            "spec": body,
        },
    )


def chart_object(annotation: str, kind: Kind, name: str, *, protected: bool = True) -> ChartObject:
    finalizers = [keys.CLEANUP_PROTECTION_FINALIZER] if protected else []
    raw = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"chart-{name}",
            "resourceVersion": "5",
            "finalizers": finalizers,
        },
    }
    return ChartObject(annotation, kind, name, KubeObject(kind, raw))


def observed(
    ars: KubeObject | None = None,
    *,
    runner_sets: Sequence[KubeObject] = (),
    listeners: Sequence[KubeObject] = (),
    name_holder: KubeObject | None = None,
    chart_objects: Sequence[ChartObject] | None = (),
    arc_controllers: Sequence[str] = (),
    verified_as: Verified | None = None,
    failures: int = 0,
    feedback: Feedback | None = None,
    settings: Settings = SETTINGS,
) -> Observed:
    return Observed(
        scale_set=scale_set_view(ars if ars is not None else scale_set()),
        settings=settings,
        runner_sets=tuple(runner_set_view(obj) for obj in runner_sets),
        name_holder=runner_set_view(name_holder) if name_holder is not None else None,
        listeners=tuple(ListenerView(obj) for obj in listeners),
        chart_objects=None if chart_objects is None else tuple(chart_objects),
        arc_controllers=tuple(arc_controllers),
        verified=verified_as,
        failures=failures,
        feedback=feedback or Feedback(),
    )


def steady(ars: KubeObject | None = None, **kwargs: Any) -> Observed:
    """A registered, verified scale set whose runner set and listener are in sync."""
    ars = ars if ars is not None else scale_set()
    kwargs.setdefault("runner_sets", [runner_set(in_sync_with=ars)])
    kwargs.setdefault("listeners", [listener(ars)])
    kwargs.setdefault("verified_as", verified())
    return observed(ars, **kwargs)


def effects(actions: Sequence[Action]) -> list[Action]:
    return [action for action in actions if not isinstance(action, Report | Wait)]


def first(actions: Sequence[Action]) -> Action:
    found = effects(actions)
    assert found, f"no effect in {actions}"
    return found[0]


def kinds(actions: Sequence[Action]) -> list[str]:
    return [type(action).__name__ for action in actions]


def notes(actions: Sequence[Action]) -> list[Note]:
    return [note for action in actions for note in notes_of(action)]


def reasons(actions: Sequence[Action]) -> list[str]:
    return [note.reason for note in notes(actions) if note.message]


def status_write(actions: Sequence[Action]) -> WriteStatus:
    found = [action for action in actions if isinstance(action, WriteStatus)]
    assert found, f"no status write in {actions}"
    return found[0]


def condition(actions: Sequence[Action], kind: str) -> dict[str, Any]:
    conditions = status_write(actions).changes["conditions"]
    return next(item for item in conditions if item["type"] == kind)


def wait_of(actions: Sequence[Action]) -> Wait:
    found = [action for action in actions if isinstance(action, Wait)]
    assert found, f"no Wait in {actions}"
    return found[-1]


def plan_now(o: Observed, later: timedelta = timedelta()) -> list[Action]:
    return plan(o, NOW + later)
