"""The AutoscalingListener reconciler: read the world, ``plan``, ``apply``, say what happened.

One reconcile runs a few rounds of observe → plan → apply; after a round that changed something
the world is read again (fresh GETs) and planned again, so a new listener goes from "no
finalizer" to "pod created" in one reconcile. A ``Conflict`` (a stale read, or a create that
raced) means: read again, plan again, at most five times (L2). A round that would repeat the
same writes stops with a backed-off requeue instead of looping.

Reads: the listener, its pod, ServiceAccount, Role, RoleBinding, config and proxy Secrets from
the controller's caches (a miss confirmed with a GET, except for the two Secrets, whose cache is
watched in the controller namespace alone and trusted for an absence: the proxy Secret exists
only with a proxy); a change to any of them queues the listener, so a deleted or edited one is
put back at once. The inputs of its config (``inputs``: the scale set's GitHub Secret, proxy
credentials and CA ConfigMap, in the scale set's namespace, where the controller caches no
Secret of its own): the Secrets from a watch of each one by name (``input_secrets``, a
``runtime.named_watches.NamedWatches``: a rotated credential queues the listener at once), a
GET where that watch does not hold them (not listed yet, or refused: then the periodic resync's
read is how a rotation is seen); the CA ConfigMap with a GET. The caches only confirm that there
is nothing to do: a plan that would act is made again on a fresh read of everything first, so no
write is decided on a cache that may be behind (the periodic resync of a settled listener sends
no request). The AutoscalingRunnerSet's existence comes from the shared cache, a miss confirmed
with a GET.
Every applied note increments ``scaleset_autoscaling_listener_decisions_total{reason}`` and,
when it has a message, posts an Event on the listener (L9; an Event never fails a reconcile).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scaleset.api import AutoscalingListener
from scaleset.api.naming import (
    listener_config_secret_name,
    listener_proxy_secret_name,
)
from scaleset.clock import Clock
from scaleset.controllers.autoscalinglistener.actions import (
    Note,
)
from scaleset.controllers.autoscalinglistener.apply import Applier
from scaleset.controllers.autoscalinglistener.inputs import read_inputs, secret_keys
from scaleset.controllers.autoscalinglistener.metrics import ListenerDecisionMetrics
from scaleset.controllers.autoscalinglistener.observed import (
    Feedback,
    Observed,
    observe_listener,
    observe_object,
    observe_pod,
    observe_secret,
)
from scaleset.controllers.autoscalinglistener.plan import plan
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.controllers.decisions import acts, result_of
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
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    Kind,
)
from scaleset.logs import get_logger
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.informer import Informer
from scaleset.runtime.named_watches import NamedWatches

log = get_logger(__name__)

MAX_ROUNDS = 7
"""Rounds of one reconcile (the first may only confirm, from the caches, that one must act)."""


@dataclass
class AutoscalingListenerReconciler:
    """Reconciles one AutoscalingListener per call (``reconcile(key)``)."""

    kube: KubeClient
    applier: Applier
    events: EventRecorder
    clock: Clock
    settings: Settings = field(default_factory=Settings)
    metrics: ListenerDecisionMetrics = field(default_factory=ListenerDecisionMetrics.default)
    scale_sets: Informer | None = None
    """The AutoscalingRunnerSet cache (None: always GET)."""
    listeners: Informer | None = None
    """The AutoscalingListener cache (None: always GET)."""
    pods: Informer | None = None
    """The listener pods' cache (None: always GET)."""
    service_accounts: Informer | None = None
    """The listener ServiceAccounts' cache (None: always GET)."""
    roles: Informer | None = None
    """The listener Roles' cache (None: always GET)."""
    role_bindings: Informer | None = None
    """The listener RoleBindings' cache (None: always GET)."""
    secrets: Informer | None = None
    """The cache of the listeners' config and proxy Secrets (None: always GET)."""
    input_secrets: NamedWatches | None = None
    """Watches of the Secrets each listener's config is made from, in its scale set's
    namespace (``inputs.secret_keys``; None: always GET)."""
    enqueue: Callable[[ObjectKey], None] = lambda key: None
    """Queue a listener (a watched input Secret changed)."""

    async def reconcile(self, key: ObjectKey) -> Result | None:
        seen: list[Observed | None] = []
        try:
            return await self._rounds(key, seen)
        finally:
            if seen:
                self.metrics.listener_state(key, seen[-1])

    async def _rounds(self, key: ObjectKey, seen: list[Observed | None]) -> Result | None:
        """Observe, plan, apply until nothing is left to write; ``seen`` gets each state read."""
        cached = True
        observed = await self.observe(key, cached=True)
        emitted: set[Note] = set()
        conflicts = ConflictBudget("autoscalinglistener")
        previous: list[object] | None = None
        for _ in range(MAX_ROUNDS):
            seen.append(observed)
            if observed is None:
                return None
            actions = plan(observed, self.clock.now())
            if cached and acts(actions):
                # decide what to do on what the server has now, not on a cache that may be behind
                cached = False
                observed = await self.observe(key)
                continue
            cached = False
            effects = effects_of(actions)
            if repeats(effects, previous, log):
                return Result(requeue=True)
            previous = effects
            try:
                updated, applied = await apply_in_order(
                    actions,
                    observed,
                    self.applier.apply,
                    emitted=emitted,
                    decisions=self.metrics.decisions,
                    events=self.events,
                    logger=log,
                )
            except Conflict as conflict:
                conflicts.spend(conflict)
                observed = await self.observe(key)
                previous = None
                continue
            if not applied or updated is None:
                return None if updated is None else result_of(actions)
            observed = await self.observe(key, feedback=updated.feedback)
        seen.append(observed)
        return Result(requeue=True)

    async def observe(
        self, key: ObjectKey, *, feedback: Sequence[Feedback] = (), cached: bool = False
    ) -> Observed | None:
        """The listener and its objects as they are now (None: the listener is gone); with
        ``cached``, the listener's own objects as the caches have them."""
        obj = await self._read(self.listeners if cached else None, AUTOSCALING_LISTENER, key)
        if obj is None:
            self._follow_inputs(key, None)
            return None
        listener, problems = observe_listener(obj, self.settings.policy)
        self._follow_inputs(key, None if listener.metadata.is_deleting else listener)
        namespace = listener.metadata.namespace
        name = listener.metadata.name
        scale_set_namespace = listener.spec.autoscaling_runner_set_namespace
        rbac_key = ObjectKey(scale_set_namespace, name) if scale_set_namespace else None
        config_key = ObjectKey(namespace, listener_config_secret_name(name))
        proxy_key = ObjectKey(namespace, listener_proxy_secret_name(name))
        # the Secrets' cache is trusted for a miss too: the proxy Secret is absent unless a
        # proxy is set, and a pass that would write reads everything fresh first
        secrets = self.secrets if cached else None
        pod, account, config, proxy, role, binding = await asyncio.gather(
            self._read(self.pods if cached else None, POD, key),
            self._read(self.service_accounts if cached else None, SERVICE_ACCOUNT, key),
            self._read(secrets, SECRET, config_key, miss_is_absence=True),
            self._read(secrets, SECRET, proxy_key, miss_is_absence=True),
            self._read(self.roles if cached else None, ROLE, rbac_key),
            self._read(self.role_bindings if cached else None, ROLE_BINDING, rbac_key),
        )
        observed = Observed(
            listener=listener,
            obj=obj,
            settings=self.settings,
            problems=problems,
            service_account=observe_object(account) if account is not None else None,
            role=observe_object(role) if role is not None else None,
            role_binding=observe_object(binding) if binding is not None else None,
            config_secret=(
                observe_secret(config, obj.uid, config=True) if config is not None else None
            ),
            proxy_secret=(
                observe_secret(proxy, obj.uid, config=False) if proxy is not None else None
            ),
            pod=observe_pod(pod) if pod is not None else None,
            feedback=tuple(feedback),
        )
        if listener.metadata.is_deleting or problems:
            return observed
        if not await self._scale_set_exists(observed):
            return dataclasses.replace(observed, scale_set_exists=False)
        watched = self.input_secrets.holds if cached and self.input_secrets else None
        inputs = await read_inputs(self.kube, listener, watched)
        return dataclasses.replace(observed, inputs=inputs)

    def _follow_inputs(self, key: ObjectKey, listener: AutoscalingListener | None) -> None:
        """Watch the Secrets ``listener``'s config reads (none for a listener gone or going)."""
        if self.input_secrets is None:
            return
        if listener is None:
            self.input_secrets.forget(key)
        else:
            self.input_secrets.follow(key, secret_keys(listener), lambda: self.enqueue(key))

    async def _scale_set_exists(self, observed: Observed) -> bool:
        spec = observed.listener.spec
        key = ObjectKey(spec.autoscaling_runner_set_namespace, spec.autoscaling_runner_set_name)
        return await self._read(self.scale_sets, AUTOSCALING_RUNNER_SET, key) is not None

    async def _read(
        self,
        cache: Informer | None,
        kind: Kind,
        key: ObjectKey | None,
        *,
        miss_is_absence: bool = False,
    ) -> KubeObject | None:
        """The object at ``key`` (None: absent, or no ``key``): from ``cache`` when it has it,
        else from a fresh GET; with ``miss_is_absence`` a cache miss is taken as the object's
        absence, with no GET. Without a ``cache`` (none given, or a fresh read), always a GET."""
        if key is None:
            return None
        if cache is not None:
            obj = cache.get(key)
            if obj is not None or miss_is_absence:
                return obj
        return await get_or_none(self.kube, kind, key)
