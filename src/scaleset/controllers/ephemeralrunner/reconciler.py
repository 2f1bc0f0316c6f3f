"""The EphemeralRunner reconciler: read the world, ``plan``, ``apply``, say what happened.

One reconcile runs a few rounds of observe → plan → apply: each applied action hands back the
observed state as it is afterwards (the object the API server answered, or what GitHub said),
so a runner goes from "registered" to "pod created" in one reconcile without re-reading. A round
ends at the first action that brings news ``plan`` must weigh (GitHub feedback); a ``Conflict``
means our read was stale: read again (fresh), plan again, at most five times (L2).

Reads: the runner with a fresh GET (every write is guarded by the resourceVersion read, but a
deletion decided on the runner container's exit, which no write can undo, by its uid alone) —
but a runner new to this process, which the cache shows as just created (no record of a
registration or a pod, not being deleted), is taken from the cache as it is: no write of this
process can be missing from it, every Kubernetes write planned on it is guarded by its
resourceVersion (a Conflict reads it fresh and plans again), its pod is created only after the
guarded write-ahead record, and the one call that is no Kubernetes write, the JIT registration,
is as safe as on a fresh read (the EphemeralRunnerSet does not delete a runner whose JIT request
may be in flight; a runner found being deleted after all, when the Conflict reads it fresh,
has that registration removed by the runner id its JIT Secret holds). One GET fewer per new
runner, and one call fewer in sequence before its pod. The pod
from the owned-pod cache (a cache miss is confirmed with a GET, so "the pod is gone" is never a
stale belief — except for a runner that never had a pod, ``may_have_pod``), the JIT Secret with
a GET (it is not cached) when it can exist (``may_have_secret``). When the runner is read fresh,
the pod and Secret GETs its cached copy predicts go out beside that GET, not after its answer
(``_read_ahead``; decided on the pod cache as it was before the runner's GET; a wrong guess
costs one GET, never a decision: an answer is used only where the read would have been made
anyway). Two reads are skipped
when they cannot tell anything new, so that the periodic resync of idle runners costs the API
server nothing (it cost two GETs per runner per minute: at 600 runners the whole default client
rate): the runner is taken from the cache when the cache still holds the very versions of the
runner and of its pod that the previous reconcile of this key ended on with nothing left to do
(a change to either since then is read fresh — so a pod event never plans on a cached runner —
and a plan made on the cached runner that finds anything to do is made again on a fresh read:
the cache only ever answers "nothing to do"); the JIT Secret is not read while the runner's pod
has not started its runner (``decides_without_secret``: no decision reads it then; a plan that
finds anything to do is made again on a full read, as with the cache), nor once it was seen gone
— or deleted by this process — after the runner started (nothing creates it after the start,
L5). So a runner's JIT Secret is read once from registration to idle, to delete it, however
many pod events its start takes. Nor is a pod patched twice with its job: the job annotations
this process wrote on a pod are shown on it while the cached copy lags behind the patch (a
reconcile queued meanwhile would otherwise write them again). What is remembered is in memory
only: a restart reads once more. (What ``may_have_secret`` remembers — that this process set
out to register a runner — only ever adds a read.)

A reconcile of a runner whose job completed while its pod lives (``runner_priority``: the
work queue serves it first, on a worker of its own) applies what needs no GitHub call — the
grace deadline, the pod's deletion — and ends before the plan's first GitHub call; the key
comes back on the other workers for it. A pod this process deleted is shown as being deleted
(to the plan and to the priority) until the cache shows it so.

Every applied note increments ``scaleset_ephemeral_runner_decisions_total{reason}`` and, when it
has a message, posts an Event on the runner (L9; an Event that cannot be posted never fails a
reconcile).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from scaleset.api import TERMINAL_PHASES, EphemeralRunner
from scaleset.clock import Clock
from scaleset.controllers.decisions import result_of
from scaleset.controllers.ephemeralrunner.actions import (
    GITHUB_CALLS,
    Action,
    AnnotatePod,
    DeletePod,
    DeleteSecret,
    Effect,
    Note,
    RegisterRunner,
)
from scaleset.controllers.ephemeralrunner.apply import Applier
from scaleset.controllers.ephemeralrunner.metrics import RunnerDecisionMetrics
from scaleset.controllers.ephemeralrunner.observed import (
    Observed,
    PodView,
    observe_pod,
    observe_runner,
    observe_secret,
    runner_problems,
)
from scaleset.controllers.ephemeralrunner.plan import RUNNER_POD, decides_without_secret, plan
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.controllers.reads_ahead import ReadsAhead
from scaleset.controllers.rounds import (
    ConflictBudget,
    apply_in_order,
    effects_of,
    get_or_none,
    repeats,
)
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD, SECRET
from scaleset.logs import get_logger
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.informer import Informer

log = get_logger(__name__)

MAX_ROUNDS = 8


@dataclass
class EphemeralRunnerReconciler:
    """Reconciles one EphemeralRunner per call (``reconcile(key)``)."""

    kube: KubeClient
    applier: Applier
    events: EventRecorder
    clock: Clock
    settings: Settings = field(default_factory=Settings)
    metrics: RunnerDecisionMetrics = field(default_factory=RunnerDecisionMetrics.default)
    pods: Informer | None = None
    """The owned-pod cache (None: always GET the pod)."""
    runners: Informer | None = None
    """The EphemeralRunner cache (None: always GET the runner)."""
    _settled: dict[ObjectKey, tuple[str, str]] = field(default_factory=dict)
    """Per key, the resourceVersions (runner, cached pod) a reconcile ended on with nothing
    left to do."""
    _partial: set[ObjectKey] = field(default_factory=set)
    """Keys whose last ``observe`` skipped a read that can only answer "nothing to do": the
    runner taken from the cache, or the JIT Secret of a runner whose pod has not started."""
    _secret_gone: dict[ObjectKey, str] = field(default_factory=dict)
    """Per key, the uid of a started runner whose JIT Secret was seen gone."""
    _seen: set[ObjectKey] = field(default_factory=set)
    """Keys this process has observed a runner of (until it is seen gone): a runner not among
    them, shown by the cache as just created, is taken from the cache (``_new_runner``)."""
    _registering: dict[ObjectKey, str] = field(default_factory=dict)
    """Per key, the uid of a runner this process set out to register: its JIT Secret may exist
    before its status says so (``may_have_secret``)."""
    _annotated: dict[ObjectKey, tuple[str, Mapping[str, str]]] = field(default_factory=dict)
    """Per key, a pod's uid and the job annotations this process wrote on it: shown on that pod
    while the cached copy does not show them yet (``with_own_annotations``)."""
    _pod_deleted: dict[ObjectKey, str] = field(default_factory=dict)
    """Per key, the uid of a pod this process deleted: shown as being deleted, to the plan and
    to the work queue's priority, while the cached copy does not show it yet (a reconcile
    queued meanwhile would delete it, and announce it, again)."""

    async def reconcile(self, key: ObjectKey) -> Result | None:
        urgent = self.priority(key) == ENDS_A_HUNG_RUNNER
        observed = await self.observe(key, cached=True)
        partial = key in self._partial
        self._settled_on(key, None)  # until this reconcile ends with nothing left to do
        emitted: set[Note] = set()
        conflicts = ConflictBudget("ephemeralrunner")
        previous: list[object] | None = None
        for _ in range(MAX_ROUNDS):
            if observed is None:
                return None
            actions = plan(observed, self.clock.now())
            effects = effects_of(actions)
            if repeats(effects, previous, log):
                return Result(requeue=True)
            if effects and partial:
                # a skipped read only answers "nothing to do": anything to do is planned on a
                # full, fresh read
                partial = False
                observed = await self.observe(key)
                continue
            head = before_github(actions) if urgent else None
            if head is not None:
                actions = head
            previous = effects
            if not effects:
                self._settled_on(key, observed)
            try:
                observed, wrote = await apply_in_order(
                    actions,
                    observed,
                    self._apply_one,
                    emitted=emitted,
                    decisions=self.metrics.decisions,
                    events=self.events,
                    logger=log,
                )
            except Conflict as conflict:
                conflicts.spend(conflict)
                observed = await self.observe(key, fresh_pod=True)
                previous = None
                continue
            if head is not None:
                return Result(requeue=True)  # the GitHub call, on a lane that may wait for it
            if not wrote or observed is None:
                return result_of(actions)
        return Result(requeue=True)

    async def observe(
        self, key: ObjectKey, *, fresh_pod: bool = False, cached: bool = False
    ) -> Observed | None:
        """The runner, its pod and its JIT Secret as they are now (None: the runner is gone).
        With ``cached``, the runner comes from the cache when it is the version the last
        reconcile of this key settled on, and the JIT Secret is not read when the plan is the
        same without it (see the module docstring). A runner read fresh has the pod and Secret
        reads its cached copy predicts sent beside its own GET (``_read_ahead``)."""
        obj = self._settled_runner(key) if cached else None
        self._partial.discard(key)
        pod = self._cached_pod(key, fresh_pod=fresh_pod)
        async with contextlib.aclosing(ReadsAhead(self.kube)) as reads:
            if obj is not None:
                self._partial.add(key)
                runner = observe_runner(obj)
            elif cached and (new := self._new_runner(key)) is not None:
                obj, runner = new
            else:
                self._read_ahead(reads, key, pod, fresh_pod=fresh_pod, cached=cached)
                obj = await get_or_none(self.kube, EPHEMERAL_RUNNER, key)
                if obj is None:
                    self._forget(key)
                    return None
                runner = observe_runner(obj)
            self._seen.add(key)
            if pod is None and may_have_pod(runner):
                # the cache again (it may have caught up during the runner's GET), then a GET
                pod = self._cached_pod(key, fresh_pod=fresh_pod)
                if pod is None:
                    pod = await reads.take(POD, key)
            pod_view = self._with_own_writes(key, observe_pod(pod)) if pod is not None else None
            if pod_view is None:
                self._pod_deleted.pop(key, None)
            secret = None
            match self._secret_read(key, obj.uid, runner, pod_view, cached=cached):
                case "skip":
                    self._partial.add(key)
                case "read":
                    secret = await reads.take(SECRET, key)
                    if secret is None and runner.status.runner_started_at is not None:
                        self._secret_gone[key] = obj.uid
                    else:
                        self._secret_gone.pop(key, None)
        return Observed(
            runner=runner,
            obj=obj,
            pod=pod_view,
            secret=observe_secret(secret) if secret is not None else None,
            problems=runner_problems(runner),
            feedback=self.applier.standing_feedback(runner.metadata.namespace),
            settings=self.settings,
        )

    def _read_ahead(
        self,
        reads: ReadsAhead,
        key: ObjectKey,
        cached_pod: KubeObject | None,
        *,
        fresh_pod: bool,
        cached: bool,
    ) -> None:
        """Start, beside the runner's GET, the reads its cached copy says ``observe`` will make
        after it: the pod's GET when it is read fresh whatever the cache holds (``fresh_pod``,
        or no pod cache; a pod missing from the cache is looked for there again after the
        runner's GET, which it often reaches meanwhile), and the JIT Secret's — only when its
        decision does not wait for a pod still to be read (with ``cached``, a pod whose runner
        has not started means no read). Both objects change only by this reconciler's own
        writes (the Secret) or in ways its decisions take in either order (the pod: the
        kubelet's status, a deletion), so reading them beside the runner instead of after it
        changes no decision; a wrong guess costs a GET, not a decision."""
        guess = self.runners.get(key) if self.runners is not None else None
        if guess is None:
            return
        runner = observe_runner(guess)
        reads_pod = cached_pod is None and may_have_pod(runner)
        if reads_pod and (fresh_pod or self.pods is None):
            reads.start(POD, key)
        if cached and reads_pod:
            return  # the Secret's decision waits for that pod
        pod_view = observe_pod(cached_pod) if cached_pod is not None else None
        if self._secret_read(key, guess.uid, runner, pod_view, cached=cached) == "read":
            reads.start(SECRET, key)

    def _secret_read(
        self,
        key: ObjectKey,
        uid: str,
        runner: EphemeralRunner,
        pod: PodView | None,
        *,
        cached: bool,
    ) -> Literal["none", "skip", "read"]:
        """Whether ``observe`` reads the JIT Secret: ``none`` when it cannot exist (never made,
        or seen gone after the runner started), ``skip`` when the plan is the same without it
        (``cached`` only), else ``read``."""
        started = runner.status.runner_started_at is not None
        if started and self._secret_gone.get(key) == uid:
            return "none"
        if not may_have_secret(runner, registering=self._registering.get(key) == uid):
            return "none"
        if cached and decides_without_secret(runner, pod):
            return "skip"
        return "read"

    def _forget(self, key: ObjectKey) -> None:
        """Drop what this process keeps of a runner that is gone."""
        self._seen.discard(key)
        self._secret_gone.pop(key, None)
        self._registering.pop(key, None)
        self._annotated.pop(key, None)
        self._pod_deleted.pop(key, None)

    def _settled_runner(self, key: ObjectKey) -> KubeObject | None:
        """The cached runner, when it and the cached pod are the versions the last reconcile
        settled on."""
        versions = self._settled.get(key)
        cached = self.runners.get(key) if self.runners is not None else None
        if versions is None or cached is None:
            return None
        if (cached.resource_version, self._cached_pod_version(key)) != versions:
            return None
        return cached

    def _new_runner(self, key: ObjectKey) -> tuple[KubeObject, EphemeralRunner] | None:
        """The cached runner, parsed, when it is new: this process has not observed it yet,
        nor set out to register it, and the cache shows it as it was created — no record of a
        registration or a pod (``may_have_pod``), not being deleted. Nothing about it can be
        this process's own write the cache has not caught up with, and what is planned on it
        is carried out (see the module docstring)."""
        if self.runners is None or key in self._seen or key in self._registering:
            return None
        cached = self.runners.get(key)
        if cached is None or cached.is_deleting:
            return None
        runner = observe_runner(cached)
        return None if may_have_pod(runner) else (cached, runner)

    def _cached_pod(self, key: ObjectKey, *, fresh_pod: bool = False) -> KubeObject | None:
        """The runner's pod as the pod cache holds it (None: not there, no cache, or
        ``fresh_pod``: the caller reads it fresh)."""
        return None if fresh_pod or self.pods is None else self.pods.get(key)

    def _cached_pod_version(self, key: ObjectKey) -> str:
        pod = self._cached_pod(key)
        return pod.resource_version if pod is not None else ""

    def _settled_on(self, key: ObjectKey, observed: Observed | None) -> None:
        """Remember (or, with None, forget) the versions a reconcile ended on with nothing to
        do: the runner's and the pod's as planned on — for what this process wrote, the
        versions the API server answered, which the caches show once their watches deliver
        the writes (not the pod cache's version at this moment: a pod created a moment ago is
        not in it yet, and its arrival would cost the next reconcile a GET of the runner)."""
        if observed is None:
            self._settled.pop(key, None)
        else:
            pod = observed.pod.resource_version if observed.pod is not None else ""
            self._settled[key] = (observed.obj.resource_version, pod)

    async def _apply_one(self, action: Effect, observed: Observed) -> Observed | None:
        """One action through the applier, with what this process keeps of it: a runner being
        registered, a started runner's JIT Secret deleted for good."""
        if isinstance(action, RegisterRunner):
            key = ObjectKey(observed.runner.metadata.namespace, observed.name)
            self._registering[key] = observed.obj.uid
        updated = await self.applier.apply(action, observed)
        if updated is not None and isinstance(action, DeleteSecret) and updated.secret is None:
            self._deleted_secret(updated)
        if updated is not None and isinstance(action, AnnotatePod) and updated.pod is not None:
            key = ObjectKey(observed.runner.metadata.namespace, observed.name)
            self._annotated[key] = (updated.pod.uid, updated.pod.job_annotations)
        if isinstance(action, DeletePod):
            key = ObjectKey(observed.runner.metadata.namespace, observed.name)
            self._pod_deleted[key] = action.uid
        return updated

    def _with_own_writes(self, key: ObjectKey, pod: PodView) -> PodView:
        """The pod as read, showing what this process wrote on it that the read may not show
        yet: its deletion (``_pod_deleted``) and its job annotations
        (``_with_own_annotations``)."""
        deleted = self._pod_deleted.get(key)
        if deleted is not None and (deleted != pod.uid or pod.deleting):
            self._pod_deleted.pop(key, None)  # the read shows it (or shows another pod)
        elif deleted is not None:
            pod = dataclasses.replace(pod, deleting=True)
        return self._with_own_annotations(key, pod)

    def priority(self, key: ObjectKey) -> int:
        """``runner_priority`` of the key as cached, with a pod this process deleted shown as
        being deleted (the work queue's priority, and what a reconcile of the key checks)."""
        runner = self.runners.get(key) if self.runners is not None else None
        pod = self.pods.get(key) if self.pods is not None else None
        deleted = pod is not None and self._pod_deleted.get(key) == pod.uid
        return runner_priority(runner, pod, pod_deleted=deleted)

    def _with_own_annotations(self, key: ObjectKey, pod: PodView) -> PodView:
        """The pod as read, showing the job annotations this process wrote on it where the read
        does not show them yet: the owned-pod cache follows a watch, and a reconcile queued
        while the patch was on its way (a pod or runner event) would otherwise patch again —
        a write more per job. What the read shows wins; another pod (a new uid) shows only
        its own."""
        written = self._annotated.get(key)
        if written is None or written[0] != pod.uid:
            return pod
        return dataclasses.replace(pod, job_annotations={**written[1], **pod.job_annotations})

    def _deleted_secret(self, observed: Observed) -> None:
        """This process deleted the JIT Secret of a started runner: it is gone for good (L5),
        so no later reconcile reads it to learn that."""
        if observed.runner.status.runner_started_at is not None:
            key = ObjectKey(observed.runner.metadata.namespace, observed.name)
            self._secret_gone[key] = observed.obj.uid


ENDS_A_HUNG_RUNNER = 2
FREES_A_SLOT = 1


def runner_priority(
    runner: KubeObject | None, pod: KubeObject | None, *, pod_deleted: bool = False
) -> int:
    """How urgent a reconcile of this runner (as cached; ``pod_deleted``: this process deleted
    the cached pod) is, for the work queue's priorities.
    Under load the queue holds mostly new runners, and every second a hung runner waits behind
    them counts against L6's bound (grace + one pass):

    - ``ENDS_A_HUNG_RUNNER``: a job completion is recorded and the runner's pod is alive — its
      grace deadline is to be stored, or is due, or the runner is being deleted; what comes
      next needs no GitHub call (the status write of the deadline, the pod's deletion), and a
      reconcile of such a runner stops before any GitHub call (``before_github``);
    - ``FREES_A_SLOT``: being deleted, terminal, its pod ended (the runner exited: it is
      replaced), or its job completed and its pod is going or gone — work that often asks
      GitHub first (the registration's removal);
    - 0: the rest, creations above all."""
    if runner is None:
        return 0
    status = runner.status
    ended = pod is not None and pod.status.get("phase") in ("Succeeded", "Failed")
    alive = pod is not None and not pod.is_deleting and not pod_deleted and not ended
    if status.get("jobCompletion"):
        return ENDS_A_HUNG_RUNNER if alive else FREES_A_SLOT
    if runner.is_deleting or status.get("phase") in TERMINAL_PHASES:
        return FREES_A_SLOT
    return FREES_A_SLOT if ended else 0


def before_github(actions: list[Action]) -> list[Action] | None:
    """For a reconcile of an urgent runner (``ENDS_A_HUNG_RUNNER``): the actions before the
    plan's first GitHub call, when any of them writes (None: nothing to cut — the plan has no
    GitHub call, or starts with one). The reconcile applies them and ends; the key comes back
    with its new priority (the pod going: ``FREES_A_SLOT``) for the call. So the worker kept
    for hung runners never waits on GitHub: during an outage the registration's removal can
    take every retry, and the next completion would wait behind it."""
    for index, action in enumerate(actions):
        if isinstance(action, GITHUB_CALLS):
            head = actions[:index]
            return head if effects_of(head) else None
    return None


def may_have_pod(runner: EphemeralRunner) -> bool:
    """Whether a pod of this runner can exist, so that a cache miss needs a GET to confirm.

    Every pod creation follows the status write that is its write-ahead record (``runnerId`` and
    the ``RunnerPod`` condition, guarded by the resourceVersion read), and ARC writes
    ``runnerId`` before it creates its pod: a runner with neither, and no phase, never had a
    pod. Its "no pod" costs no GET then (one per new runner at scale-up); a pod made under its
    name by anybody else answers our create with AlreadyExists, which reads it.
    """
    status = runner.status
    if status.phase or status.runner_id:
        return True
    return any(condition.type == RUNNER_POD for condition in status.conditions)


def may_have_secret(runner: EphemeralRunner, *, registering: bool) -> bool:
    """Whether the runner's JIT Secret can exist, so that it must be read.

    The Secret is created by the registration, which this process records before it starts
    (``registering``) and the status records after it (``runnerId``, with the write-ahead of the
    first pod). A runner with no such record, not being deleted, has no Secret of ours — unless
    a process that registered it died before the status write: then generatejitconfig answers
    that the name is taken, and the plan removes that registration (its JIT config never ran:
    no pod without the write-ahead) and registers again. A runner being deleted always reads
    it (its registration is removed by the runner id the Secret holds). One GET fewer per new
    runner at scale-up.
    """
    if registering or may_have_pod(runner):
        return True
    return runner.metadata.deletion_timestamp is not None
