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
    Faults
    subscribe_stored_texts(sink) -> unsubscribe   (a test hook: ``_stored_texts``)

``clock`` is a ``scaleset.clock.Clock`` (``SystemClock`` by default): every time the server
stamps on an object (creation, deletion, graceful-deletion deadlines, condition transitions, the
age column of tables) is ``clock.now()``, so a test passes the same ``ManualClock`` to the
server, the kubelet, the runtime and the fake GitHub service and sees one time everywhere. How
long a watch stays open, bookmark cadence and injected latency are connection behaviour and run
on the event loop's own time (the server often runs on its own thread's loop, where a
``ManualClock``'s sleepers could not be woken safely from the test's thread).
"""

from scaleset.embedded.apiserver._faults import Faults
from scaleset.embedded.apiserver._server import DEFAULT_TOKEN, EmbeddedApiServer
from scaleset.embedded.apiserver._stored_texts import subscribe_stored_texts
from scaleset.embedded.apiserver._thread import RunningApiServer, serve_in_thread

__all__ = [
    "DEFAULT_TOKEN",
    "EmbeddedApiServer",
    "Faults",
    "RunningApiServer",
    "serve_in_thread",
    "subscribe_stored_texts",
]
