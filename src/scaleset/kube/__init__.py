"""scaleset's Kubernetes layer: the API client and a small controller runtime.

The only package that imports lightkube. Everything a controller or the listener needs:

- ``KubeClient`` (``client``): explicit get/list/watch/create/replace/patch/delete on raw JSON,
  ``patch_with_lock``; errors from ``errors``; ``retry_on_conflict`` (``conflict``);
  JSON-patch builders (``patches``); the kinds (``resources``); objects (``objects``).
- Runtime: ``Informer``/``InformerSet`` (list+watch caches), ``WorkQueue``, ``Expectations``,
  ``Controller``, ``LeaderElector``, ``EventRecorder``, ``Manager``.
- Test seams: ``ManualClock`` (``clock``), ``AccessRecorder`` (``access``).
"""

from scaleset.kube.access import Access, AccessRecorder
from scaleset.kube.cache import InformerSet
from scaleset.kube.client import (
    ClientSettings,
    JsonPatchOp,
    KubeClient,
    ListPage,
    ObjectList,
    WatchEvent,
)
from scaleset.kube.clock import Clock, ManualClock, SystemClock
from scaleset.kube.config import load_config
from scaleset.kube.conflict import retry_on_conflict
from scaleset.kube.controller import Controller, QueueSettings, Reconcile, Result
from scaleset.kube.errors import (
    AlreadyExists,
    ApiStatusError,
    Conflict,
    ConflictRetriesExhausted,
    Forbidden,
    Gone,
    Invalid,
    KubeConfigError,
    KubeError,
    KubeTimeout,
    KubeTransportError,
    NotFound,
    ServerError,
    is_retryable,
)
from scaleset.kube.events import EventRecorder
from scaleset.kube.expectations import Expectations, observe_owned
from scaleset.kube.informer import ALL_NAMESPACES, Informer
from scaleset.kube.leader import LeaderElectionConfig, LeaderElector, LeadershipLost
from scaleset.kube.manager import Manager, ManagerSettings
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import JsonObject, KubeObject, ObjectKey, OwnerRef
from scaleset.kube.resources import Kind
from scaleset.kube.store import InformerEvent
from scaleset.kube.workqueue import WorkQueue

__all__ = [
    "ALL_NAMESPACES",
    "Access",
    "AccessRecorder",
    "AlreadyExists",
    "ApiStatusError",
    "ClientSettings",
    "Clock",
    "Conflict",
    "ConflictRetriesExhausted",
    "Controller",
    "EventRecorder",
    "Expectations",
    "Forbidden",
    "Gone",
    "Informer",
    "InformerEvent",
    "InformerSet",
    "Invalid",
    "JsonObject",
    "JsonPatchOp",
    "Kind",
    "KubeClient",
    "KubeConfigError",
    "KubeError",
    "KubeObject",
    "KubeTimeout",
    "KubeTransportError",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeadershipLost",
    "ListPage",
    "Manager",
    "ManagerSettings",
    "ManualClock",
    "NotFound",
    "ObjectKey",
    "ObjectList",
    "OwnerRef",
    "QueueSettings",
    "Reconcile",
    "Result",
    "RuntimeMetrics",
    "ServerError",
    "SystemClock",
    "WatchEvent",
    "WorkQueue",
    "default_metrics",
    "is_retryable",
    "load_config",
    "observe_owned",
    "retry_on_conflict",
]
