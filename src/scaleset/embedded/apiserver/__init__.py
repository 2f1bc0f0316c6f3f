"""An in-memory Kubernetes API server on loopback, for tests and ``scaleset demo``.

It speaks kube-apiserver's REST semantics (as a 1.20 server has them) for the kinds scaleset
uses — namespaces, pods, secrets, configmaps, serviceaccounts, events, roles, rolebindings,
leases and CustomResourceDefinitions with their custom resources — plus watch, discovery,
garbage collection and fault hooks (``server.faults``).

Public surface::

    EmbeddedApiServer(host="127.0.0.1", port=0, clock=None, *, tokens=None, ...)
        async start() / stop(), async context manager, .url, .faults, write_kubeconfig(path)
    serve_in_thread(**kwargs) -> context manager yielding RunningApiServer
        (.url, .kubeconfig_path, .server, .loop)
    Faults, Clock, SystemClock
"""

from scaleset.embedded.apiserver._clock import Clock, SystemClock
from scaleset.embedded.apiserver._faults import Faults
from scaleset.embedded.apiserver._server import DEFAULT_TOKEN, EmbeddedApiServer
from scaleset.embedded.apiserver._thread import RunningApiServer, serve_in_thread

__all__ = [
    "DEFAULT_TOKEN",
    "Clock",
    "EmbeddedApiServer",
    "Faults",
    "RunningApiServer",
    "SystemClock",
    "serve_in_thread",
]
