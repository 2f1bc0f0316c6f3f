"""The listener: one process per scale set that long-polls GitHub's message queue and turns what
it hears into Kubernetes writes (lifecycle.md L1, L2, L4, L7, L8).

Modules: ``config`` (ARC's listener config JSON), ``scaler`` (desired count and patch ids, pure),
``handlers`` (JobStarted -> Running, JobCompleted -> jobCompletion), ``session`` (the message
session: resumed or created, handed over or deleted at the end; the state that keeps it across
restarts, ``scaleset.api.listener_state``, on the listener's own EphemeralRunnerSet),
``waiting`` (waits a stop cuts short, retries of transient failures), ``loop`` (the message
loop), ``metrics`` (ARC's listener metrics plus ours), ``exits`` (exit codes), ``main`` (the
process: signals, metrics served by the runtime's probe server).
"""
