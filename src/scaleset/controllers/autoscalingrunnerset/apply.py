"""``apply``: one effect, one API call, its result folded into a new ``Observed``.

Kubernetes writes: finalizer edits are guarded JSON patches and the status write carries the
resourceVersion that was read (L2); a ``Conflict`` propagates (the reconcile is requeued and
decides again on a fresh read). A create that meets an existing object, a patch or delete of an
object already gone, are folded in as facts, not errors.

GitHub calls go through the client ``controllers.github_access`` builds for the scale set. What
GitHub answers — including every problem the user must fix (L8) — becomes ``Feedback`` for the
next round of ``plan``; nothing GitHub says is raised past here, and no credential is quoted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from scaleset.api import keys
from scaleset.clock import Clock
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.autoscalingrunnerset.actions import (
    AddFinalizers,
    AnnotateScaleSet,
    CreateListener,
    CreateRunnerSet,
    CreateScaleSet,
    DeleteListener,
    DeleteRunnerSet,
    DeleteScaleSet,
    Effect,
    FindScaleSet,
    ReadChartObjects,
    ReleaseChartObject,
    RemoveFinalizers,
    ResolveRunnerGroup,
    UpdateListener,
    UpdateRunnerSet,
    UpdateScaleSet,
    VerifyScaleSet,
    WriteStatus,
)
from scaleset.controllers.autoscalingrunnerset.observed import (
    CHART_OBJECT_KINDS,
    ChartObject,
    Observed,
    RunnerGroupInfo,
    ScaleSetInfo,
    ScaleSetView,
    Verified,
    with_chart_object,
    with_chart_objects,
    with_feedback,
    with_listener,
    with_runner_set,
    with_scale_set,
)
from scaleset.controllers.github_access import GitHubAccessError, GitHubClients, GitHubTarget
from scaleset.github import (
    ActionsClient,
    GitHubError,
    Label,
    ResponseError,
    RunnerGroupNotFound,
    RunnerScaleSet,
    RunnerSetting,
    ScaleSetNotFound,
    TransportFailure,
)
from scaleset.github.models import DEFAULT_LABEL_TYPE
from scaleset.kube import patches
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import AlreadyExists, Forbidden, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
)
from scaleset.logs import get_logger

log = get_logger(__name__)


class Applied(NamedTuple):
    """The world after the effect, and whether it did what its note says (a GitHub problem or
    an object that turned out to exist already: no Event for it)."""

    observed: Observed
    done: bool = True


class Applier:
    """Runs effects against the API server and GitHub."""

    def __init__(self, kube: KubeClient, github: GitHubClients, clock: Clock) -> None:
        self.kube = kube
        self.github = github
        self.clock = clock

    async def apply(self, effect: Effect, observed: Observed) -> Applied:
        if isinstance(
            effect,
            ResolveRunnerGroup
            | FindScaleSet
            | CreateScaleSet
            | VerifyScaleSet
            | UpdateScaleSet
            | DeleteScaleSet,
        ):
            return await self._github(effect, observed)
        return await self._kube(effect, observed)

    # --- Kubernetes ------------------------------------------------------------------------

    async def _kube(self, effect: Effect, observed: Observed) -> Applied:
        scale_set = observed.scale_set.obj
        match effect:
            case AddFinalizers():
                ops = patches.set_finalizers(scale_set, effect.current, effect.wanted)
                updated = await self.kube.patch_json(AUTOSCALING_RUNNER_SET, scale_set.key, ops)
                return Applied(with_scale_set(observed, updated))
            case RemoveFinalizers():
                ops = patches.set_finalizers(scale_set, effect.current, effect.remaining)
                try:
                    updated = await self.kube.patch_json(AUTOSCALING_RUNNER_SET, scale_set.key, ops)
                except NotFound:
                    return Applied(observed)
                return Applied(with_scale_set(observed, updated))
            case AnnotateScaleSet(annotations=annotations, labels=labels):
                metadata: dict[str, object] = {"annotations": dict(annotations)}
                if labels:
                    metadata["labels"] = dict(labels)
                updated = await self.kube.patch_merge(
                    AUTOSCALING_RUNNER_SET, scale_set.key, {"metadata": metadata}
                )
                return Applied(with_scale_set(observed, updated))
            case WriteStatus(changes=changes):
                updated = await self.kube.patch_with_lock(
                    scale_set, {"status": dict(changes)}, status=True
                )
                return Applied(with_scale_set(observed, updated))
            case CreateRunnerSet(body=body):
                try:
                    created = await self.kube.create(EPHEMERAL_RUNNER_SET, body)
                except AlreadyExists:
                    return Applied(with_feedback(observed, runner_set_exists=True), done=False)
                return Applied(with_runner_set(observed, created.name, created))
            case UpdateRunnerSet(name=name, patch=patch, resource_version=version):
                key = ObjectKey(scale_set.namespace, name)
                try:
                    updated = await self.kube.patch_merge(
                        EPHEMERAL_RUNNER_SET, key, _locked(patch, version)
                    )
                except NotFound:
                    return Applied(with_runner_set(observed, name, None), done=False)
                return Applied(with_runner_set(observed, name, updated))
            case DeleteRunnerSet(name=name, uid=uid):
                key = ObjectKey(scale_set.namespace, name)
                try:
                    remaining = await self.kube.delete(EPHEMERAL_RUNNER_SET, key, uid=uid)
                except NotFound:
                    remaining = None
                return Applied(with_runner_set(observed, name, remaining))
            case CreateListener(body=body):
                try:
                    created = await self.kube.create(AUTOSCALING_LISTENER, body)
                except AlreadyExists:
                    return Applied(with_feedback(observed, listener_exists=True), done=False)
                return Applied(with_listener(observed, created.name, created))
            case UpdateListener(name=name, patch=patch):
                key = ObjectKey(observed.settings.controller_namespace, name)
                try:
                    updated = await self.kube.patch_merge(AUTOSCALING_LISTENER, key, patch)
                except NotFound:
                    return Applied(with_listener(observed, name, None), done=False)
                return Applied(with_listener(observed, name, updated))
            case DeleteListener(name=name, uid=uid):
                key = ObjectKey(observed.settings.controller_namespace, name)
                try:
                    remaining = await self.kube.delete(AUTOSCALING_LISTENER, key, uid=uid)
                except NotFound:
                    remaining = None
                return Applied(with_listener(observed, name, remaining))
            case ReadChartObjects():
                return Applied(
                    with_chart_objects(observed, await self._chart_objects(observed.scale_set))
                )
            case ReleaseChartObject(annotation=annotation, kind=kind, name=name):
                return await self._release(observed, annotation, kind.kind, name)
        raise TypeError(f"not a Kubernetes effect: {effect!r}")

    async def _chart_objects(self, scale_set: ScaleSetView) -> tuple[ChartObject, ...]:
        """The chart objects named by the cleanup annotations, in ARC's order (absent or not
        readable: ``obj`` None, nothing to release)."""
        found: list[ChartObject] = []
        for annotation in keys.CLEANUP_ANNOTATIONS_IN_ORDER:
            name = scale_set.annotations.get(annotation, "")
            if not name:
                continue
            kind = CHART_OBJECT_KINDS[annotation]
            try:
                obj: KubeObject | None = await self.kube.get(
                    kind, ObjectKey(scale_set.namespace, name)
                )
            except (NotFound, Forbidden):
                obj = None
            found.append(ChartObject(annotation, kind, name, obj))
        return tuple(found)

    async def _release(
        self, observed: Observed, annotation: str, kind_name: str, name: str
    ) -> Applied:
        chart_object = next(
            item for item in observed.chart_objects or () if item.annotation == annotation
        )
        assert chart_object.obj is not None
        ops = patches.remove_finalizer(chart_object.obj, keys.CLEANUP_PROTECTION_FINALIZER)
        if ops is None:
            return Applied(observed, done=False)
        try:
            updated = await self.kube.patch_json(chart_object.kind, chart_object.obj.key, ops)
        except NotFound:
            return Applied(with_chart_object(observed, annotation, None), done=False)
        except Forbidden as error:
            # ARC tolerates this for the GitHub Secret; a chart object we may not edit must not
            # block the deletion forever.
            log.warning(
                "cannot release chart object",
                kind=kind_name,
                name=name,
                error=str(error),
            )
            return Applied(with_chart_object(observed, annotation, None), done=False)
        return Applied(with_chart_object(observed, annotation, updated))

    # --- GitHub ----------------------------------------------------------------------------

    async def _github(self, effect: Effect, observed: Observed) -> Applied:
        try:
            # held for the call: a client nobody holds may be closed by the next caller
            async with self.github.use(
                GitHubTarget.of_scale_set(observed.scale_set.model)
            ) as client:
                return await self._call(client, effect, observed)
        except GitHubAccessError as error:
            problem = error.problem
        except GitHubError as error:
            problem = github_problem(error, observed.scale_set)
        log.warning(
            "GitHub problem",
            reason=problem.reason,
            field=problem.field,
            problem=problem.message,
        )
        return Applied(with_feedback(observed, problem=problem), done=False)

    async def _call(self, client: ActionsClient, effect: Effect, observed: Observed) -> Applied:
        match effect:
            case ResolveRunnerGroup(name=name):
                group = await client.get_runner_group_by_name(name)
                return Applied(
                    with_feedback(observed, runner_group=RunnerGroupInfo(group.id, group.name))
                )
            case FindScaleSet(runner_group_id=group_id, name=name):
                found = await client.get_runner_scale_set(group_id, name)
                if found is None:
                    return Applied(with_feedback(observed, looked_up=True))
                info = scale_set_info(found)
                return Applied(
                    self._verified(with_feedback(observed, looked_up=True, registered=info), info)
                )
            case CreateScaleSet(name=name, runner_group_id=group_id, labels=labels):
                created = await client.create_runner_scale_set(
                    RunnerScaleSet(
                        name=name,
                        runner_group_id=group_id,
                        labels=tuple(
                            Label(name=label, type=DEFAULT_LABEL_TYPE) for label in labels
                        ),
                        runner_setting=RunnerSetting(disable_update=True),
                    )
                )
                info = scale_set_info(created)
                return Applied(
                    self._verified(with_feedback(observed, registered=info, created=True), info)
                )
            case VerifyScaleSet(scale_set_id=scale_set_id):
                try:
                    answer = await client.get_runner_scale_set_by_id(scale_set_id)
                except ScaleSetNotFound:
                    answer = None
                if answer is None:
                    return Applied(
                        replace(with_feedback(observed, missing_id=scale_set_id), verified=None)
                    )
                return Applied(self._verified(observed, scale_set_info(answer)))
            case UpdateScaleSet(
                scale_set_id=scale_set_id, name=name, runner_group_id=group_id, labels=labels
            ):
                try:
                    updated = await client.update_runner_scale_set(
                        scale_set_id,
                        RunnerScaleSet(
                            name=name or "",
                            runner_group_id=group_id or 0,
                            labels=_labels(labels or ()),
                            runner_setting=RunnerSetting(disable_update=True),
                        ),
                    )
                except ScaleSetNotFound:
                    return Applied(_missing(observed, scale_set_id), done=False)
                return Applied(self._verified(observed, scale_set_info(updated)))
            case DeleteScaleSet(scale_set_id=scale_set_id):
                with contextlib.suppress(ScaleSetNotFound):
                    await client.delete_runner_scale_set(scale_set_id)
                return Applied(with_feedback(observed, scale_set_deleted=True))
        raise TypeError(f"not a GitHub effect: {effect!r}")

    def _verified(self, observed: Observed, info: ScaleSetInfo) -> Observed:
        return replace(
            observed, verified=Verified(info, observed.scale_set.generation, self.clock.now())
        )


def _locked(patch: Mapping[str, Any], resource_version: str) -> dict[str, Any]:
    """``patch`` carrying ``metadata.resourceVersion`` (a 409 Conflict if the object moved on);
    unchanged without a version."""
    if not resource_version:
        return dict(patch)
    metadata = patch.get("metadata")
    return {
        **patch,
        "metadata": {
            **(metadata if isinstance(metadata, Mapping) else {}),
            "resourceVersion": resource_version,
        },
    }


def _labels(names: tuple[str, ...]) -> tuple[Label, ...]:
    return tuple(Label(name=name, type=DEFAULT_LABEL_TYPE) for name in names)


def _missing(observed: Observed, scale_set_id: int) -> Observed:
    """GitHub does not know scale set ``scale_set_id`` (any more)."""
    return replace(with_feedback(observed, missing_id=scale_set_id), verified=None)


def scale_set_info(scale_set: RunnerScaleSet) -> ScaleSetInfo:
    return ScaleSetInfo(
        id=scale_set.id,
        name=scale_set.name,
        runner_group_id=scale_set.runner_group_id,
        runner_group_name=scale_set.runner_group_name,
        labels=tuple(label.name for label in scale_set.labels),
        disable_update=scale_set.runner_setting.disable_update,
    )


def github_problem(error: GitHubError, scale_set: ScaleSetView) -> GitHubProblem:
    """What a GitHub error means for the user: reason, field to fix, one line (no secret)."""
    spec = scale_set.model.spec
    secret = f"Secret {scale_set.namespace}/{spec.github_config_secret}"
    url = spec.github_config_url
    if isinstance(error, RunnerGroupNotFound):
        return GitHubProblem(
            "RunnerGroupNotFound",
            "spec.runnerGroup",
            f"runner group {error.name!r} does not exist for {url}",
        )
    if isinstance(error, ResponseError):
        if error.status == 401:
            return GitHubProblem(
                "GitHubUnauthorized",
                "spec.githubConfigSecret",
                f"GitHub refused the credentials in {secret} (401 Unauthorized)",
            )
        if error.status == 403:
            return GitHubProblem(
                "GitHubForbidden",
                "spec.githubConfigSecret",
                f"the credentials in {secret} may not manage runners of {url} (403 Forbidden)",
            )
        if error.status == 404:
            return GitHubProblem(
                "GitHubNotFound",
                "spec.githubConfigUrl",
                f"{url} was not found on GitHub, or the credentials in {secret} cannot see it "
                "(404 Not Found)",
            )
        return GitHubProblem(
            "GitHubError",
            "spec.githubConfigUrl",
            f"GitHub answered {error.status} {error.reason} to {error.method}",
        )
    if isinstance(error, TransportFailure):
        return GitHubProblem(
            "GitHubUnreachable", "spec.githubConfigUrl", f"cannot reach GitHub for {url}"
        )
    return GitHubProblem("GitHubError", "spec.githubConfigUrl", type(error).__name__)
