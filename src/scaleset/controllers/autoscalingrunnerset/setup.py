"""Registers the AutoscalingRunnerSet controller on the manager: the reconciler, the caches it
reads (its EphemeralRunnerSets by owner, the AutoscalingListeners in the controller namespace by
back-reference, the controller-chart pods for ARC detection), its GitHub clients, its settings.
"""

from __future__ import annotations

from collections.abc import Iterable

from scaleset.controllers.autoscalingrunnerset.apply import Applier
from scaleset.controllers.autoscalingrunnerset.arc_detection import (
    CONTROLLER_POD_SELECTOR,
    controller_pod_record,
    is_arc_controller,
)
from scaleset.controllers.autoscalingrunnerset.metrics import ScaleSetDecisionMetrics
from scaleset.controllers.autoscalingrunnerset.reconciler import AutoscalingRunnerSetReconciler
from scaleset.controllers.autoscalingrunnerset.settings import Settings
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.setup import ProcessContext, github_clients
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    POD,
)
from scaleset.runtime.controller import Controller
from scaleset.runtime.manager import Manager
from scaleset.runtime.store import InformerEvent

NAME = "autoscalingrunnerset"
DEFAULT_WORKERS = 4
"""More than ARC's 1: each scale set's reconcile calls its own tenant's GitHub, so with one
worker a tenant whose GitHub hangs would hold up every other tenant's scale sets."""


def settings_from_context(context: ProcessContext) -> Settings:
    options = context.options
    return Settings(
        controller_namespace=options.controller_namespace,
        listener_image=options.listener_image,
        image_pull_secrets=tuple(options.image_pull_secrets),
        exclude_label_prefixes=tuple(options.exclude_label_propagation_prefixes),
        policy=options.policy,
    )


def build(
    manager: Manager,
    context: ProcessContext,
    *,
    settings: Settings,
    github: GitHubClients,
    metrics: ScaleSetDecisionMetrics | None = None,
) -> tuple[Controller, AutoscalingRunnerSetReconciler]:
    """The controller and its reconciler (tests pass their own settings and GitHub clients)."""
    reconciler = AutoscalingRunnerSetReconciler(
        context.client,
        Applier(context.client, github, context.clock),
        manager.events,
        context.clock,
        settings,
        metrics,
    )
    controller = context.controller(
        manager,
        NAME,
        for_kind=AUTOSCALING_RUNNER_SET,
        reconcile=reconciler.reconcile,
        default_workers=DEFAULT_WORKERS,
    )
    reconciler.scale_sets = controller.informer
    reconciler.runner_sets = controller.owns(EPHEMERAL_RUNNER_SET)
    reconciler.listeners = controller.watches(
        AUTOSCALING_LISTENER,
        _listener_owner,
        namespaces=context.controller_namespace_scope(manager),
    )

    def all_scale_sets(event: InformerEvent) -> Iterable[ObjectKey]:
        image = settings.listener_image
        changed = is_arc_controller(event.obj, image) or (
            event.old is not None and is_arc_controller(event.old, image)
        )
        if not changed:
            return ()
        return [obj.key for obj in controller.informer.list()]

    # the pod cache keeps container images (see arc_detection): created before ``watches``
    # asks for the informer, so the same one is used
    manager.informers.informer(
        POD, label_selector=CONTROLLER_POD_SELECTOR, projection=controller_pod_record
    )
    reconciler.controller_pods = controller.watches(
        POD, all_scale_sets, label_selector=CONTROLLER_POD_SELECTOR
    )
    return controller, reconciler


def _listener_owner(event: InformerEvent) -> Iterable[ObjectKey]:
    spec = event.obj.spec
    namespace = spec.get("autoscalingRunnerSetNamespace")
    name = spec.get("autoscalingRunnerSetName")
    if isinstance(namespace, str) and isinstance(name, str) and namespace and name:
        return (ObjectKey(namespace, name),)
    return ()


def setup(manager: Manager, context: ProcessContext) -> Controller:
    """Register the AutoscalingRunnerSet controller (``controllers.registry``)."""
    github = github_clients(manager, context)
    controller, _ = build(manager, context, settings=settings_from_context(context), github=github)
    return controller
