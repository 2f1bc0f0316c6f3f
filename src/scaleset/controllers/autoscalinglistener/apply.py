"""``apply``: one action, one API call.

No decision is taken here. What the API server answered that ``plan`` must weigh (a create it
refused: an invalid pod template, a Role the controller may not grant) comes back as feedback
on the returned ``Observed``. ``Conflict`` (a stale resourceVersion, a failed ``test`` op or
precondition) and ``AlreadyExists`` (a create raced with someone) propagate as ``Conflict``: the
reconciler reads again and plans again. NotFound on a delete is success. Transient failures
propagate: the work queue backs off.

Secret bodies are built here from the observed inputs (actions never hold credentials). The
config Secret is rewritten with a merge patch of its ``data`` (and of the labels/annotations
that drifted): content, not existence, decides (ARC leaves stale data, §11.4).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from scaleset.controllers.autoscalinglistener import resources
from scaleset.controllers.autoscalinglistener.actions import (
    AddFinalizers,
    CreateObject,
    DeleteListener,
    DeleteObject,
    Effect,
    PatchObject,
    RemoveFinalizers,
    WriteSecret,
    WriteStatus,
)
from scaleset.controllers.autoscalinglistener.inputs import Inputs
from scaleset.controllers.autoscalinglistener.observed import (
    Observed,
    Refused,
    SecretView,
    observe_listener,
)
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import AlreadyExists, Conflict, Forbidden, Invalid, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.patches import set_finalizers
from scaleset.kube.resources import AUTOSCALING_LISTENER, SECRET


@dataclass
class Applier:
    """Turns actions into API calls."""

    kube: KubeClient

    async def apply(self, action: Effect, observed: Observed) -> Observed | None:
        """Do ``action``; the observed state afterwards (None: the listener is gone)."""
        match action:
            case AddFinalizers():
                return self._listener(observed, await self._add_finalizers(action, observed))
            case RemoveFinalizers():
                return await self._remove_finalizers(action, observed)
            case WriteStatus():
                changed = await self.kube.patch_with_lock(
                    observed.obj, {"status": dict(action.changes)}, status=True
                )
                return self._listener(observed, changed)
            case CreateObject():
                return await self._create(action, observed)
            case PatchObject():
                await self.kube.patch_merge(action.kind, action.key, action.body)
                return observed
            case WriteSecret():
                await self._write_secret(action, observed)
                return observed
            case DeleteObject():
                await self._delete(action)
                return observed
            case DeleteListener():
                await self._delete_listener(observed)
                return None
        raise AssertionError(f"unknown action {action!r}")

    # --- the listener ------------------------------------------------------------------------

    @staticmethod
    def _listener(observed: Observed, obj: KubeObject) -> Observed:
        listener, problems = observe_listener(obj)
        return dataclasses.replace(observed, obj=obj, listener=listener, problems=problems)

    async def _add_finalizers(self, action: AddFinalizers, observed: Observed) -> KubeObject:
        ops = set_finalizers(observed.obj, action.current, action.wanted)
        return await self.kube.patch_json(AUTOSCALING_LISTENER, observed.obj.key, ops)

    async def _remove_finalizers(
        self, action: RemoveFinalizers, observed: Observed
    ) -> Observed | None:
        ops = set_finalizers(observed.obj, action.current, action.remaining)
        try:
            obj = await self.kube.patch_json(AUTOSCALING_LISTENER, observed.obj.key, ops)
        except NotFound:
            return None
        return self._listener(observed, obj)

    async def _delete_listener(self, observed: Observed) -> None:
        try:
            await self.kube.delete(AUTOSCALING_LISTENER, observed.obj.key, uid=observed.obj.uid)
        except NotFound:
            return

    # --- the listener's objects ----------------------------------------------------------------

    async def _create(self, action: CreateObject, observed: Observed) -> Observed:
        try:
            await self.kube.create(action.kind, action.body)
        except AlreadyExists as error:
            raise Conflict(409, "Conflict", error.message, error.details) from error
        except (Invalid, Forbidden) as error:
            kind = action.kind.kind
            reason = f"{kind}Invalid" if isinstance(error, Invalid) else f"{kind}Forbidden"
            refused = Refused(kind, reason, error.message[:400])
            return dataclasses.replace(observed, feedback=(*observed.feedback, refused))
        return observed

    async def _delete(self, action: DeleteObject) -> None:
        try:
            await self.kube.delete(action.kind, action.key, uid=action.uid or None)
        except NotFound:
            return

    async def _write_secret(self, action: WriteSecret, observed: Observed) -> None:
        inputs = observed.inputs
        if not isinstance(inputs, Inputs):
            raise AssertionError("a Secret is written only with inputs")
        listener = observed.listener
        if action.which == "config":
            document = resources.config_document(listener, inputs, observed.settings)
            body = resources.config_secret(listener, document, observed.settings)
            current = observed.config_secret
        else:
            body = resources.proxy_secret(listener, inputs.proxy or {})
            current = observed.proxy_secret
        if action.create:
            try:
                await self.kube.create(SECRET, body)
            except AlreadyExists as error:
                raise Conflict(409, "Conflict", error.message, error.details) from error
            return
        assert current is not None
        await self.kube.patch_merge(
            SECRET, ObjectKey(current.namespace, current.name), _secret_patch(current, body)
        )


def _secret_patch(current: SecretView, body: dict[str, Any]) -> dict[str, Any]:
    """Every data key rewritten; labels and annotations that drifted merged in."""
    metadata = body["metadata"]
    data: dict[str, Any] = dict(body["data"])
    patch_meta: dict[str, Any] = {
        "labels": {k: v for k, v in metadata["labels"].items() if current.labels.get(k) != v},
        "annotations": {
            k: v for k, v in metadata["annotations"].items() if current.annotations.get(k) != v
        },
    }
    return {"metadata": {k: v for k, v in patch_meta.items() if v}, "data": data}
