"""Builders for the JSON patches scaleset sends: guarded finalizer edits and ``test`` ops.

``add_finalizer``/``remove_finalizer`` edit one finalizer where it was read;
``set_finalizers`` writes a list a plan decided whole, if the list is still the one read.

A merge patch replaces a whole list, so editing ``metadata.finalizers`` with one would drop a
finalizer someone else added in between. These JSON patches instead ``test`` the exact element
(or the ``resourceVersion``) they rely on; when the object changed, the ``test`` fails and the
client raises ``Conflict`` — re-read and decide again (lifecycle.md L2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scaleset.kube.client import JsonPatchOp
from scaleset.kube.objects import KubeObject


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from path segments (``~`` and ``/`` escaped)."""
    escaped = (str(part).replace("~", "~0").replace("/", "~1") for part in parts)
    return "/" + "/".join(escaped)


def guard(path: str, value: Any) -> JsonPatchOp:
    """``{"op": "test"}``: the patch applies only if ``path`` holds exactly ``value``."""
    return {"op": "test", "path": path, "value": value}


def guard_resource_version(obj: KubeObject) -> JsonPatchOp:
    """A ``test`` op pinning the whole patch to the version of ``obj`` that was read."""
    return guard(pointer("metadata", "resourceVersion"), obj.resource_version)


def remove_finalizer(obj: KubeObject, finalizer: str) -> list[JsonPatchOp] | None:
    """Ops that remove ``finalizer`` only if it still sits where it was read; ``None`` if absent."""
    finalizers = list(obj.finalizers)
    if finalizer not in finalizers:
        return None
    index = finalizers.index(finalizer)
    path = pointer("metadata", "finalizers", index)
    return [guard(path, finalizer), {"op": "remove", "path": path}]


def add_finalizer(obj: KubeObject, finalizer: str) -> list[JsonPatchOp] | None:
    """Ops that append ``finalizer`` without dropping others; ``None`` if already present.

    With no finalizer list yet, the list is created under a ``resourceVersion`` test (so a list
    created concurrently by someone else is never overwritten).
    """
    finalizers = list(obj.finalizers)
    if finalizer in finalizers:
        return None
    if not finalizers:
        return [
            guard_resource_version(obj),
            {"op": "add", "path": pointer("metadata", "finalizers"), "value": [finalizer]},
        ]
    last = len(finalizers) - 1
    return [
        guard(pointer("metadata", "finalizers", last), finalizers[last]),
        {"op": "add", "path": pointer("metadata", "finalizers", "-"), "value": finalizer},
    ]


def set_finalizers(
    obj: KubeObject, read: Sequence[str], wanted: Sequence[str]
) -> list[JsonPatchOp]:
    """Ops that make the finalizer list ``wanted`` only if it is still ``read`` (a plan that
    decided the whole list: a ``test`` of that list; with none read, a ``test`` of ``obj``'s
    ``resourceVersion``, so a list someone created meanwhile is never overwritten)."""
    path = pointer("metadata", "finalizers")
    if read:
        return [guard(path, list(read)), {"op": "replace", "path": path, "value": list(wanted)}]
    return [guard_resource_version(obj), {"op": "add", "path": path, "value": list(wanted)}]
