"""scaleset's controller runtime, built on the ``scaleset.kube`` client.

- ``Informer`` (list+watch cache of slim records per kind) and ``InformerSet`` (one per kind and
  namespace scope), the cache itself (``store``), ``WorkQueue`` (dedupe, per-key back-off, fair
  rate limit), ``Expectations`` (creations/deletions issued and not yet observed),
  ``Controller`` (queue + workers around one reconcile function), ``LeaderElector`` (Lease),
  ``EventRecorder``, ``Manager`` (runs it all, with probes and supervision).
- Time comes from ``scaleset.clock``.
"""

from scaleset.runtime.controller import Controller, QueueSettings, Reconcile, Result
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.expectations import Expectations, observe_owned
from scaleset.runtime.informer import ALL_NAMESPACES, Informer
from scaleset.runtime.informer_set import InformerSet
from scaleset.runtime.leader import LeaderElectionConfig, LeaderElector, LeadershipLost
from scaleset.runtime.manager import Manager, ManagerSettings
from scaleset.runtime.store import InformerEvent
from scaleset.runtime.workqueue import WorkQueue

__all__ = [
    "ALL_NAMESPACES",
    "Controller",
    "EventRecorder",
    "Expectations",
    "Informer",
    "InformerEvent",
    "InformerSet",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeadershipLost",
    "Manager",
    "ManagerSettings",
    "QueueSettings",
    "Reconcile",
    "Result",
    "WorkQueue",
    "observe_owned",
]
