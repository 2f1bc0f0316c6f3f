"""Developer tools: the real kube-apiserver test harness (build, start, stop, env).

Not imported by the operator itself; the ``scaleset dev`` command group and the test suites use it.
"""
