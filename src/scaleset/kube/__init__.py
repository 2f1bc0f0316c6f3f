"""scaleset's Kubernetes API client: explicit requests on raw JSON, errors, patches, config.

The only package that imports lightkube (enforced by import-linter). The controller runtime
built on it lives in ``scaleset.runtime``.

- ``KubeClient`` (``client``): explicit get/list/watch/create/replace/patch/delete on raw JSON,
  ``patch_with_lock``; errors from ``errors``; ``retry_on_conflict`` (``conflict``);
  JSON-patch builders (``patches``); the kinds (``resources``); objects (``objects``);
  configuration and credentials (``config``, ``auth``); the client-side token bucket
  (``ratelimit``) and the metrics the client and the runtime share (``metrics``).
- Test seam: ``AccessRecorder`` (``access``) records every (verb, resource) the client sends.
"""

from scaleset.kube.access import Access, AccessRecorder
from scaleset.kube.client import (
    ClientSettings,
    JsonPatchOp,
    KubeClient,
    ListPage,
    ObjectList,
    WatchEvent,
)
from scaleset.kube.config import load_config
from scaleset.kube.conflict import retry_on_conflict
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
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import JsonObject, KubeObject, ObjectKey, OwnerRef
from scaleset.kube.resources import Kind

__all__ = [
    "Access",
    "AccessRecorder",
    "AlreadyExists",
    "ApiStatusError",
    "ClientSettings",
    "Conflict",
    "ConflictRetriesExhausted",
    "Forbidden",
    "Gone",
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
    "ListPage",
    "NotFound",
    "ObjectKey",
    "ObjectList",
    "OwnerRef",
    "RuntimeMetrics",
    "ServerError",
    "WatchEvent",
    "default_metrics",
    "is_retryable",
    "load_config",
    "retry_on_conflict",
]
