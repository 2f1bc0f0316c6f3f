"""The EphemeralRunnerSet controller: keeps a scale set's runners at the listener's count.

``observed`` (frozen views of the set and its runners), ``plan`` (every decision, pure),
``actions`` (what plan can decide), ``apply`` (one action, its API calls), ``ledger`` (what this
process did that the cache does not show yet), ``reconciler`` (one reconcile: observe, plan,
apply; and ``setup`` for the manager), ``runner_body`` (the EphemeralRunner a set creates),
``metrics``.
"""
