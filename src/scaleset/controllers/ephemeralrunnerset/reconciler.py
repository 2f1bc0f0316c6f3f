"""One reconcile of an EphemeralRunnerSet: observe (cache + ledger), ``plan``, ``apply``
(``setup`` registers it on the manager).

The set and its runners are read from the informer cache. Before a pass creates or removes
runners it reads the set itself fresh (a GET): a listener patch the cache has not shown yet
would otherwise be acted on late (runners created for a count already lowered). Runners the
ledger says were created long ago and never appeared in the cache are checked with a GET, so a
lost watch event neither stalls scaling nor leaves a phantom counted forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from scaleset.api import keys
from scaleset.clock import Clock
from scaleset.controllers.ephemeralrunnerset.actions import (
    Action,
    CreateRunner,
    DeferStatus,
    RemoveRunner,
    ScaleDown,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunnerset.apply import Applier, PassOutcome
from scaleset.controllers.ephemeralrunnerset.ledger import Ledger
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics, default_metrics
from scaleset.controllers.ephemeralrunnerset.observed import Observed, runner_set_view
from scaleset.controllers.ephemeralrunnerset.plan import plan
from scaleset.controllers.ephemeralrunnerset.proxy_secret import ProxyState, read_proxy
from scaleset.controllers.ephemeralrunnerset.runner_body import expected_runner_spec
from scaleset.controllers.ephemeralrunnerset.settings import Settings
from scaleset.controllers.ephemeralrunnerset.view_memo import RunnerViewMemo
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.rounds import get_or_none
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import KubeError, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from scaleset.logs import get_logger
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.informer_set import InformerSet
from scaleset.runtime.store import InformerEvent

log = get_logger(__name__)


class EphemeralRunnerSetReconciler:
    """Reconciles EphemeralRunnerSets (one per key at a time; any number of workers)."""

    def __init__(
        self,
        *,
        client: KubeClient,
        informers: InformerSet,
        events: EventRecorder,
        github: GitHubClients,
        clock: Clock,
        settings: Settings | None = None,
        metrics: RunnerSetMetrics | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.settings = settings or Settings()
        self.metrics = metrics or default_metrics()
        self.sets = informers.informer(EPHEMERAL_RUNNER_SET)
        self.runners = informers.informer(EPHEMERAL_RUNNER)
        self.scale_sets = informers.informer(AUTOSCALING_RUNNER_SET)
        self.github = github
        self.ledger = Ledger(clock)
        self.applier = Applier(
            client,
            github=github,
            events=events,
            ledger=self.ledger,
            clock=clock,
            metrics=self.metrics,
            settings=self.settings.apply,
        )
        self.views = RunnerViewMemo(self.settings.apply.jit_settle_seconds)
        self._uids: dict[ObjectKey, str] = {}
        self._status_written: dict[ObjectKey, datetime] = {}
        self.last_outcome: dict[ObjectKey, PassOutcome] = {}

    def observe_runner(self, event: InformerEvent) -> None:
        """Informer handler for EphemeralRunners (record only, never block)."""
        self.ledger.observe(event)

    # ------------------------------------------------------------------------ reconcile

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cached = self.sets.get(key)
        if cached is None:
            uid = self._uids.pop(key, None)
            if uid is not None:
                self.ledger.forget(uid)
                self.views.forget(uid)
            self.last_outcome.pop(key, None)
            self._status_written.pop(key, None)
            return None
        replaced = self._uids.get(key)
        if replaced is not None and replaced != cached.uid:
            self.views.forget(replaced)  # the set was deleted and created again between passes
        self._uids[key] = cached.uid
        await self._verify_unseen(cached)
        now = self.clock.now()
        runner_set = cached
        proxy = await read_proxy(self.client, runner_set)
        observed, children = self.observe(runner_set, now, proxy)
        actions = plan(observed, now, self.settings.plan)
        if _changes_runners(actions):
            fresh = await get_or_none(self.client, EPHEMERAL_RUNNER_SET, key)
            if fresh is None:
                return None
            if fresh.resource_version != cached.resource_version:
                runner_set = fresh
                proxy = await read_proxy(self.client, runner_set)
                observed, children = self.observe(runner_set, now, proxy)
                actions = plan(observed, now, self.settings.plan)
        outcome = await self.applier.apply(runner_set, actions, runners=children)
        self.last_outcome[key] = outcome
        written = next((a for a in actions if isinstance(a, WriteStatus)), None)
        if written is None or outcome.status_written:
            self.ledger.persisted_finished(runner_set.uid, observed.seen_finished)
        if outcome.status_written:
            self._status_written[key] = now
        shown = next((a for a in actions if isinstance(a, (WriteStatus, DeferStatus))), None)
        status = shown.status if shown is not None else observed.runner_set.status
        self.metrics.set_counts(
            runner_set.namespace,
            runner_set.labels.get(keys.SCALE_SET_NAME_LABEL, runner_set.name),
            _config_url(runner_set),
            status,
        )
        return outcome.result()

    def observe(
        self, runner_set: KubeObject, now: datetime, proxy: ProxyState | None = None
    ) -> tuple[Observed, dict[str, KubeObject]]:
        """The plan's input from the cache, the ledger and the proxy Secret read (and the set's
        runners by name)."""
        children, views = self.views.runners(
            runner_set.uid,
            self.runners.by_owner(runner_set.uid),
            expected_spec=expected_runner_spec(runner_set),
            now=now,
        )
        live = {view.name for view in views if view.live}
        status, digest = self.views.runner_set(runner_set)
        observed = Observed(
            runner_set=runner_set_view(
                runner_set,
                status=status,
                max_runners=self._max_runners(runner_set),
                runner_spec_hash=digest,
            ),
            runners=views,
            phantoms=self.ledger.phantoms(runner_set.uid, set(children)),
            in_flight_deletes=self.ledger.in_flight_deletes(runner_set.uid, live),
            seen_finished=self.ledger.seen_finished(runner_set.uid),
            proxy=proxy,
            refused=self._refused(runner_set),
            status_written_at=self._status_written.get(runner_set.key),
            accounted=self.ledger.accounted(runner_set.uid),
        )
        return observed, children

    def _refused(self, runner_set: KubeObject) -> tuple[str, str] | None:
        """The GitHub access's refusal of the runner spec's config URL (reason, message)."""
        refusal = self.github.refusal(_config_url(runner_set), "spec.ephemeralRunnerSpec.")
        if refusal is None:
            return None
        return refusal.reason, f"{refusal.field}: {refusal.message}"

    def _max_runners(self, runner_set: KubeObject) -> int | None:
        owner = runner_set.controller_owner
        if owner is None or owner.kind != "AutoscalingRunnerSet":
            return None
        scale_set = self.scale_sets.get(ObjectKey(runner_set.namespace, owner.name))
        if scale_set is None:
            return None
        value = scale_set.spec.get("maxRunners")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    async def _verify_unseen(self, runner_set: KubeObject) -> None:
        """Runners created long ago that the cache never showed: GET them; drop the gone."""
        for name in self.ledger.stale(runner_set.uid, self.settings.verify_unseen_after):
            try:
                await self.client.get(EPHEMERAL_RUNNER, ObjectKey(runner_set.namespace, name))
            except NotFound:
                self.ledger.confirm_gone(runner_set.uid, name)
            except KubeError as error:
                log.info("could not check an unseen runner", runner=name, error=str(error))


def _changes_runners(actions: list[Action]) -> bool:
    return any(isinstance(a, (CreateRunner, ScaleDown, RemoveRunner)) for a in actions)


def _config_url(runner_set: KubeObject) -> str:
    spec: Mapping[str, Any] = expected_runner_spec(runner_set)
    url = spec.get("githubConfigUrl")
    return url if isinstance(url, str) else ""
