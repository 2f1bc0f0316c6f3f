"""The ``namespace`` fixture's teardown leaves nothing a later test can see: on the real test
server (no controller-manager, so a deleted namespace never empties) its pods are deleted with
it, as on the embedded server whose namespace controller does that itself.

Pods are listed cluster-wide by label (the doctor's and the controller's view of controller
pods), so a pod left behind by one test used to show in the next: a controller pod serving every
namespace hid the doctor's ``controller-missing`` finding in a later test's namespace.
"""

from __future__ import annotations

import httpx2
from lightkube import AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from tests.plugins.kube_backends import (
    KubeBackend,
    namespace_name,
    provide_namespace_defaults,
    remove_namespace,
)
from tests.support.waiting import eventually

from scaleset.api import keys

SELECTOR = f"{keys.PART_OF_LABEL}={keys.CONTROLLER_PART_OF_VALUE}"


async def test_a_removed_namespace_leaves_no_live_pod_listed_cluster_wide(
    kube: AsyncClient, kube_backend: KubeBackend, kube_http: httpx2.AsyncClient
) -> None:
    name = namespace_name("namespace teardown")
    await kube.create(Namespace(metadata=ObjectMeta(name=name)))
    await provide_namespace_defaults(kube_backend, kube_http, name)
    pod = {
        "metadata": {
            "name": "gha-rs-controller-0",
            "labels": {keys.PART_OF_LABEL: keys.CONTROLLER_PART_OF_VALUE},
        },
        "spec": {"containers": [{"name": "manager", "image": "controller:1"}]},
    }
    created = await kube_http.post(f"/api/v1/namespaces/{name}/pods", json=pod)
    assert created.status_code == 201, created.text

    await remove_namespace(kube_backend, kube_http, name)

    async def no_live_pod_left() -> bool:
        listed = await kube_http.get("/api/v1/pods", params={"labelSelector": SELECTOR})
        assert listed.status_code == 200, listed.text
        return not [
            item
            for item in listed.json()["items"]
            if item["metadata"]["namespace"] == name
            and not item["metadata"].get("deletionTimestamp")
        ]

    await eventually(no_live_pod_left, what=f"no live pod left in namespace {name}")
