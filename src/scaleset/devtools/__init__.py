"""Developer tools: the real kube-apiserver test harness (build, start, stop, env) and the
generator of docs/configuration.md (``config_reference``).

Not imported by the operator itself; the ``scaleset dev`` command group and the test suites use it.
"""
