"""What the reconcilers' observe → plan → apply rounds share of their reads: a GET whose
NotFound answers None (the object is gone, or was never made)."""

from __future__ import annotations

from scaleset.kube.client import KubeClient
from scaleset.kube.errors import NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import Kind


async def get_or_none(kube: KubeClient, kind: Kind, key: ObjectKey | None) -> KubeObject | None:
    """The object as the API server has it now (a fresh GET); None when it does not exist, or
    when there is no ``key`` to read."""
    if key is None:
        return None
    try:
        return await kube.get(kind, key)
    except NotFound:
        return None
