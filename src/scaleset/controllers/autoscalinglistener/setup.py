"""Registers the AutoscalingListener controller on the manager: the reconciler, the listener
objects it watches (labelled ``auto-scaling-listener-name``: pods, ServiceAccounts and the
config and proxy Secrets in the controller namespace, owned by their listener; Roles and
RoleBindings in the scale sets' namespaces, mapped to their listener by its name and namespace
labels), the process's watches of the Secrets each listener's config is made from (a change
wakes the listener), the shared AutoscalingRunnerSet cache (a deleted scale set wakes its
listener), and its settings.

Settings come from the controller's options (``--log-level``, ``--log-format``,
``--listener-metrics-addr``, ``--listener-metrics-endpoint``,
``--exclude-label-propagation-prefix``) and the process context's environment: ARC's
``LISTENER_ENTRYPOINT`` (the listener command; ``ENVIRONMENT`` declares it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scaleset.api import keys
from scaleset.api.naming import listener_name
from scaleset.controllers.autoscalinglistener.apply import Applier
from scaleset.controllers.autoscalinglistener.metrics import ListenerDecisionMetrics
from scaleset.controllers.autoscalinglistener.reconciler import AutoscalingListenerReconciler
from scaleset.controllers.autoscalinglistener.resources import LISTENER_OWNED_SELECTOR
from scaleset.controllers.autoscalinglistener.settings import (
    ENTRYPOINT_ENV,
    Settings,
    command_from_environ,
)
from scaleset.controllers.env_settings import EnvSetting, documentation_only
from scaleset.controllers.setup import ProcessContext, secret_watches
from scaleset.kube import resources as kinds
from scaleset.kube.objects import ObjectKey
from scaleset.runtime.controller import Controller
from scaleset.runtime.manager import Manager
from scaleset.runtime.store import InformerEvent

NAME = "autoscalinglistener"
DEFAULT_WORKERS = 1
"""ARC's concurrency for this controller."""

ENVIRONMENT = documentation_only(
    EnvSetting(
        ENTRYPOINT_ENV,
        "",
        None,
        "ARC's variable: one executable path used as the listener pods' command instead of "
        "`scaleset listener` (ARC's own image needs `/ghalistener`).",
        default="unset (`scaleset listener`)",
    ),
)
"""The environment variable of the AutoscalingListener controller (``command_from_environ``
reads it)."""


def listener_of_rbac(event: InformerEvent) -> Iterable[ObjectKey]:
    """The listener a Role or RoleBinding in a scale set's namespace belongs to, by its
    ``auto-scaling-listener-name``/``-namespace`` labels (the listener lives in another
    namespace, so no owner reference can name it)."""
    labels = event.obj.labels
    name = labels.get(keys.LISTENER_NAME_LABEL)
    namespace = labels.get(keys.LISTENER_NAMESPACE_LABEL)
    if not name or not namespace:
        return ()
    return (ObjectKey(namespace, name),)


def settings_from_context(
    context: ProcessContext, environ: Mapping[str, str] | None = None
) -> Settings:
    options = context.options
    return Settings(
        log_level=options.log_level,
        log_format=options.log_format,
        metrics_addr=options.listener_metrics_addr,
        metrics_endpoint=options.listener_metrics_endpoint,
        command=command_from_environ(context.environ if environ is None else environ),
        exclude_label_prefixes=tuple(options.exclude_label_propagation_prefixes),
        policy=options.policy,
    )


def build(
    manager: Manager,
    context: ProcessContext,
    *,
    settings: Settings,
    metrics: ListenerDecisionMetrics | None = None,
) -> tuple[Controller, AutoscalingListenerReconciler]:
    """The controller and its reconciler (tests pass their own settings and metrics)."""
    reconciler = AutoscalingListenerReconciler(
        context.client, Applier(context.client), manager.events, context.clock, settings
    )
    if metrics is not None:
        reconciler.metrics = metrics
    controller_namespace = context.options.controller_namespace
    scope = context.controller_namespace_scope(manager)
    controller = context.controller(
        manager,
        NAME,
        for_kind=kinds.AUTOSCALING_LISTENER,
        reconcile=reconciler.reconcile,
        default_workers=DEFAULT_WORKERS,
        namespaces=scope,
    )
    reconciler.listeners = controller.informer
    reconciler.input_secrets = secret_watches(manager, context)
    reconciler.enqueue = controller.enqueue
    reconciler.pods = controller.owns(
        kinds.POD, label_selector=LISTENER_OWNED_SELECTOR, namespaces=scope
    )
    reconciler.service_accounts = controller.owns(
        kinds.SERVICE_ACCOUNT,
        label_selector=LISTENER_OWNED_SELECTOR,
        namespaces=(controller_namespace,),
    )
    reconciler.secrets = controller.owns(
        kinds.SECRET, label_selector=LISTENER_OWNED_SELECTOR, namespaces=(controller_namespace,)
    )
    scale_set_scope = context.scale_set_namespace_scope(manager)
    reconciler.roles = controller.watches(
        kinds.ROLE,
        listener_of_rbac,
        label_selector=LISTENER_OWNED_SELECTOR,
        namespaces=scale_set_scope,
    )
    reconciler.role_bindings = controller.watches(
        kinds.ROLE_BINDING,
        listener_of_rbac,
        label_selector=LISTENER_OWNED_SELECTOR,
        namespaces=scale_set_scope,
    )

    def listener_of(event: InformerEvent) -> Iterable[ObjectKey]:
        if event.type != "DELETED":
            return ()
        spec = event.obj.spec
        group = spec.get("runnerGroup")
        url = spec.get("githubConfigUrl")
        name = listener_name(
            event.obj.name,
            event.obj.namespace,
            group if isinstance(group, str) else "",
            url if isinstance(url, str) else "",
        )
        return (ObjectKey(controller_namespace, name),)

    reconciler.scale_sets = controller.watches(kinds.AUTOSCALING_RUNNER_SET, listener_of)
    return controller, reconciler


def setup(manager: Manager, context: ProcessContext) -> Controller:
    """Register the AutoscalingListener controller (``controllers.registry``)."""
    controller, _ = build(manager, context, settings=settings_from_context(context))
    return controller
