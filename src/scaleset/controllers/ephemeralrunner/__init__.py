"""The EphemeralRunner controller: JIT configs, runner pods, and the lifecycle rules a single
runner must keep (lifecycle.md L1, L2, L4, L5, L8, L9).

``observed`` (the frozen state a decision reads), ``actions`` (what can be decided), ``plan``
(the pure decision table), ``apply`` (one action, one API call), ``pod`` (the runner pod and
JIT Secret builders), ``reconciler`` (read, plan, apply, report), ``setup`` (registration on the
manager).
"""
