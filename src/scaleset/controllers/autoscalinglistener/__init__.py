"""The AutoscalingListener controller: one listener pod per scale set, its configuration and its
least-privilege RBAC, with a back-off that survives restarts.

``settings`` (the controller's flags that reach the listener, back-off timings), ``inputs``
(reading the GitHub credentials, CA and proxy credentials the config needs), ``resources`` (pure
builders: ServiceAccount, Role, RoleBinding, config and proxy Secrets, the pod with
``listenerTemplate`` merged), ``observed`` (the frozen state a decision reads), ``actions``,
``plan`` (the pure decision table), ``apply`` (one action, one API call), ``reconciler`` (read,
plan, apply, report), ``rbac`` (what the controller itself must hold), ``setup`` (registration
on the manager).
"""
