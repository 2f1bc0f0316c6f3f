"""One registration pass per scale set (lifecycle.md L6), run by a controller on the
EphemeralRunnerSets: it reads the world in the order ``observed`` explains, calls ``plan``,
applies the deletions one by one and asks to be called again after the interval.

A pass is due ``interval`` seconds after the last one of that set (this process's memory: a
restarted controller makes a pass at once, which is only early). Everything else that makes
the queue call ``reconcile`` in between (the set's status changing) answers "not yet".

The listener's durable state (``scaleset.dev/listener-state``) holds its session, last message
and patch sequence but not GitHub's statistics, so the early pass the spec asks for when the
listener's ``totalRegisteredRunners`` disagrees with our count cannot be triggered from here.

Safety (L6): an error reading GitHub (any page of the REST list, any confirmation, an auth
failure) ends the pass before ``plan`` — nothing is deleted — and is posted as a Warning Event
``RegistrationPassFailed`` on the set; the next pass comes one interval later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client import REGISTRY, CollectorRegistry

from scaleset.api import EphemeralRunner, EphemeralRunnerSet, classify, keys
from scaleset.api.naming import ephemeral_runner_generate_name
from scaleset.clock import Clock
from scaleset.controllers.decisions import decision_counter
from scaleset.controllers.github_access import GitHubAccessError, GitHubClients, GitHubTarget
from scaleset.controllers.hygiene.apply import Applier
from scaleset.controllers.hygiene.observed import Observed, Registration, RunnerView, Settings
from scaleset.controllers.hygiene.plan import (
    Action,
    DeleteMissing,
    DeletionCapReached,
    ForgetOffline,
    NoteOffline,
    RemoveOrphan,
    ReplaceOffline,
    Retire,
    missing_candidates,
    orphan_candidates,
    plan,
)
from scaleset.github import ActionsClient, GitHubError, RunnerNotFound, RunnerReference
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, POD
from scaleset.logs import get_logger
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder

log = get_logger(__name__)

DECISIONS_METRIC = "scaleset_registration_pass_decisions_total"
RUNNER_PODS = f"{keys.EPHEMERAL_RUNNER_LABEL}={keys.EPHEMERAL_RUNNER_LABEL_VALUE}"


class PassFailed(Exception):
    """GitHub could not give a complete, trustworthy answer; the pass deletes nothing."""


@dataclass(frozen=True)
class PassReport:
    """What one pass decided and did (tests and logs)."""

    actions: tuple[Action, ...] = ()
    done: tuple[str, ...] = ()
    """Reasons of the deletions carried out, in order."""
    failed: str = ""


@dataclass
class RegistrationPass:
    kube: KubeClient
    github: GitHubClients
    events: EventRecorder
    clock: Clock
    settings: Settings = field(default_factory=Settings)
    registry: CollectorRegistry | None = REGISTRY
    _last: dict[ObjectKey, float] = field(default_factory=dict)
    _offline_since: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.decisions = decision_counter(
            DECISIONS_METRIC, "Registration pass decisions by reason (L6).", self.registry
        )

    async def reconcile(self, key: ObjectKey) -> Result:
        try:
            obj = await self.kube.get(EPHEMERAL_RUNNER_SET, key)
        except NotFound:
            self._last.pop(key, None)
            return Result()
        if obj.is_deleting:
            return Result()
        now = self.clock.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self.settings.interval:
            return Result(requeue_after=self.settings.interval - (now - last))
        self._last[key] = now
        await self.run(obj)
        return Result(requeue_after=self.settings.interval)

    async def run(self, runner_set: KubeObject) -> PassReport:
        """One pass over ``runner_set`` (a fresh read of the EphemeralRunnerSet)."""
        model = EphemeralRunnerSet.model_validate(runner_set.raw)
        scale_set_id = model.spec.ephemeral_runner_spec.runner_scale_set_id
        if not scale_set_id:
            return PassReport(failed="no scale set id yet")
        try:
            github = await self.github.client_for(GitHubTarget.of_runner_set(model))
        except GitHubAccessError as error:
            # The set's own controller reports unusable settings; nothing to check with.
            return PassReport(failed=f"GitHub settings unusable: {error.reason}")
        try:
            observed, raw_runners = await self._observe(runner_set, scale_set_id, github)
        except (GitHubError, PassFailed) as error:
            message = f"registration check skipped, nothing deleted: {_describe(error)}"
            self._count("RegistrationPassFailed")
            self.events.emit(runner_set, "Warning", "RegistrationPassFailed", message)
            log.warning("registration pass failed", set=runner_set.name, error=_describe(error))
            return PassReport(failed=_describe(error))
        actions = plan(observed, self.settings)
        done: list[str] = []
        applier = Applier(self.kube, runner_set.namespace)
        for action in actions:
            if isinstance(action, NoteOffline):
                self._offline_since[action.uid] = action.since
                continue
            if isinstance(action, ForgetOffline):
                self._offline_since.pop(action.uid, None)
                continue
            if isinstance(action, DeletionCapReached):
                self._count(action.reason)
                self.events.emit(
                    runner_set,
                    "Warning",
                    action.reason,
                    f"per-pass deletion cap {self.settings.max_deletions} reached; left for the "
                    f"next pass: {', '.join(action.deferred)}",
                )
                continue
            try:
                outcome = await applier.apply(action, github)
            except GitHubError as error:
                self.events.emit(
                    runner_set,
                    "Warning",
                    "RegistrationPassFailed",
                    f"registration pass stopped: {_describe(error)}",
                )
                return PassReport(tuple(actions), tuple(done), _describe(error))
            if not outcome.done:
                log.info("registration pass kept", action=action.reason, why=outcome.skipped)
                continue
            done.append(action.reason)
            self._count(action.reason)
            self._announce(action, runner_set, raw_runners, scale_set_id)
            if not isinstance(action, RemoveOrphan):
                self._offline_since.pop(action.runner.uid, None)
        return PassReport(tuple(actions), tuple(done))

    # --- reading -------------------------------------------------------------------------

    async def _observe(
        self, runner_set: KubeObject, scale_set_id: int, github: ActionsClient
    ) -> tuple[Observed, Mapping[str, KubeObject]]:
        namespace = runner_set.namespace
        prefix = ephemeral_runner_generate_name(runner_set.name)
        now = self.clock.time()
        before = await self._runners(runner_set)
        pods = await self.kube.list(POD, namespace=namespace, label_selector=RUNNER_PODS)
        running = {
            pod.name
            for pod in pods.items
            if not pod.is_deleting and pod.status.get("phase") == "Running"
        }
        views = tuple(_view(obj, obj.name in running) for obj in before.values())
        listed = await github.list_runners()
        registrations = tuple(
            Registration(r.id, r.name, r.status == "online", r.busy)
            for r in listed
            if r.name.startswith(prefix)
        )
        after = await self._runners(runner_set)
        missing: set[int] = set()
        for runner_id in missing_candidates(views, frozenset(r.id for r in listed)):
            if await _lookup(github, runner_id) is None:
                missing.add(runner_id)
        known = frozenset(before) | frozenset(after)
        scale_set_of: dict[int, int] = {}
        for registration_id in orphan_candidates(registrations, prefix, known):
            found = await _lookup(github, registration_id)
            if found is not None:
                scale_set_of[registration_id] = found.runner_scale_set_id
        observed = Observed(
            namespace=namespace,
            set_name=runner_set.name,
            scale_set_id=scale_set_id,
            prefix=prefix,
            now=now,
            runners=views,
            names_after=frozenset(after),
            registrations=registrations,
            missing=frozenset(missing),
            scale_set_of=scale_set_of,
            offline_since={
                uid: since
                for uid, since in self._offline_since.items()
                if any(v.uid == uid for v in views)
            },
        )
        return observed, before

    async def _runners(self, runner_set: KubeObject) -> dict[str, KubeObject]:
        listed = await self.kube.list(EPHEMERAL_RUNNER, namespace=runner_set.namespace)
        return {
            obj.name: obj
            for obj in listed.items
            if (owner := obj.controller_owner) is not None and owner.uid == runner_set.uid
        }

    # --- telling -------------------------------------------------------------------------

    def _count(self, reason: str) -> None:
        self.decisions.labels(reason).inc()

    def _announce(
        self,
        action: Action,
        runner_set: KubeObject,
        runners: Mapping[str, KubeObject],
        scale_set_id: int,
    ) -> None:
        if isinstance(action, RemoveOrphan):
            message = (
                f"removed registration {action.name} (runner id {action.runner_id}) of scale "
                f"set {scale_set_id}: no EphemeralRunner has that name"
            )
            self.events.emit(runner_set, "Normal", action.reason, message)
            log.info("registration pass", reason=action.reason, detail=message)
            return
        assert isinstance(action, DeleteMissing | ReplaceOffline | Retire)
        if isinstance(action, DeleteMissing):
            message = (
                f"GitHub no longer knows runner id {action.runner.runner_id} "
                "(RunnerNotFound) and it has no job: deleted, the set replaces it"
            )
        elif isinstance(action, ReplaceOffline):
            message = (
                f"GitHub shows the runner offline for {action.offline_seconds:.0f}s while its "
                "pod runs and it has no job: replaced"
            )
        else:
            message = (
                f"idle runner {action.age_seconds:.0f}s old, past the maximum runner age "
                f"{self.settings.max_runner_age:.0f}s: retired, the set replaces it"
            )
        target = runners.get(action.runner.name, runner_set)
        if isinstance(action, Retire):
            self.events.emit(target, "Normal", action.reason, message)
        else:
            self.events.emit(target, "Warning", action.reason, message)
        log.info("registration pass", reason=action.reason, runner=action.runner.name)


async def _lookup(github: ActionsClient, runner_id: int) -> RunnerReference | None:
    """The registration by id from the Actions service, or ``None`` when it answers
    RunnerNotFound. Any other error propagates (the pass then deletes nothing)."""
    try:
        return await github.get_runner(runner_id)
    except RunnerNotFound:
        return None


def _view(obj: KubeObject, pod_running: bool) -> RunnerView:
    runner = EphemeralRunner.model_validate(obj.raw)
    created = runner.metadata.creation_timestamp
    state = classify(runner)
    status = runner.status
    return RunnerView(
        name=obj.name,
        uid=obj.uid,
        resource_version=obj.resource_version,
        created=created.timestamp() if created is not None else None,
        state=state,
        runner_id=status.runner_id,
        has_job=status.has_job and status.job_completion is None,
        pod_running=pod_running,
    )


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"
