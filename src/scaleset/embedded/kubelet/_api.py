"""The kubelet's writes and reads against the API server, through ``scaleset.kube``.

- ``bind``: POST ``pods/{name}/binding`` (what the scheduler does). Both our servers support it;
  a merge patch of ``spec.nodeName`` is refused by both (422: pod updates may not change
  ``spec.nodeName``), so there is no patch fallback. ``KubeClient`` has no call for a
  subresource POST yet, so this module sends it through the client's request path (the one
  place the kubelet reaches past the public ``KubeClient`` surface).
- ``write_status``: a merge patch on ``pods/status`` that carries ``metadata.uid``, as the real
  kubelet's status patch does: a pod replaced by a new one of the same name is never written
  (the server answers 422 "metadata.uid: field is immutable").
- ``delete_pod``: the kubelet's final grace-0 delete with a uid precondition.
- ``ApiSourceReader``: Secrets and ConfigMaps by GET (ARC's RBAC gives no watch on Secrets).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scaleset.embedded.kubelet.config import SourceKind, decode_data
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import CONFIG_MAP, POD, SECRET


async def bind(client: KubeClient, key: ObjectKey, node: str) -> None:
    """Bind the pod to ``node`` (``Conflict`` if already bound or being deleted)."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": key.name, "namespace": key.namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    await client.create_subresource(POD, key, "binding", body)


async def write_status(
    client: KubeClient, key: ObjectKey, uid: str, status: Mapping[str, Any]
) -> KubeObject:
    """Merge-patch the pod's status; only the pod with ``uid`` is written."""
    return await client.patch_merge(
        POD, key, {"metadata": {"uid": uid}, "status": dict(status)}, status=True
    )


async def delete_pod(client: KubeClient, key: ObjectKey, uid: str) -> None:
    """Grace-0 delete of exactly this pod (a replacement of the same name is left alone)."""
    await client.delete(POD, key, uid=uid, grace_period_seconds=0)


async def current_uid(client: KubeClient, key: ObjectKey) -> str | None:
    """The uid of the pod now stored under ``key`` (``None`` when there is none)."""
    try:
        return (await client.get(POD, key)).uid
    except NotFound:
        return None


class ApiSourceReader:
    """Reads Secrets and ConfigMaps with a GET each time (what the container starts with)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def read(self, kind: SourceKind, namespace: str, name: str) -> Mapping[str, bytes] | None:
        resource = SECRET if kind == "Secret" else CONFIG_MAP
        try:
            obj = await self._client.get(resource, ObjectKey(namespace, name))
        except NotFound:
            return None
        return decode_data(obj.raw, kind)
