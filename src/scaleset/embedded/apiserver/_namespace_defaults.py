"""What kube-controller-manager puts into every namespace, kept there as it keeps it.

- The ServiceAccount controller: a ``default`` ServiceAccount in every active namespace,
  created again when deleted (pods that name no ServiceAccount need it: ``_admission``).
- The root-CA publisher: a ``kube-root-ca.crt`` ConfigMap whose ``ca.crt`` is the cluster's CA,
  created again when deleted and put back when its data is changed (the projected token volume
  admission mounts reads it).

A terminating namespace is left alone. Unlike a 1.20 controller-manager there is no token
controller: ServiceAccounts get no token Secret (pods mount the bound token volume instead).
"""

from __future__ import annotations

from typing import Any

from scaleset.embedded.apiserver._admission import (
    DEFAULT_SERVICE_ACCOUNT,
    ROOT_CA_CONFIGMAP,
    ROOT_CA_KEY,
)
from scaleset.embedded.apiserver._errors import ApiError
from scaleset.embedded.apiserver._kinds import ResourceType
from scaleset.embedded.apiserver._registry import Registry
from scaleset.embedded.apiserver._rest import CONTROLLER_MANAGER, Rest
from scaleset.embedded.apiserver._store import BucketId, StoredEvent

JsonObj = dict[str, Any]

NAMESPACES: BucketId = ("", "namespaces")
SERVICE_ACCOUNTS: BucketId = ("", "serviceaccounts")
CONFIG_MAPS: BucketId = ("", "configmaps")


def namespace_to_sync(bucket_id: BucketId, event: StoredEvent) -> str | None:
    """The namespace whose defaults this store event may have disturbed, if any."""
    meta = event.obj.get("metadata", {})
    if bucket_id == NAMESPACES:
        return str(meta.get("name", "")) if event.type == "ADDED" else None
    if bucket_id == SERVICE_ACCOUNTS:
        wanted = event.type == "DELETED" and meta.get("name") == DEFAULT_SERVICE_ACCOUNT
    elif bucket_id == CONFIG_MAPS:
        wanted = event.type in ("DELETED", "MODIFIED") and meta.get("name") == ROOT_CA_CONFIGMAP
    else:
        return None
    return str(meta.get("namespace", "")) if wanted else None


def sync_namespace_defaults(rest: Rest, registry: Registry, namespace: str, ca_pem: str) -> None:
    """Create (or restore) the ``default`` ServiceAccount and ``kube-root-ca.crt`` ConfigMap."""
    ns = rest.store.get(NAMESPACES, ("", namespace))
    if ns is None or ns["metadata"].get("deletionTimestamp"):
        return
    accounts = registry.lookup("", "v1", "serviceaccounts")
    config_maps = registry.lookup("", "v1", "configmaps")
    assert accounts is not None
    assert config_maps is not None
    if rest.store.get(SERVICE_ACCOUNTS, (namespace, DEFAULT_SERVICE_ACCOUNT)) is None:
        _create(rest, accounts, namespace, {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT}})
    data = {ROOT_CA_KEY: ca_pem}
    current = rest.store.get(CONFIG_MAPS, (namespace, ROOT_CA_CONFIGMAP))
    if current is None:
        body: JsonObj = {"metadata": {"name": ROOT_CA_CONFIGMAP}, "data": data}
        _create(rest, config_maps, namespace, body)
    elif current.get("data") != data or current.get("binaryData"):
        restored = {k: v for k, v in current.items() if k != "binaryData"}
        restored["data"] = data
        try:
            rest.update(
                config_maps, namespace, ROOT_CA_CONFIGMAP, restored, manager=CONTROLLER_MANAGER
            )
        except ApiError as error:
            if error.code not in (404, 409):
                raise


def _create(rest: Rest, rt: ResourceType, namespace: str, body: JsonObj) -> None:
    try:
        rest.create(rt, namespace, body, manager=CONTROLLER_MANAGER)
    except ApiError as error:
        if error.code not in (403, 404, 409):  # raced: created meanwhile, or the namespace went
            raise
