"""``apply``: one action, one API call (two for registration: generatejitconfig, then the
Secret), and the observed state as it is afterwards.

No decision is taken here: what GitHub or the API server answered that ``plan`` must weigh
(a name already registered, a busy registration, unusable GitHub settings, a refused pod) comes
back as ``Feedback`` on the returned ``Observed``. ``Conflict`` (a stale resourceVersion, a
failed ``test`` op or precondition) propagates: the reconciler reads again and plans again.
Transient failures (API server or GitHub unavailable) propagate too: the work queue backs off.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field

from scaleset.api import keys, naming
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.ephemeralrunner.actions import (
    AddFinalizers,
    AnnotatePod,
    CreatePod,
    DeleteHookPods,
    DeletePod,
    DeleteRunner,
    DeleteSecret,
    Effect,
    RegisterRunner,
    RemoveFinalizers,
    RemoveRegistration,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunner.observed import (
    Feedback,
    HookPodsDeleted,
    NameTaken,
    Observed,
    PodPatchForbidden,
    PodRefused,
    RegistrationBusy,
    RegistrationRemoved,
    SecretView,
    observe_pod,
    observe_runner,
    observe_secret,
)
from scaleset.controllers.ephemeralrunner.pod import jit_secret, runner_pod, work_folder
from scaleset.controllers.github_access import GitHubAccessError, GitHubClients, GitHubTarget
from scaleset.github import ActionsClient, JobStillRunning, RunnerExists, RunnerNotFound
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import AlreadyExists, Forbidden, Invalid, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.patches import set_finalizers
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD, SECRET


@dataclass
class Applier:
    """Turns actions into API calls for one controller process."""

    kube: KubeClient
    github: GitHubClients
    user_agent: str
    _pods_unpatchable: dict[str, str] = field(default_factory=dict)
    """Namespace -> the API server's message, where a pod patch was Forbidden: not tried
    again by this process (a Role without ``patch`` on pods, e.g. ARC's runner-set chart, would
    cost a refused request per reconcile of every busy runner)."""

    def standing_feedback(self, namespace: str) -> tuple[Feedback, ...]:
        """What earlier reconciles of this process learned that still holds in ``namespace``
        (it starts each reconcile's ``Observed.feedback``)."""
        message = self._pods_unpatchable.get(namespace)
        return () if message is None else (PodPatchForbidden(message, announced=True),)

    async def apply(self, action: Effect, observed: Observed) -> Observed | None:
        """Do ``action``; the observed state afterwards, or None once the runner is gone."""
        match action:
            case AddFinalizers():
                return self._runner(observed, await self._add_finalizers(action, observed))
            case WriteStatus():
                changed = await self.kube.patch_with_lock(
                    observed.obj, {"status": dict(action.changes)}, status=True
                )
                return self._runner(observed, changed)
            case RegisterRunner():
                return await self._register(observed)
            case CreatePod():
                return await self._create_pod(observed)
            case AnnotatePod():
                return await self._annotate_pod(action, observed)
            case DeletePod():
                return await self._delete_pod(action, observed)
            case DeleteSecret():
                return await self._delete_secret(action, observed)
            case RemoveRegistration():
                return await self._remove_registration(action, observed)
            case DeleteRunner(guarded=guarded):
                return await self._delete_runner(observed, guarded=guarded)
            case DeleteHookPods():
                await self._delete_hook_pods(observed)
                return _learn(observed, HookPodsDeleted())
            case RemoveFinalizers():
                return await self._remove_finalizers(action, observed)
        raise AssertionError(f"unknown action {action!r}")

    # --- the runner --------------------------------------------------------------------------

    @staticmethod
    def _runner(observed: Observed, obj: KubeObject) -> Observed:
        return dataclasses.replace(observed, obj=obj, runner=observe_runner(obj))

    async def _add_finalizers(self, action: AddFinalizers, observed: Observed) -> KubeObject:
        ops = set_finalizers(observed.obj, action.current, action.wanted)
        return await self.kube.patch_json(EPHEMERAL_RUNNER, observed.obj.key, ops)

    async def _remove_finalizers(
        self, action: RemoveFinalizers, observed: Observed
    ) -> Observed | None:
        ops = set_finalizers(observed.obj, action.current, action.remaining)
        try:
            changed = await self.kube.patch_json(EPHEMERAL_RUNNER, observed.obj.key, ops)
        except NotFound:
            return None
        return self._runner(observed, changed)

    async def _delete_runner(self, observed: Observed, *, guarded: bool) -> Observed | None:
        obj = observed.obj
        version = obj.resource_version if guarded else None
        try:
            remaining = await self.kube.delete(
                EPHEMERAL_RUNNER, obj.key, uid=obj.uid, resource_version=version
            )
        except NotFound:
            return None
        if remaining is None:
            return None
        return self._runner(observed, remaining)

    # --- pod and Secret ----------------------------------------------------------------------

    async def _create_pod(self, observed: Observed) -> Observed:
        body = runner_pod(observed.runner, user_agent=self.user_agent)
        key = ObjectKey(observed.runner.metadata.namespace, body["metadata"]["name"])
        try:
            created = await self.kube.create(POD, body, namespace=key.namespace)
        except AlreadyExists:
            created = await self.kube.get(POD, key)
        except Invalid as error:
            return _learn(observed, PodRefused("invalid", error.message))
        except Forbidden as error:
            kind = "quota" if "exceeded quota" in error.message else "invalid"
            return _learn(observed, PodRefused(kind, error.message))
        return dataclasses.replace(observed, pod=observe_pod(created))

    async def _annotate_pod(self, action: AnnotatePod, observed: Observed) -> Observed:
        namespace = observed.runner.metadata.namespace
        known = self.standing_feedback(namespace)
        if known:
            return _learn(observed, known[0])
        key = ObjectKey(namespace, naming.runner_pod_name(observed.name))
        changes = {"metadata": {"annotations": dict(action.annotations)}}
        try:
            patched = await self.kube.patch_merge(POD, key, changes)
        except NotFound:
            return dataclasses.replace(observed, pod=None)
        except Forbidden as error:
            self._pods_unpatchable[namespace] = error.message
            return _learn(observed, PodPatchForbidden(error.message))
        return dataclasses.replace(observed, pod=observe_pod(patched))

    async def _delete_pod(self, action: DeletePod, observed: Observed) -> Observed:
        key = ObjectKey(observed.runner.metadata.namespace, naming.runner_pod_name(observed.name))
        try:
            remaining = await self.kube.delete(
                POD,
                key,
                uid=action.uid,
                resource_version=action.resource_version or None,
                grace_period_seconds=action.grace_seconds,
            )
        except NotFound:
            remaining = None
        return dataclasses.replace(
            observed, pod=observe_pod(remaining) if remaining is not None else None
        )

    async def _delete_secret(self, action: DeleteSecret, observed: Observed) -> Observed:
        key = ObjectKey(observed.runner.metadata.namespace, naming.jit_secret_name(observed.name))
        try:
            remaining = await self.kube.delete(SECRET, key, uid=action.uid)
        except NotFound:
            remaining = None
        return dataclasses.replace(
            observed, secret=observe_secret(remaining) if remaining is not None else None
        )

    async def _delete_hook_pods(self, observed: Observed) -> None:
        namespace = observed.runner.metadata.namespace
        selector = f"{keys.RUNNER_POD_LABEL}={observed.name}"
        for kind in (POD, SECRET):
            listed = await self.kube.list(kind, namespace=namespace, label_selector=selector)
            for item in listed.items:
                if item.is_deleting:
                    continue
                with contextlib.suppress(NotFound):
                    await self.kube.delete(kind, item.key, uid=item.uid)

    # --- GitHub ------------------------------------------------------------------------------

    async def _client(
        self, stack: contextlib.AsyncExitStack, observed: Observed
    ) -> ActionsClient | GitHubProblem:
        """The runner's GitHub client, held until ``stack`` closes; what to fix if none."""
        target = GitHubTarget.of_runner(observed.runner)
        try:
            return await stack.enter_async_context(self.github.use(target))
        except GitHubAccessError as error:
            return error.problem

    async def _register(self, observed: Observed) -> Observed:
        async with contextlib.AsyncExitStack() as stack:
            client = await self._client(stack, observed)
            if isinstance(client, GitHubProblem):
                return _learn(observed, client)
            return await self._register_with(client, observed)

    async def _register_with(self, client: ActionsClient, observed: Observed) -> Observed:
        runner = observed.runner
        scale_set_id = runner.spec.runner_scale_set_id
        try:
            config = await client.generate_jit_runner_config(
                scale_set_id, observed.name, work_folder(runner)
            )
        except RunnerExists:
            existing = await client.get_runner_by_name(observed.name)
            if existing is None:
                return _learn(observed, NameTaken(found=False))
            # the JIT Secret of that registration, if the process that made it wrote one
            observed = dataclasses.replace(observed, secret=await self._jit_secret(observed))
            return _learn(observed, NameTaken(True, existing.id, existing.runner_scale_set_id))
        body = jit_secret(runner, config)
        key = ObjectKey(runner.metadata.namespace, body["metadata"]["name"])
        try:
            created = await self.kube.create(SECRET, body, namespace=key.namespace)
        except AlreadyExists:
            # A Secret from an earlier registration of this name, which GitHub no longer has
            # (the name was free). It is not overwritten: a failed overwrite would leave it
            # holding a removed registration for the runner to use, and this registration
            # without a runner. The plan deletes it, removes this registration and registers
            # again.
            observed = dataclasses.replace(observed, secret=await self._jit_secret(observed))
            return _learn(observed, NameTaken(True, config.runner.id, scale_set_id))
        return dataclasses.replace(observed, secret=observe_secret(created))

    async def _jit_secret(self, observed: Observed) -> SecretView | None:
        key = ObjectKey(observed.runner.metadata.namespace, naming.jit_secret_name(observed.name))
        try:
            return observe_secret(await self.kube.get(SECRET, key))
        except NotFound:
            return None

    async def _remove_registration(
        self, action: RemoveRegistration, observed: Observed
    ) -> Observed:
        async with contextlib.AsyncExitStack() as stack:
            client = await self._client(stack, observed)
            if isinstance(client, GitHubProblem):
                return _learn(observed, client)
            return await self._remove_registration_with(client, action, observed)

    async def _remove_registration_with(
        self, client: ActionsClient, action: RemoveRegistration, observed: Observed
    ) -> Observed:
        runner_id = action.runner_id
        if runner_id == 0:
            found = await client.get_runner_by_name(observed.name)
            scale_set_id = observed.runner.spec.runner_scale_set_id
            if found is None or (
                found.runner_scale_set_id and found.runner_scale_set_id != scale_set_id
            ):
                return _learn(observed, RegistrationRemoved(0))
            runner_id = found.id
        try:
            await client.remove_runner(runner_id)
        except RunnerNotFound:
            pass
        except JobStillRunning:
            return _learn(observed, RegistrationBusy(runner_id))
        return _learn(observed, RegistrationRemoved(runner_id))


def _learn(observed: Observed, feedback: Feedback) -> Observed:
    return dataclasses.replace(observed, feedback=(*observed.feedback, feedback))
