"""One reconcile of an AutoscalingRunnerSet: observe, then plan and apply until the plan has no
effect left, then say when to look again.

Observe: the scale set from the controller's cache when a plan on it only waits (the periodic
resync of a settled scale set reads nothing); otherwise with a fresh GET before anything is
decided (its annotations carry the GitHub id, so a cache that may be behind must not decide a
registration); its runner sets, listeners and ARC's controller pods from the caches (the chart
objects are read by an action, at the very end of a deletion). Then rounds:
``plan`` → the first effect → ``apply`` → its result folded into ``Observed`` → ``plan``
again (at most ``MAX_ROUNDS``). Each effect that did what it says is counted and, when its note
has a message, posted as an Event on the scale set (L9). The last plan's ``Wait`` becomes the
``Result``.

Memory kept across reconciles is a cache: what GitHub last said about each scale set (so it is
not asked on every pass) and the count of consecutive GitHub failures (back-off). A restart
forgets both and simply asks GitHub once more.
"""

from __future__ import annotations

from scaleset.clock import Clock
from scaleset.controllers.autoscalingrunnerset.actions import (
    Action,
    Effect,
    Note,
    Report,
    Wait,
)
from scaleset.controllers.autoscalingrunnerset.apply import Applier
from scaleset.controllers.autoscalingrunnerset.arc_detection import arc_controllers
from scaleset.controllers.autoscalingrunnerset.metrics import ScaleSetDecisionMetrics
from scaleset.controllers.autoscalingrunnerset.observed import (
    ListenerView,
    Observed,
    RunnerSetView,
    Verified,
    controls,
    points_at,
    runner_set_view,
    scale_set_view,
)
from scaleset.controllers.autoscalingrunnerset.plan import plan
from scaleset.controllers.autoscalingrunnerset.settings import Settings
from scaleset.controllers.decisions import acts, announce, notes_of
from scaleset.controllers.rounds import get_or_none
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET
from scaleset.logs import get_logger
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.informer import Informer

log = get_logger(__name__)

MAX_ROUNDS = 30
"""Effects per reconcile before giving up for this pass (a plan that never settles is a bug;
it is logged and retried with back-off instead of spinning)."""


class AutoscalingRunnerSetReconciler:
    """Reconciles AutoscalingRunnerSets; the caches are set by ``setup.build``."""

    def __init__(
        self,
        kube: KubeClient,
        applier: Applier,
        events: EventRecorder,
        clock: Clock,
        settings: Settings,
        metrics: ScaleSetDecisionMetrics | None = None,
    ) -> None:
        self.kube = kube
        self.applier = applier
        self.events = events
        self.clock = clock
        self.settings = settings
        self.metrics = metrics or ScaleSetDecisionMetrics.default()
        self.scale_sets: Informer | None = None
        """The AutoscalingRunnerSet cache (None: always GET)."""
        self.runner_sets: Informer | None = None
        self.listeners: Informer | None = None
        self.controller_pods: Informer | None = None
        self._verified: dict[ObjectKey, Verified] = {}
        self._failures: dict[ObjectKey, int] = {}

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cached = self.scale_sets.get(key) if self.scale_sets is not None else None
        if cached is not None:
            observed = await self.observe(cached)
            actions = plan(observed, self.clock.now())
            if not acts(actions):
                self._finish(observed, actions)
                return _result(actions)
        obj = await get_or_none(self.kube, AUTOSCALING_RUNNER_SET, key)
        if obj is None:
            self.forget(key)
            return None
        observed = await self.observe(obj)
        try:
            return await self._rounds(observed)
        except Conflict:
            log.info("conflict: deciding again on a fresh read")
            return Result(requeue=True)

    # --- observe ----------------------------------------------------------------------------

    async def observe(self, obj: KubeObject) -> Observed:
        scale_set = scale_set_view(obj, self.settings.policy)
        runner_sets: list[RunnerSetView] = []
        name_holder: RunnerSetView | None = None
        if self.runner_sets is not None:
            owned = self.runner_sets.by_owner(obj.uid)
            runner_sets = [runner_set_view(item) for item in owned if controls(item, obj)]
            holder = self.runner_sets.get(ObjectKey(obj.namespace, obj.name))
            if holder is not None and not controls(holder, obj):
                name_holder = runner_set_view(holder)
        listeners: list[ListenerView] = []
        if self.listeners is not None:
            listeners = [
                ListenerView(item)
                for item in self.listeners.list(self.settings.controller_namespace)
                if points_at(item, obj)
            ]
        pods: tuple[str, ...] = ()
        if self.controller_pods is not None:
            pods = arc_controllers(self.controller_pods.list(), self.settings.listener_image)
        return Observed(
            scale_set=scale_set,
            settings=self.settings,
            runner_sets=tuple(sorted(runner_sets, key=lambda rs: rs.name)),
            name_holder=name_holder,
            listeners=tuple(sorted(listeners, key=lambda item: item.name)),
            arc_controllers=pods,
            verified=self._verified.get(obj.key),
            failures=self._failures.get(obj.key, 0),
        )

    # --- plan and apply ---------------------------------------------------------------------

    async def _rounds(self, observed: Observed) -> Result | None:
        key = observed.scale_set.obj.key
        previous: Effect | None = None
        for _ in range(MAX_ROUNDS):
            actions = plan(observed, self.clock.now())
            effect = _first_effect(actions)
            if effect is None:
                self._finish(observed, actions)
                return _result(actions)
            if effect == previous:
                # the same write again: the server kept something else than was written (a
                # field an old CRD does not declare is pruned); retrying it now cannot help
                log.warning("a write did not take", action=type(effect).__name__)
                return Result(requeue_after=self.settings.retry_max)
            previous = effect
            applied = await self.applier.apply(effect, observed)
            observed = applied.observed
            self._remember(key, observed)
            if applied.done:
                self._announce(observed.scale_set.obj, notes_of(effect))
        log.error("no settled plan", rounds=MAX_ROUNDS)
        return Result(requeue=True)

    def _finish(self, observed: Observed, actions: list[Action]) -> None:
        key = observed.scale_set.obj.key
        for action in actions:
            if isinstance(action, Report):
                self._announce(observed.scale_set.obj, (action.note,))
        if observed.feedback.problem is not None:
            self._failures[key] = observed.failures + 1
        else:
            self._failures.pop(key, None)

    def _remember(self, key: ObjectKey, observed: Observed) -> None:
        """Keep GitHub's latest answer (``plan`` uses it only while the annotated id is the one
        it describes and the spec generation is the one it was read for)."""
        if observed.verified is None:
            self._verified.pop(key, None)
        else:
            self._verified[key] = observed.verified

    def forget(self, key: ObjectKey) -> None:
        self._verified.pop(key, None)
        self._failures.pop(key, None)

    def _announce(self, involved: KubeObject, notes: tuple[Note, ...]) -> None:
        for note in notes:
            announce(
                note, involved, decisions=self.metrics.decisions, events=self.events, logger=log
            )


def _first_effect(actions: list[Action]) -> Effect | None:
    for action in actions:
        if not isinstance(action, Report | Wait):
            return action
    return None


def _result(actions: list[Action]) -> Result | None:
    wait = next((action for action in actions if isinstance(action, Wait)), None)
    if wait is None or wait.seconds is None:
        return None
    return Result(requeue_after=wait.seconds)
