"""``plan(observed, now) -> [Action]``: every decision of the AutoscalingRunnerSet controller, pure.

Read top to bottom; the first step that has something to do returns. The reconciler applies the
first effect of a plan, folds its result into ``Observed`` and plans again, so a plan only ever
needs to say what comes *next*; a plan without an effect is the last of a reconcile.

1. **ARC still runs** — while ARC's own controller pod runs, scaleset touches nothing of the
   scale set but one condition, ``ControllerConflict=True``, with an Event (takeover guard).
2. **Deletion (L10)** — the EphemeralRunnerSet is deleted first and drains (idle runners go at
   once, busy ones finish) while the listener keeps running, so job events are still recorded and
   a hung runner is still ended (L4); then the listener goes, then the scale set on GitHub (no id:
   no GitHub call), then the chart's ``actions.github.com/cleanup-protection`` finalizers, then
   ours. A GitHub problem on the way: condition, Event, back-off.
3. **Finalizer** — ``autoscalingrunnerset.actions.github.com/finalizer`` first, alone.
4. **Invalid spec (L8)** — ``Valid=False`` and an Event naming the fields; no GitHub call, the
   runner set and listener are left as they are. A valid spec the controller's policy refuses
   (``scaleset.api.validation.refusals``: an ``http://`` URL, a listener template field beyond
   the allow-list) is reported the same way, with the refusal's reason.
5. **GitHub problem (L8)** — missing or malformed Secret, unknown runner group, 401/403/404:
   ``ScaleSetRegistered=False`` naming it, an Event on the change, a doubling back-off.
6. **Register** — without a usable ``runner-scale-set-id`` (or when GitHub no longer knows it,
   ARC #4571): resolve the runner group, adopt a scale set of that name in the group, else create
   one (labels = its name + ``runnerScaleSetLabels``, updates disabled), then annotate the id,
   name, group and the URL labels. ARC's version-label gate does not exist here: a scale set is
   never deleted because of ``app.kubernetes.io/version``.
7. **Verify** — on the first reconcile after a start, after a spec change and every
   ``verify_interval``, GitHub is asked for the scale set by id; gone → step 6.
8. **Update on GitHub** — name, runner group, labels or ``disableUpdate`` differ from the spec:
   one update; then the annotations follow what GitHub says.
9. **Runner set** — exactly one, updated in place: created (named like the scale set) when
   there is none; an ARC-made one is adopted by owner reference whatever its name; extras are
   deleted (they drain). A spec change patches the runner set and nothing else: it never waits
   for runners and never touches the listener for it (ARC #4432). While the runner set is being
   deleted, nothing is created in its place until it is gone. The runner set's spec is compared
   with the desired one even when its digest annotation matches: the listener may patch its
   runner set (for ``replicas`` and ``patchID``), so a runner spec or runner metadata changed by
   anyone else is restored, with a Warning (ARC compares only its hash and keeps the change).
   Every runner set patch is guarded by the resourceVersion that was read.
10. **Listener** — one AutoscalingListener, created once the runner set exists and updated in
    place, always naming the current runner set (ARC #4561); image pull secrets are part of both
    the created and the compared spec (no churn, §11.2). Listeners under another name (runner
    group or URL changed, older naming) are deleted.
11. **Status** — ``RunnersCanReadSecrets=True`` (a Warning) while the runner template runs the
    kubernetes container hooks with a ServiceAccount token: their Role can read the
    namespace's Secrets, the GitHub credentials included. Mirrored from the runner set on every
    change: ARC's counts and L0's five,
    ``phase`` (``Outdated`` while the runner set says so — nothing is deleted or re-created for
    it, ARC #4595), conditions; written once, only when it changed, and not at all when a create
    just met an object the cache does not show yet (the view is stale). The warm window in
    force (``warm_status``: ``status.warmWindow``, ``minRunnersInForce``, a
    ``WarmWindowChanged`` Event) is written with it, and the next reconcile comes just past
    the window's next edge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from scaleset.api import (
    Condition,
    RunnerSetPhase,
    ScaleSetPhase,
    condition_reason,
    keys,
    to_json,
)
from scaleset.controllers.autoscalingrunnerset import desired
from scaleset.controllers.autoscalingrunnerset.actions import (
    FINALIZER_REMOVED,
    Action,
    AnnotateScaleSet,
    CreateListener,
    CreateRunnerSet,
    CreateScaleSet,
    DeleteListener,
    DeleteRunnerSet,
    DeleteScaleSet,
    FindScaleSet,
    Note,
    ReadChartObjects,
    ReleaseChartObject,
    ResolveRunnerGroup,
    UpdateListener,
    UpdateRunnerSet,
    UpdateScaleSet,
    VerifyScaleSet,
    Wait,
    WriteStatus,
)
from scaleset.controllers.autoscalingrunnerset.observed import (
    Observed,
    RunnerSetView,
    ScaleSetInfo,
)
from scaleset.controllers.autoscalingrunnerset.warm_status import WindowInForce, window_in_force
from scaleset.controllers.decisions import add_finalizers, remove_finalizers

FINALIZER = keys.AUTOSCALING_RUNNER_SET_FINALIZER
DEFAULT_RUNNER_GROUP_ID = 1
"""GitHub's default runner group (ARC: an empty ``runnerGroup`` means id 1)."""

VALID = "Valid"
REGISTERED = "ScaleSetRegistered"
CONFLICT = "ControllerConflict"
RUNNER_SET_CONFLICT = "RunnerSetConflict"
SECRETS_READABLE = "RunnersCanReadSecrets"
FINALIZING = "Finalizing"
VALUES_IGNORED = "ValuesIgnored"

BAD_WHEN = {
    VALID: "False",
    REGISTERED: "False",
    CONFLICT: "True",
    RUNNER_SET_CONFLICT: "True",
    SECRETS_READABLE: "True",
    VALUES_IGNORED: "True",
}
"""The status of each condition type that means trouble (its Event is a Warning)."""
OPTIONAL = frozenset({CONFLICT, RUNNER_SET_CONFLICT, SECRETS_READABLE, VALUES_IGNORED})
"""Condition types written only once they have been true (absent means "fine")."""
MAX_LISTED_PROBLEMS = 5


class Cond(NamedTuple):
    status: str
    reason: str
    message: str


NO_CONFLICT = Cond("False", "NoOtherController", "ARC's controller is not running")


def plan(observed: Observed, now: datetime) -> list[Action]:
    """What to do next for the scale set ``o`` describes."""
    scale_set = observed.scale_set
    if observed.arc_controllers:
        return _arc_controller_runs(observed, now)
    if scale_set.deleting:
        return _finalize(observed, now)
    added = add_finalizers(scale_set.finalizers, (FINALIZER,))
    if added is not None:
        return [added]
    if scale_set.problems:
        return _invalid(observed, now)
    if observed.feedback.problem is not None:
        problem = observed.feedback.problem
        trouble = {
            VALID: _valid(),
            CONFLICT: NO_CONFLICT,
            REGISTERED: Cond("False", problem.reason, f"{problem.field}: {problem.message}"),
        }
        return [*_status(observed, now, trouble), _retry(observed)]
    steps = _register(observed)
    if steps:
        return steps
    verified = _verify(observed, now)
    if isinstance(verified, list):
        return verified
    info = verified
    steps = _update_on_github(observed, info) or _annotate(observed, info)
    if steps:
        return steps
    steps = _runner_set(observed, info)
    if steps:
        return steps
    steps = _listener(observed, info)
    if steps:
        return steps
    if observed.feedback.runner_set_exists or observed.feedback.listener_exists:
        # a create met an object the cache does not show yet: this view is stale, and its
        # status (phase Pending, counts) would be wrong; the object's watch event comes next
        return [Wait()]
    conditions: dict[str, Cond | None] = {
        VALID: _valid(),
        CONFLICT: NO_CONFLICT,
        REGISTERED: _registered(info),
        RUNNER_SET_CONFLICT: Cond("False", "RunnerSetOwned", "the runner set is this scale set's"),
        VALUES_IGNORED: _ignored_values(
            observed.scale_set.annotations.get(keys.IGNORED_VALUES_ANNOTATION)
        ),
    }
    conditions[SECRETS_READABLE] = _secrets_readable(observed)
    holder = observed.name_holder
    if observed.current_runner_set is None and holder is not None:
        conditions[RUNNER_SET_CONFLICT] = Cond(
            "True",
            "RunnerSetNameTaken",
            f"EphemeralRunnerSet {holder.name} exists but is not controlled by this scale set; "
            "delete it so one can be created",
        )
    minimum, maximum = desired.effective_min_max(observed.scale_set)
    warm = window_in_force(observed.scale_set.model, minimum, maximum, now)
    wait = _until_next_verification(observed, now)
    if warm.wake_in is not None:
        wait = min(wait, warm.wake_in)
    return [*_status(observed, now, conditions, warm=warm), Wait(wait)]


def _ignored_values(listed: str | None) -> Cond:
    """``ValuesIgnored``: the values the chart said it ignored (``keys.IGNORED_VALUES_ANNOTATION``,
    a JSON list of ``{key, why}``), so a GitOps user who never sees Helm's notes learns of them."""
    if not listed:
        return Cond("False", "NoChartValuesIgnored", "the chart took every value it was given")
    try:
        entries = json.loads(listed)
        named = [f"{entry['key']} ({entry['why']})" for entry in entries]
    except (ValueError, TypeError, KeyError):
        named = [f"annotation {keys.IGNORED_VALUES_ANNOTATION} is not the chart's list"]
    shown = "; ".join(str(item) for item in named[:MAX_LISTED_PROBLEMS])
    more = len(named) - MAX_LISTED_PROBLEMS
    return Cond(
        "True",
        "ChartValuesIgnored",
        f"the chart ignored these values: {shown}" + (f"; and {more} more" if more > 0 else ""),
    )


# --- 1. another controller ---------------------------------------------------------------------


def _arc_controller_runs(observed: Observed, now: datetime) -> list[Action]:
    pods = ", ".join(observed.arc_controllers)
    message = (
        f"ARC's controller is still running ({pods}); scaleset leaves this scale set alone until "
        "it is stopped (scale the gha-runner-scale-set-controller Deployment to 0; see "
        "docs/takeover-from-arc.md)"
    )
    conflict = {CONFLICT: Cond("True", "ArcControllerRunning", message)}
    # only the condition: ARC writes phase and counts itself, and two writers of them would
    # wake each other up forever
    return [*_status(observed, now, conflict, mirror=False), Wait()]


# --- 2. deletion -------------------------------------------------------------------------------


def _finalize(observed: Observed, now: datetime) -> list[Action]:
    scale_set = observed.scale_set
    released = remove_finalizers(scale_set.finalizers, (FINALIZER,), FINALIZER_REMOVED)
    if released is None:
        return [Wait()]
    live = [rs for rs in observed.runner_sets if not rs.deleting]
    if live:
        rs = live[0]
        return [
            DeleteRunnerSet(
                rs.name,
                rs.uid,
                Note(
                    "RunnerSetDeleted",
                    f"deleting EphemeralRunnerSet {rs.name}: idle runners go now, busy ones "
                    "finish their job first; the listener keeps running until it is gone",
                ),
            )
        ]
    if observed.runner_sets:
        waiting = Cond("True", "DrainingRunnerSet", _draining_message(observed.runner_sets))
        return [*_status(observed, now, {CONFLICT: NO_CONFLICT, FINALIZING: waiting}), Wait()]
    listeners = [listener for listener in observed.listeners if not listener.deleting]
    if listeners:
        listener = listeners[0]
        return [
            DeleteListener(
                listener.name,
                listener.uid,
                Note(
                    "ListenerDeleted",
                    f"the runners are gone; deleting AutoscalingListener {listener.name}",
                ),
            )
        ]
    if observed.listeners:
        names = ", ".join(listener.name for listener in observed.listeners)
        waiting = Cond("True", "RemovingListener", f"waiting for AutoscalingListener {names}")
        return [*_status(observed, now, {FINALIZING: waiting}), Wait()]
    scale_set_id = scale_set.scale_set_id
    if scale_set_id is not None:
        problem = observed.feedback.problem
        if problem is not None:
            message = (
                f"cannot delete scale set {scale_set_id} on GitHub: {problem.field}: "
                f"{problem.message}. Fix it, or remove the finalizer {FINALIZER} to leave "
                "the scale set on GitHub"
            )
            conditions = {
                FINALIZING: Cond("True", "DeletingScaleSet", message),
                REGISTERED: Cond("False", problem.reason, f"{problem.field}: {problem.message}"),
            }
            return [*_status(observed, now, conditions), _retry(observed)]
        if not observed.feedback.scale_set_deleted:
            return [
                DeleteScaleSet(
                    scale_set_id,
                    Note("ScaleSetDeleted", f"deleted scale set {scale_set_id} on GitHub"),
                )
            ]
        return [
            AnnotateScaleSet(
                {keys.RUNNER_SCALE_SET_ID_ANNOTATION: None}, note=Note("ScaleSetIdRemoved")
            )
        ]
    if observed.chart_objects is None:
        return [ReadChartObjects()]
    for chart_object in observed.chart_objects:
        if chart_object.protected:
            return [
                ReleaseChartObject(
                    chart_object.annotation,
                    chart_object.kind,
                    chart_object.name,
                    Note(
                        "ChartObjectReleased",
                        f"removed {keys.CLEANUP_PROTECTION_FINALIZER} from "
                        f"{chart_object.kind.kind} {chart_object.name}",
                    ),
                )
            ]
    return [released]


def _draining_message(runner_sets: tuple[RunnerSetView, ...]) -> str:
    names = ", ".join(rs.name for rs in runner_sets)
    busy = sum(rs.status.busy_ephemeral_runners for rs in runner_sets)
    other = sum(
        rs.status.starting_ephemeral_runners
        + rs.status.idle_ephemeral_runners
        + rs.status.terminal_ephemeral_runners
        + rs.status.deleting_ephemeral_runners
        for rs in runner_sets
    )
    return (
        f"waiting for EphemeralRunnerSet {names} to finish its runners ({busy} busy, {other} "
        "other); the listener keeps running meanwhile"
    )


# --- 4. invalid spec ---------------------------------------------------------------------------


def _invalid(observed: Observed, now: datetime) -> list[Action]:
    problems = observed.scale_set.problems
    shown = "; ".join(str(problem) for problem in problems[:MAX_LISTED_PROBLEMS])
    if len(problems) > MAX_LISTED_PROBLEMS:
        shown += f" (and {len(problems) - MAX_LISTED_PROBLEMS} more)"
    conditions = {VALID: Cond("False", condition_reason(problems), shown), CONFLICT: NO_CONFLICT}
    return [*_status(observed, now, conditions), Wait()]


def _valid() -> Cond:
    return Cond("True", "Valid", "the spec is valid")


def _retry(observed: Observed) -> Wait:
    return Wait(observed.settings.retry_after(observed.failures + 1))


# --- 6. register -------------------------------------------------------------------------------


def _register(observed: Observed) -> list[Action]:
    scale_set = observed.scale_set
    feedback = observed.feedback
    scale_set_id = scale_set.scale_set_id
    if scale_set_id is not None and feedback.missing_id != scale_set_id:
        return []
    registered = feedback.registered
    if registered is not None:
        if feedback.missing_id is not None:
            how = "registered again" if feedback.created else "found again by name"
            note = Note(
                "ScaleSetRecreated",
                f"scale set {feedback.missing_id} is gone on GitHub; {how} as "
                f"{registered.id} ({registered.name!r}); the runner set and listener follow",
                warning=True,
            )
        elif feedback.created:
            note = Note(
                "ScaleSetRegistered",
                f"registered scale set {registered.name!r} on GitHub: id {registered.id}, "
                f"runner group {registered.runner_group_name!r}, labels "
                f"{', '.join(registered.labels)}",
            )
        else:
            note = Note(
                "ScaleSetAdopted",
                f"scale set {registered.name!r} already exists on GitHub (id {registered.id}); "
                "using it",
            )
        return [
            AnnotateScaleSet(
                _scale_set_annotations(registered),
                desired.changed_entries(scale_set.labels, desired.url_labels(scale_set)),
                note,
            )
        ]
    group_id = _runner_group_id(observed)
    if group_id is None:
        return [ResolveRunnerGroup(scale_set.runner_group)]
    if not feedback.looked_up:
        return [FindScaleSet(group_id, scale_set.scale_set_name)]
    return [CreateScaleSet(scale_set.scale_set_name, group_id, desired.scale_set_labels(scale_set))]


def _runner_group_id(observed: Observed) -> int | None:
    """The id of the wanted runner group, when known without asking GitHub (again)."""
    wanted = observed.scale_set.runner_group
    if not wanted:
        return DEFAULT_RUNNER_GROUP_ID
    group = observed.feedback.runner_group
    if group is not None and group.name.casefold() == wanted.casefold():
        return group.id
    return None


def _scale_set_annotations(info: ScaleSetInfo) -> dict[str, str]:
    return {
        keys.RUNNER_SCALE_SET_ID_ANNOTATION: str(info.id),
        keys.RUNNER_SCALE_SET_NAME_ANNOTATION: info.name,
        keys.RUNNER_GROUP_NAME_ANNOTATION: info.runner_group_name,
    }


# --- 7. verify ---------------------------------------------------------------------------------


def _verify(observed: Observed, now: datetime) -> ScaleSetInfo | list[Action]:
    scale_set_id = observed.scale_set.scale_set_id
    assert scale_set_id is not None
    verified = observed.verified
    if (
        verified is not None
        and verified.info.id == scale_set_id
        and verified.generation == observed.scale_set.generation
        and (now - verified.at).total_seconds() < observed.settings.verify_interval
    ):
        return verified.info
    return [VerifyScaleSet(scale_set_id)]


def _until_next_verification(observed: Observed, now: datetime) -> float:
    verified = observed.verified
    if verified is None:
        return observed.settings.verify_interval
    elapsed = (now - verified.at).total_seconds()
    return max(1.0, observed.settings.verify_interval - elapsed)


# --- 8. update on GitHub -----------------------------------------------------------------------


def _update_on_github(observed: Observed, info: ScaleSetInfo) -> list[Action]:
    scale_set = observed.scale_set
    changes: list[str] = []
    name: str | None = None
    if info.name.casefold() != scale_set.scale_set_name.casefold():
        name = scale_set.scale_set_name
        changes.append(f"name {info.name!r} -> {name!r}")
    group_id: int | None = None
    if not _in_wanted_group(observed, info):
        group_id = _runner_group_id(observed)
        if group_id is None:
            return [ResolveRunnerGroup(scale_set.runner_group)]
        wanted = scale_set.runner_group or "the default group"
        changes.append(f"runner group {info.runner_group_name!r} -> {wanted!r}")
    labels: tuple[str, ...] | None = None
    wanted_labels = desired.scale_set_labels(scale_set)
    if not desired.same_labels(info.labels, wanted_labels):
        labels = wanted_labels
        changes.append(f"labels {', '.join(info.labels)} -> {', '.join(wanted_labels)}")
    if not info.disable_update:
        changes.append("runner updates disabled")
    if not changes:
        return []
    message = f"updated scale set {info.id} on GitHub: " + "; ".join(changes)
    return [UpdateScaleSet(info.id, name, group_id, labels, Note("ScaleSetUpdated", message))]


def _in_wanted_group(observed: Observed, info: ScaleSetInfo) -> bool:
    wanted = observed.scale_set.runner_group
    if not wanted:
        return info.runner_group_id == DEFAULT_RUNNER_GROUP_ID
    return info.runner_group_name.casefold() == wanted.casefold()


def _annotate(observed: Observed, info: ScaleSetInfo) -> list[Action]:
    scale_set = observed.scale_set
    annotations = desired.changed_entries(scale_set.annotations, _scale_set_annotations(info))
    labels = desired.changed_entries(scale_set.labels, desired.url_labels(scale_set))
    if not annotations and not labels:
        return []
    return [AnnotateScaleSet(annotations, labels)]


def _registered(info: ScaleSetInfo) -> Cond:
    return Cond(
        "True",
        "Registered",
        f"scale set {info.id} ({info.name!r}) in runner group {info.runner_group_name!r}",
    )


# --- 9. runner set -----------------------------------------------------------------------------


def _runner_set(observed: Observed, info: ScaleSetInfo) -> list[Action]:
    scale_set = observed.scale_set
    current = observed.current_runner_set
    extras = [rs for rs in observed.runner_sets if rs is not current and not rs.deleting]
    if extras:
        extra = extras[0]
        return [
            DeleteRunnerSet(
                extra.name,
                extra.uid,
                Note(
                    "ExtraRunnerSetDeleted",
                    f"EphemeralRunnerSet {extra.name} is not the one this scale set runs on "
                    f"({current.name if current else 'none'}); it drains and goes",
                ),
            )
        ]
    if current is None:
        if observed.name_holder is not None or observed.feedback.runner_set_exists:
            return []
        wanted = desired.runner_set(
            scale_set, info.id, info.name, info.runner_group_name, observed.settings
        )
        return [CreateRunnerSet(desired.runner_set_body(scale_set, wanted))]
    if current.deleting:
        return []
    wanted = desired.runner_set(
        scale_set, info.id, info.name, info.runner_group_name, observed.settings, name=current.name
    )
    patch = desired.runner_set_patch(current, wanted)
    version = current.obj.resource_version
    if current.annotations.get(keys.SPEC_HASH_ANNOTATION) == wanted.hash:
        if not patch.spec_changed:
            return []
        # the digest says this controller wrote the spec, the spec says otherwise: someone
        # else changed it (a listener may patch its runner set, for replicas and patchID)
        note = Note(
            "RunnerSetSpecRestored",
            f"EphemeralRunnerSet {current.name} was changed by another writer "
            f"({', '.join(patch.changed_fields)}); restored from the AutoscalingRunnerSet. "
            "Only replicas and patchID (the listener's) may change there",
            warning=True,
        )
        return [UpdateRunnerSet(current.name, patch.body, note, version)]
    if patch.spec_changed:
        note = Note(
            "RunnerSetUpdated",
            f"runner spec changed: EphemeralRunnerSet {current.name} updated in place; idle "
            "runners are replaced, busy ones finish on the old spec",
        )
    elif keys.SPEC_HASH_ANNOTATION not in current.annotations:
        note = Note(
            "RunnerSetAdopted",
            f"took over EphemeralRunnerSet {current.name} as it is (no runner replaced)",
        )
    else:
        note = Note("RunnerSetMetadataUpdated")
    return [UpdateRunnerSet(current.name, patch.body, note, version)]


# --- 10. listener ------------------------------------------------------------------------------


def _listener(observed: Observed, info: ScaleSetInfo) -> list[Action]:
    current = observed.current_runner_set
    if current is None or current.deleting:
        return []
    wanted = desired.listener(observed.scale_set, info.id, current.name, observed.settings)
    for stale in observed.listeners:
        if stale.name != wanted.name and not stale.deleting:
            return [
                DeleteListener(
                    stale.name,
                    stale.uid,
                    Note(
                        "StaleListenerDeleted",
                        f"AutoscalingListener {stale.name} is replaced by {wanted.name} "
                        "(runner group, URL or naming changed)",
                    ),
                )
            ]
    existing = next((item for item in observed.listeners if item.name == wanted.name), None)
    if existing is None:
        if observed.feedback.listener_exists:
            return []
        return [CreateListener(desired.listener_body(wanted))]
    if existing.deleting or existing.obj.annotations.get(keys.SPEC_HASH_ANNOTATION) == wanted.hash:
        return []
    patch = desired.listener_patch(existing, wanted)
    if patch.spec_changed:
        note = Note("ListenerUpdated", f"AutoscalingListener {existing.name} updated in place")
    else:
        note = Note("ListenerMetadataUpdated")
    return [UpdateListener(existing.name, patch.body, note)]


# --- runners that can read the namespace's Secrets ----------------------------------------------


def _secrets_readable(observed: Observed) -> Cond:
    """``RunnersCanReadSecrets``: the runner pods run the kubernetes container hooks with a
    ServiceAccount token. The hooks' Role (the chart's, as ARC's) may read every Secret of the
    namespace — the GitHub credentials Secret too — so any workflow on this scale set can."""
    template = observed.scale_set.spec.get("template")
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping) or spec.get("automountServiceAccountToken") is False:
        return Cond("False", "NoRunnerToken", "the runner pods carry no ServiceAccount token")
    runner = next(
        (
            c
            for c in spec.get("containers") or []
            if isinstance(c, Mapping) and c.get("name") == keys.RUNNER_CONTAINER
        ),
        None,
    )
    env = runner.get("env") if runner is not None else None
    hooks = any(
        isinstance(var, Mapping) and var.get("name") == keys.RUNNER_CONTAINER_HOOKS_ENV
        for var in (env if isinstance(env, list) else [])
    )
    if not hooks:
        return Cond("False", "NoRunnerToken", "the runner pods do not use the Kubernetes API")
    scale_set = observed.scale_set
    return Cond(
        "True",
        "KubernetesModeToken",
        f"the runner pods run the kubernetes container hooks with a ServiceAccount token; the "
        f"hooks' Role can read every Secret of namespace {scale_set.namespace}, the GitHub "
        f"credentials Secret {scale_set.model.spec.github_config_secret} included, so any "
        "workflow on this scale set can read them. Give the scale set a namespace of its own "
        "and GitHub credentials scoped to it (ARC's kubernetes mode is the same)",
    )


# --- 11. status --------------------------------------------------------------------------------


def _status(
    observed: Observed,
    now: datetime,
    conditions: Mapping[str, Cond | None],
    *,
    mirror: bool = True,
    warm: WindowInForce | None = None,
) -> list[Action]:
    """The status write (if anything changed) with the phase (``mirror``), the warm window in
    force (``warm``) and the ``conditions`` (None removes one), and a note per condition that
    changed."""
    scale_set = observed.scale_set
    status = scale_set.model.status
    wanted = _mirrored(observed) if mirror else {}
    notes: list[Note] = []
    if warm is not None:
        wanted.update(warm.fields)
        notes.extend(warm.notes)
    if wanted.get("phase") == ScaleSetPhase.OUTDATED and status.phase != ScaleSetPhase.OUTDATED:
        notes.append(
            Note(
                "RunnerOutdated",
                "runners report a deprecated runner version (exit 7): update the runner image "
                "in spec.template; the runner set is updated in place then (nothing is deleted "
                "or re-created meanwhile)",
                warning=True,
            )
        )
    new_conditions, changed = _merge_conditions(
        status.conditions, conditions, now, scale_set.generation
    )
    for kind, cond, was_bad in changed:
        bad = BAD_WHEN.get(kind) == cond.status
        if cond.message and (bad or was_bad or kind == FINALIZING):
            notes.append(Note(cond.reason, cond.message, warning=bad))
    wanted["conditions"] = new_conditions
    current = to_json(status)
    changes = {key: value for key, value in wanted.items() if current.get(key) != value}
    if not changes:
        return []
    return [WriteStatus(changes, tuple(notes))]


RETIRED_COUNTS = (
    "currentRunners",
    "pendingEphemeralRunners",
    "runningEphemeralRunners",
    "failedEphemeralRunners",
    "startingEphemeralRunners",
    "idleEphemeralRunners",
    "busyEphemeralRunners",
    "terminalEphemeralRunners",
    "deletingEphemeralRunners",
)
"""Runner counts ARC 0.14 (and scaleset before 0.15's cost work) copied into this status. They
live on the EphemeralRunnerSet (L0: its status and columns) and in the metrics; copying them
here cost two status writes per job. A status that still holds them has them removed (null in
the merge patch), once."""


def _mirrored(observed: Observed) -> dict[str, Any]:
    """The phase, from the current runner set; the retired counts removed (``None``) — a key
    absent from the status is no change, so that costs a write only where an older writer left
    them."""
    wanted: dict[str, Any] = dict.fromkeys(RETIRED_COUNTS)
    if not observed.scale_set.deleting:
        current = observed.current_runner_set
        if current is None or current.deleting:
            wanted["phase"] = ScaleSetPhase.PENDING.value
        elif current.status.phase == RunnerSetPhase.OUTDATED:
            wanted["phase"] = ScaleSetPhase.OUTDATED.value
        else:
            wanted["phase"] = ScaleSetPhase.RUNNING.value
    return wanted


def _merge_conditions(
    existing: list[Condition],
    updates: Mapping[str, Cond | None],
    now: datetime,
    generation: int,
) -> tuple[list[dict[str, Any]], list[tuple[str, Cond, bool]]]:
    """The new condition list (JSON) and the (type, condition, was bad) triples whose status,
    reason or message changed. ``lastTransitionTime`` moves only when the status does; an
    Event is due for a change to or from trouble (not for a first "all is well")."""
    result: list[dict[str, Any]] = []
    changed: list[tuple[str, Cond, bool]] = []
    seen: set[str] = set()
    for condition in existing:
        seen.add(condition.type)
        if condition.type not in updates:
            result.append(to_json(condition))
            continue
        update = updates[condition.type]
        if update is None:
            continue
        if (condition.status, condition.reason, condition.message) != tuple(update):
            was_bad = BAD_WHEN.get(condition.type) == condition.status
            changed.append((condition.type, update, was_bad))
        moved = condition.status != update.status or condition.last_transition_time is None
        result.append(
            _condition_json(
                condition.type,
                update,
                now if moved else condition.last_transition_time,
                generation,
            )
        )
    for kind, update in updates.items():
        if kind in seen or update is None:
            continue
        if kind in OPTIONAL and update.status != BAD_WHEN[kind]:
            continue
        changed.append((kind, update, False))
        result.append(_condition_json(kind, update, now, generation))
    return result, changed


def _condition_json(
    kind: str, cond: Cond, since: datetime | None, generation: int
) -> dict[str, Any]:
    return to_json(
        Condition(
            type=kind,
            status=cond.status,
            reason=cond.reason,
            message=cond.message,
            last_transition_time=since,
            observed_generation=generation,
        )
    )
