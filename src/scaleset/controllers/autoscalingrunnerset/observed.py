"""What the AutoscalingRunnerSet reconciler knows when it decides — frozen, parsed once.

Each view is a ``MetadataView`` (the object, with its name, uid, labels, annotations and
whether it is being deleted read through) with what its decisions read besides:

- ``ScaleSetView``: the AutoscalingRunnerSet (fresh GET), its parsed spec and what ``validate``
  says about it (L8).
- ``RunnerSetView``: each EphemeralRunnerSet it controls (owner reference, whatever its name:
  ARC 0.14.2 used generated names), plus ``name_holder``: an EphemeralRunnerSet with our name
  that another owner controls.
- ``ListenerView``: each AutoscalingListener (controller namespace) whose back-reference
  (``spec.autoscalingRunnerSetNamespace/Name``) names this scale set.
- ``ChartObject``: the chart's objects named in the ``actions.github.com/cleanup-*``
  annotations, read only at the end of a deletion (``None``: not read yet).
- ``arc_controllers``: ARC's own controller pods still running (takeover guard).
- ``Verified``: what GitHub last said about the scale set, remembered across reconciles by the
  reconciler as a cache (a restart just asks GitHub again).
- ``Feedback``: what GitHub answered in this reconcile; it lives for one reconcile only.

The ``with_*`` functions fold the result of one action into a new ``Observed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from scaleset.api import (
    AutoscalingRunnerSet,
    EphemeralRunnerSetStatus,
    Policy,
    Problem,
    keys,
    parse_kube_time,
    validate_under,
)
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.autoscalingrunnerset.settings import Settings
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import ROLE, ROLE_BINDING, SECRET, SERVICE_ACCOUNT, Kind

MAX_INT32 = 2_147_483_647
"""``maxRunners`` of a scale set that sets none (ARC's ``math.MaxInt32``)."""


@dataclass(frozen=True)
class MetadataView:
    """An object as decisions read it: its metadata's common fields, read through, and the
    object itself for the rest (each view below adds what its decisions read)."""

    obj: KubeObject

    @property
    def name(self) -> str:
        return self.obj.name

    @property
    def uid(self) -> str:
        return self.obj.uid

    @property
    def deleting(self) -> bool:
        return self.obj.is_deleting

    @property
    def labels(self) -> Mapping[str, str]:
        return self.obj.labels

    @property
    def annotations(self) -> Mapping[str, str]:
        return self.obj.annotations


@dataclass(frozen=True)
class ScaleSetView(MetadataView):
    """The AutoscalingRunnerSet as decisions read it."""

    model: AutoscalingRunnerSet
    problems: tuple[Problem, ...] = ()

    @property
    def namespace(self) -> str:
        return self.obj.namespace

    @property
    def generation(self) -> int:
        return self.obj.generation

    @property
    def finalizers(self) -> tuple[str, ...]:
        return tuple(self.obj.finalizers)

    @property
    def spec(self) -> Mapping[str, Any]:
        """The raw spec (pod templates and unknown fields as written)."""
        return self.obj.spec

    @property
    def scale_set_id(self) -> int | None:
        """The ``runner-scale-set-id`` annotation when it is a positive number (ARC: absent,
        unparseable or ≤ 0 means "not registered")."""
        text = self.annotations.get(keys.RUNNER_SCALE_SET_ID_ANNOTATION, "").strip()
        if not (text.isascii() and text.isdigit()):  # "²".isdigit() is true, int() refuses it
            return None
        try:
            value = int(text)
        except ValueError:  # more digits than int() converts
            return None
        return value if value > 0 else None

    @property
    def scale_set_name(self) -> str:
        """The name on GitHub: ``spec.runnerScaleSetName``, else this object's name."""
        return self.model.spec.runner_scale_set_name or self.name

    @property
    def runner_group(self) -> str:
        """``spec.runnerGroup`` as written; empty means GitHub's default group."""
        return self.model.spec.runner_group


@dataclass(frozen=True)
class RunnerSetView(MetadataView):
    """One EphemeralRunnerSet."""

    status: EphemeralRunnerSetStatus

    @property
    def runner_spec(self) -> Mapping[str, Any]:
        value = self.obj.spec.get("ephemeralRunnerSpec")
        return value if isinstance(value, dict) else {}

    @property
    def runner_metadata(self) -> Mapping[str, Any] | None:
        value = self.obj.spec.get("ephemeralRunnerMetadata")
        return value if isinstance(value, dict) else None

    @property
    def created(self) -> datetime | None:
        try:
            return parse_kube_time(self.obj.metadata.get("creationTimestamp"))
        except ValueError:
            return None


@dataclass(frozen=True)
class ListenerView(MetadataView):
    """One AutoscalingListener."""

    @property
    def runner_set_name(self) -> str:
        return str(self.obj.spec.get("ephemeralRunnerSetName", ""))


CHART_OBJECT_KINDS: dict[str, Kind] = {
    keys.CLEANUP_KUBERNETES_MODE_ROLE_BINDING_NAME_ANNOTATION: ROLE_BINDING,
    keys.CLEANUP_KUBERNETES_MODE_ROLE_NAME_ANNOTATION: ROLE,
    keys.CLEANUP_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME_ANNOTATION: SERVICE_ACCOUNT,
    keys.CLEANUP_NO_PERMISSION_SERVICE_ACCOUNT_NAME_ANNOTATION: SERVICE_ACCOUNT,
    keys.CLEANUP_GITHUB_SECRET_NAME_ANNOTATION: SECRET,
    keys.CLEANUP_MANAGER_ROLE_BINDING_ANNOTATION: ROLE_BINDING,
    keys.CLEANUP_MANAGER_ROLE_NAME_ANNOTATION: ROLE,
}
"""The kind of object each of the chart's cleanup annotations names (all in the ARS
namespace), in the order ARC releases them (``keys.CLEANUP_ANNOTATIONS_IN_ORDER``)."""


@dataclass(frozen=True)
class ChartObject:
    """A chart object named by a cleanup annotation; ``obj`` is None when it does not exist
    (or may not be read)."""

    annotation: str
    kind: Kind
    name: str
    obj: KubeObject | None = None

    @property
    def protected(self) -> bool:
        """It still carries ``actions.github.com/cleanup-protection``."""
        return self.obj is not None and keys.CLEANUP_PROTECTION_FINALIZER in self.obj.finalizers


@dataclass(frozen=True)
class ScaleSetInfo:
    """A scale set as GitHub describes it."""

    id: int
    name: str
    runner_group_id: int
    runner_group_name: str
    labels: tuple[str, ...] = ()
    disable_update: bool = False


@dataclass(frozen=True)
class RunnerGroupInfo:
    id: int
    name: str


@dataclass(frozen=True)
class Verified:
    """GitHub's description of scale set ``info.id``, read at ``at`` for ``generation``."""

    info: ScaleSetInfo
    generation: int
    at: datetime


@dataclass(frozen=True)
class Feedback:
    """What GitHub (and a create that met an existing object) said in this reconcile."""

    runner_group: RunnerGroupInfo | None = None
    looked_up: bool = False
    """``FindScaleSet`` ran; ``registered`` holds what it found (None: nothing by that name)."""
    registered: ScaleSetInfo | None = None
    """Found by name (adopted) or created: the id to write into the annotation."""
    created: bool = False
    verified: ScaleSetInfo | None = None
    """GitHub's answer for the annotated id in this reconcile (by id, or after an update)."""
    missing_id: int | None = None
    """The annotated id GitHub does not know (any more): register again (ARC #4571)."""
    scale_set_deleted: bool = False
    problem: GitHubProblem | None = None
    runner_set_exists: bool = False
    """Creating the runner set met an existing object the cache does not show yet."""
    listener_exists: bool = False


@dataclass(frozen=True)
class Observed:
    """Everything one round of ``plan`` decides on."""

    scale_set: ScaleSetView
    settings: Settings
    runner_sets: tuple[RunnerSetView, ...] = ()
    name_holder: RunnerSetView | None = None
    listeners: tuple[ListenerView, ...] = ()
    chart_objects: tuple[ChartObject, ...] | None = None
    arc_controllers: tuple[str, ...] = ()
    verified: Verified | None = None
    failures: int = 0
    """Consecutive reconciles of this scale set that ended on a GitHub problem (back-off)."""
    feedback: Feedback = field(default_factory=Feedback)

    @property
    def current_runner_set(self) -> RunnerSetView | None:
        """The one runner set this scale set runs on: the one named like it, else (ARC 0.14.2
        generated names) the newest."""
        named = [rs for rs in self.runner_sets if rs.name == self.scale_set.name]
        if named:
            return named[0]
        if not self.runner_sets:
            return None
        return max(
            self.runner_sets,
            key=lambda rs: (rs.created.timestamp() if rs.created else 0.0, rs.name),
        )


# --- parsing -----------------------------------------------------------------------------------


def scale_set_view(obj: KubeObject, policy: Policy | None = None) -> ScaleSetView:
    """The scale set with its problems (``validate_under`` the controller's policy)."""
    model = AutoscalingRunnerSet.model_validate(obj.raw)
    return ScaleSetView(obj, model, tuple(validate_under(model, policy)))


def runner_set_view(obj: KubeObject) -> RunnerSetView:
    raw = obj.raw.get("status")
    status = EphemeralRunnerSetStatus.model_validate(raw if isinstance(raw, dict) else {})
    return RunnerSetView(obj, status)


def controls(obj: KubeObject, scale_set: KubeObject) -> bool:
    """``obj``'s controller owner reference is this AutoscalingRunnerSet (by uid)."""
    owner = obj.controller_owner
    return (
        owner is not None
        and owner.kind == "AutoscalingRunnerSet"
        and owner.api_version == keys.API_VERSION
        and owner.uid == scale_set.uid
    )


def points_at(listener: KubeObject, scale_set: KubeObject) -> bool:
    """The listener's back-reference names this AutoscalingRunnerSet."""
    spec = listener.spec
    return (
        spec.get("autoscalingRunnerSetNamespace") == scale_set.namespace
        and spec.get("autoscalingRunnerSetName") == scale_set.name
    )


# --- folding results in ------------------------------------------------------------------------


def with_feedback(observed: Observed, **changes: Any) -> Observed:
    return replace(observed, feedback=replace(observed.feedback, **changes))


def with_scale_set(observed: Observed, obj: KubeObject) -> Observed:
    return replace(observed, scale_set=scale_set_view(obj, observed.settings.policy))


def with_runner_set(observed: Observed, name: str, obj: KubeObject | None) -> Observed:
    """Replace (or, with ``obj`` None, drop) the runner set called ``name``."""
    kept = [rs for rs in observed.runner_sets if rs.name != name]
    if obj is not None:
        kept.append(runner_set_view(obj))
    return replace(observed, runner_sets=tuple(sorted(kept, key=lambda rs: rs.name)))


def with_listener(observed: Observed, name: str, obj: KubeObject | None) -> Observed:
    kept = [listener for listener in observed.listeners if listener.name != name]
    if obj is not None:
        kept.append(ListenerView(obj))
    return replace(observed, listeners=tuple(sorted(kept, key=lambda item: item.name)))


def with_chart_objects(observed: Observed, objects: tuple[ChartObject, ...]) -> Observed:
    return replace(observed, chart_objects=objects)


def with_chart_object(observed: Observed, annotation: str, obj: KubeObject | None) -> Observed:
    objects = tuple(
        replace(item, obj=obj) if item.annotation == annotation else item
        for item in observed.chart_objects or ()
    )
    return replace(observed, chart_objects=objects)
