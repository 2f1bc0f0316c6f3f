"""One registration pass per scale set (lifecycle.md L6), run by a controller on the
EphemeralRunnerSets: it reads the world in the order ``observed`` explains, calls ``plan``,
applies the deletions (and inferred job completions) one by one and asks to be called again.

When a pass runs is ``schedule.decide``'s: every ``interval`` seconds per set, and early when the
listener's ``totalRegisteredRunners`` (its state annotation on the set) disagrees with the set's
runners for a sustained time, or at once when the listener replaced its message session after
the last pass began (``sessionReplacedAt`` in the same annotation: job events may be lost with
the old session), or ``min_gap`` after a pass that reached its deletion cap. Deciding reads
only caches (the set, its runners): a change of the set or of one of its runners is an
observation and costs no API call; only a pass reads fresh.
The schedule is this process's memory: a restarted controller makes a pass at once, which is
only early.

When a pass first sees a runner offline is stored on that EphemeralRunner (annotation
``scaleset.dev/offline-since``, written when it is first seen and removed when it is seen online
again), so a restart in the middle of the offline bound neither resets nor skips it.

Safety (L6): an error reading GitHub (any page of the REST list, any confirmation, an auth
failure) ends the pass before ``plan`` — nothing is deleted — and is posted as a Warning Event
``RegistrationPassFailed`` on the set; the next pass comes one interval later.

API calls of a pass (``reads``): a pass plans on the controller's caches of the set, its
EphemeralRunners and the runner pods first, and one that finds nothing to do sends none. A plan
that would act is made again on fresh reads (get the set, list EphemeralRunners twice and runner
pods of the set's namespace, around GitHub's list), and only that plan is applied: get (for a
replacement, or after a Conflict) the runner, patch a runner's annotations (offline notes) or
status (an inferred job completion), delete runners; post Events. Between passes: none. Each
fresh list keeps only what the pass reads: the runners with their shared spec, then the second
list of runners and the pods as names, owners and deletion state (and the pods' phase); the
first list's whole runners only until their views are made, before GitHub's runner list is read
(so the two are never held at once). A pass over thousands of runners held whole lists of full
objects at once before: tens of MB, which the process's arenas then kept
(bench/controller_memory.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scaleset.api import (
    TERMINAL_PHASES,
    EphemeralRunner,
    EphemeralRunnerSet,
    classify,
    format_kube_time,
    keys,
    parse_kube_time,
)
from scaleset.api.listener_state import ListenerState
from scaleset.api.naming import ephemeral_runner_generate_name
from scaleset.clock import Clock
from scaleset.controllers.decisions import Note, announce
from scaleset.controllers.github_access import GitHubAccessError, GitHubClients, GitHubTarget
from scaleset.controllers.registrationpass.actions import (
    Action,
    DeletionCapReached,
    ForgetOffline,
    NoteOffline,
    RemoveOrphan,
)
from scaleset.controllers.registrationpass.apply import Applier
from scaleset.controllers.registrationpass.metrics import PassDecisionMetrics
from scaleset.controllers.registrationpass.observed import Observed, Registration, RunnerView
from scaleset.controllers.registrationpass.plan import (
    missing_candidates,
    missing_ids_by_name,
    orphan_candidates,
    plan,
)
from scaleset.controllers.registrationpass.reads import CachedReads, FreshReads, Reads
from scaleset.controllers.registrationpass.schedule import (
    Counts,
    EarlySettings,
    RunPass,
    Watch,
    decide,
    early_gap,
    left_over,
)
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.controllers.rounds import get_or_none
from scaleset.github import ActionsClient, GitHubError, RunnerNotFound, RunnerReference
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import KubeError, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey, identity
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from scaleset.logs import get_logger
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.informer import Informer

log = get_logger(__name__)


class PassFailed(Exception):
    """GitHub could not give a complete, trustworthy answer; the pass deletes nothing."""


@dataclass(frozen=True)
class PassReport:
    """What one pass decided and did (tests and logs)."""

    actions: tuple[Action, ...] = ()
    done: tuple[str, ...] = ()
    """Reasons of the deletions (and inferred completions) carried out, in order."""
    failed: str = ""


@dataclass
class RegistrationPass:
    kube: KubeClient
    github: GitHubClients
    events: EventRecorder
    clock: Clock
    settings: Settings = field(default_factory=Settings)
    metrics: PassDecisionMetrics = field(default_factory=PassDecisionMetrics.default)
    early: EarlySettings = field(default_factory=EarlySettings)
    sets: Informer | None = None
    """The controller's cache of EphemeralRunnerSets (``None``: read them with a GET)."""
    runners: Informer | None = None
    """A cache of EphemeralRunners (``None``: no early pass, and a pass reads fresh)."""
    pods: Informer | None = None
    """A cache of runner pods (with ``runners``: a pass plans on the caches first)."""
    _watch: dict[ObjectKey, Watch] = field(default_factory=dict)

    async def reconcile(self, key: ObjectKey) -> Result:
        obj = self.sets.get(key) if self.sets is not None else await self._get_set(key)
        if obj is None:
            self._watch.pop(key, None)
            return Result()
        if obj.is_deleting:
            return Result()
        now = self.clock.monotonic()
        watch, decision = decide(
            self._watch.get(key, Watch()),
            self.counts(obj),
            now,
            self.settings.interval,
            self.early,
            ListenerState.of(obj.annotations).replaced_at,
        )
        self._watch[key] = watch
        if not isinstance(decision, RunPass):
            return Result(requeue_after=decision.seconds)
        if self._cached_reads() is None and self.sets is not None:
            # no caches to plan on: the pass reads everything fresh, the set too
            obj = await self._get_set(key)
            if obj is None or obj.is_deleting:
                return Result()
        if decision.replaced:
            self._announce(Note("SessionReplacedPass"), obj)
            log.info("registration pass early: the listener replaced its session", set=key.name)
        elif decision.left_over:
            log.info("registration pass early: the last one reached its cap", set=key.name)
        elif decision.early:
            self._announce(Note("EarlyPass"), obj)
            log.info("registration pass early: GitHub's count disagrees", set=key.name)
        report = await self.run(obj)
        if any(isinstance(action, DeletionCapReached) for action in report.actions):
            self._watch[key] = left_over(watch)
            return Result(requeue_after=self.early.min_gap)
        # look again after the shortest time an early pass could follow (no event may come)
        return Result(
            requeue_after=min(
                self.settings.interval, early_gap(watch, self.settings.interval, self.early)
            )
        )

    async def _get_set(self, key: ObjectKey) -> KubeObject | None:
        return await get_or_none(self.kube, EPHEMERAL_RUNNER_SET, key)

    def counts(self, runner_set: KubeObject) -> Counts | None:
        """The listener's count of registrations against the set's runners, from the caches;
        ``None`` when there is no runner cache or the listener published no count."""
        if self.runners is None:
            return None
        published = ListenerState.of(runner_set.annotations).registrations
        if published is None:
            return None
        registered, at = published
        runners = [
            obj
            for obj in self.runners.by_owner(runner_set.uid)
            if obj.namespace == runner_set.namespace
        ]
        return Counts(
            registered=registered,
            age=max(self.clock.time() - at, 0.0),
            holding=sum(1 for obj in runners if _holds_registration(obj)),
            runners=len(runners),
        )

    def _cached_reads(self) -> CachedReads | None:
        if self.runners is None or self.pods is None:
            return None
        return CachedReads(self.runners, self.pods)

    async def run(self, runner_set: KubeObject) -> PassReport:
        """One pass over ``runner_set``: planned on the caches first when there are caches (a
        plan that would act is made again on fresh reads, the set's too, and only that one is
        applied: ``reads``), else on fresh reads of the set's runners and pods."""
        model = EphemeralRunnerSet.model_validate(runner_set.raw)
        scale_set_id = model.spec.ephemeral_runner_spec.runner_scale_set_id
        if not scale_set_id:
            return PassReport(failed="no scale set id yet")
        try:
            # held for the whole pass: a client nobody holds may be closed by the next caller
            async with self.github.use(GitHubTarget.of_runner_set(model)) as github:
                return await self._run(runner_set, scale_set_id, github)
        except GitHubAccessError as error:
            # The set's own controller reports unusable settings; nothing to check with.
            return PassReport(failed=f"GitHub settings unusable: {error.reason}")

    async def _run(
        self, runner_set: KubeObject, scale_set_id: int, github: ActionsClient
    ) -> PassReport:
        cached = self._cached_reads()
        if cached is not None:
            planned = await self._plan(runner_set, scale_set_id, github, cached)
            if isinstance(planned, PassReport):
                return planned
            if not planned[0]:
                return PassReport()
            fresh = await self._get_set(runner_set.key)
            if fresh is None or fresh.is_deleting or fresh.uid != runner_set.uid:
                return PassReport()
            if _scale_set_id(fresh) != scale_set_id:
                return PassReport()  # a new scale set: the next pass is its own
            runner_set = fresh
        planned = await self._plan(runner_set, scale_set_id, github, FreshReads(self.kube))
        if isinstance(planned, PassReport):
            return planned
        actions, raw_runners = planned
        done: list[str] = []
        applier = Applier(self.kube, runner_set.namespace)
        names = {obj.uid: name for name, obj in raw_runners.items()}
        for action in actions:
            if isinstance(action, NoteOffline | ForgetOffline):
                await self._note(runner_set.namespace, names.get(action.uid), action)
                continue
            note = action.note
            if isinstance(action, DeletionCapReached):
                self._announce(note, runner_set)
                continue
            try:
                outcome = await applier.apply(action, github)
            except GitHubError as error:
                message = f"registration pass stopped: {_describe(error)}"
                self._announce(Note("RegistrationPassFailed", message, warning=True), runner_set)
                return PassReport(tuple(actions), tuple(done), _describe(error))
            if not outcome.done:
                log.info("registration pass kept", action=action.reason, why=outcome.skipped)
                continue
            done.append(action.reason)
            # a runner's Event is on the runner; a registration's (no runner) on the set
            runner = None if isinstance(action, RemoveOrphan) else action.runner.name
            self._announce(note, raw_runners.get(runner or "", runner_set))
        return PassReport(tuple(actions), tuple(done))

    async def _plan(
        self, runner_set: KubeObject, scale_set_id: int, github: ActionsClient, reads: Reads
    ) -> tuple[list[Action], Mapping[str, KubeObject]] | PassReport:
        """The plan on ``reads`` and the runners read first by name, or the report of a pass
        that GitHub could not give a trustworthy answer to (posted as an Event)."""
        try:
            observed, raw_runners = await self._observe(runner_set, scale_set_id, github, reads)
        except (GitHubError, PassFailed) as error:
            message = f"registration check skipped, nothing deleted: {_describe(error)}"
            self._announce(Note("RegistrationPassFailed", message, warning=True), runner_set)
            return PassReport(failed=_describe(error))
        return plan(observed, self.settings), raw_runners

    async def _note(
        self, namespace: str, name: str | None, action: NoteOffline | ForgetOffline
    ) -> None:
        """Store (or remove) when the runner was first seen offline, on the runner itself. A
        failed write is logged: the next pass notes it again (a replacement only comes later)."""
        if name is None:
            return
        value = None
        if isinstance(action, NoteOffline):
            value = format_kube_time(datetime.fromtimestamp(action.since, UTC))
        body = {"metadata": {"annotations": {keys.OFFLINE_SINCE_ANNOTATION: value}}}
        try:
            await self.kube.patch_merge(EPHEMERAL_RUNNER, ObjectKey(namespace, name), body)
        except NotFound:
            return
        except KubeError as error:
            log.warning(
                "could not store when the runner went offline", runner=name, error=str(error)
            )

    # --- reading -------------------------------------------------------------------------

    async def _observe(
        self, runner_set: KubeObject, scale_set_id: int, github: ActionsClient, reads: Reads
    ) -> tuple[Observed, Mapping[str, KubeObject]]:
        namespace = runner_set.namespace
        prefix = ephemeral_runner_generate_name(runner_set.name)
        now = self.clock.time()
        whole = await reads.runners(runner_set, names_only=False)
        running = await reads.running_pods(namespace)
        views = tuple(_view(obj, obj.name in running) for obj in whole.values())
        offline_since = {
            obj.uid: since for obj in whole.values() if (since := _offline_since(obj)) is not None
        }
        # The views hold what the plan reads; the rest of the pass names runners and posts
        # Events on them: the whole objects go before GitHub's list is decoded beside them.
        before = {name: KubeObject(obj.kind, identity(obj.raw)) for name, obj in whole.items()}
        del whole
        listed = await github.list_runners()
        registrations = tuple(
            Registration(r.id, r.name, r.status == "online", r.busy)
            for r in listed
            if r.name.startswith(prefix)
        )
        listed_ids = frozenset(r.id for r in listed)
        del listed
        after = await reads.runners(runner_set, names_only=True)
        missing: set[int] = set()
        for runner_id in missing_candidates(views, listed_ids):
            if await _lookup(github, runner_id) is None:
                missing.add(runner_id)
        known = frozenset(before) | frozenset(after)
        recorded_missing = missing_ids_by_name(views, frozenset(missing))
        scale_set_of: dict[int, int] = {}
        for registration_id in orphan_candidates(registrations, prefix, known, recorded_missing):
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
            offline_since=offline_since,
        )
        return observed, before

    # --- telling -------------------------------------------------------------------------

    def _announce(self, note: Note, involved: KubeObject) -> None:
        announce(note, involved, decisions=self.metrics.decisions, events=self.events, logger=log)


async def _lookup(github: ActionsClient, runner_id: int) -> RunnerReference | None:
    """The registration by id from the Actions service, or ``None`` when it answers
    RunnerNotFound. Any other error propagates (the pass then deletes nothing)."""
    try:
        return await github.get_runner(runner_id)
    except RunnerNotFound:
        return None


def _scale_set_id(runner_set: KubeObject) -> int:
    model = EphemeralRunnerSet.model_validate(runner_set.raw)
    return model.spec.ephemeral_runner_spec.runner_scale_set_id


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
        job_id=status.job_id,
        workflow_run_id=status.workflow_run_id,
    )


def _offline_since(obj: KubeObject) -> float | None:
    text = obj.annotations.get(keys.OFFLINE_SINCE_ANNOTATION)
    if not text:
        return None
    try:
        return parse_kube_time(text).timestamp()
    except ValueError:
        return None  # unreadable: noted afresh by this pass


def _holds_registration(obj: KubeObject) -> bool:
    """A runner id, not being deleted, not terminal and no recorded job completion: GitHub must
    hold its registration."""
    status = obj.status
    runner_id = status.get("runnerId")
    return (
        type(runner_id) is int
        and runner_id > 0
        and not obj.is_deleting
        and status.get("phase") not in TERMINAL_PHASES
        and not status.get("jobCompletion")
    )


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"
