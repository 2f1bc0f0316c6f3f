"""coordination.k8s.io/v1 Leases as leader election uses them: create, optimistic update with
resourceVersion (a stale one is 409 Conflict), microsecond renew times round-trip."""

from __future__ import annotations

from typing import cast

import httpx2
import pytest
from lightkube import ApiError, AsyncClient
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

RENEW = "2026-01-02T03:04:05.123456Z"


def lease(namespace: str, holder: str) -> Lease:
    return Lease(
        metadata=ObjectMeta(name="scaleset-leader", namespace=namespace),
        spec=LeaseSpec(holderIdentity=holder, leaseDurationSeconds=15, leaseTransitions=0),
    )


async def test_lease_create_and_get(kube: AsyncClient, namespace: str) -> None:
    await kube.create(lease(namespace, "pod-a"))

    got = await kube.get(Lease, "scaleset-leader", namespace=namespace)

    assert got.spec is not None
    assert (got.spec.holderIdentity, got.spec.leaseDurationSeconds) == ("pod-a", 15)


async def test_lease_update_with_resource_version(kube: AsyncClient, namespace: str) -> None:
    created = await kube.create(lease(namespace, "pod-a"))
    assert created.spec is not None
    assert created.metadata is not None
    created.spec.holderIdentity = "pod-b"
    created.spec.leaseTransitions = 1

    updated = await kube.replace(created)

    assert updated.spec is not None
    assert updated.metadata is not None
    assert (updated.spec.holderIdentity, updated.spec.leaseTransitions) == ("pod-b", 1)
    assert updated.metadata.resourceVersion != created.metadata.resourceVersion


async def test_lease_update_with_stale_resource_version_is_conflict(
    kube: AsyncClient, namespace: str
) -> None:
    created = await kube.create(lease(namespace, "pod-a"))
    winner = await kube.get(Lease, "scaleset-leader", namespace=namespace)
    assert winner.spec is not None
    assert created.spec is not None
    winner.spec.holderIdentity = "pod-b"
    await kube.replace(winner)
    created.spec.holderIdentity = "pod-c"

    with pytest.raises(ApiError) as caught:
        await kube.replace(created)

    assert (caught.value.status.code, caught.value.status.reason) == (409, "Conflict")
    final = await kube.get(Lease, "scaleset-leader", namespace=namespace)
    assert final.spec is not None
    assert final.spec.holderIdentity == "pod-b"


async def test_lease_micro_time_round_trips(kube: AsyncClient, namespace: str) -> None:
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "scaleset-leader", "namespace": namespace},
        "spec": {"holderIdentity": "pod-a", "acquireTime": RENEW, "renewTime": RENEW},
    }
    await kube.create(cast(Lease, Lease.from_dict(body)))

    got = await kube.get(Lease, "scaleset-leader", namespace=namespace)

    assert got.spec is not None
    assert got.spec.renewTime is not None
    assert got.spec.renewTime.isoformat().startswith("2026-01-02T03:04:05.123456")


async def test_lease_put_without_resource_version_is_invalid(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    # unlike pods or secrets, a Lease write must name the version it read: leader election's
    # optimistic lock cannot be bypassed by an unconditional PUT
    await kube.create(lease(namespace, "pod-a"))
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "scaleset-leader", "namespace": namespace},
        "spec": {"holderIdentity": "pod-b", "leaseDurationSeconds": 15},
    }

    response = await kube_http.put(
        f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/scaleset-leader", json=body
    )

    assert response.status_code == 422, response.text
    status = response.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'leases.coordination.k8s.io "scaleset-leader" is invalid: metadata.resourceVersion: '
        "Invalid value: 0x0: must be specified for an update"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0x0: must be specified for an update",
            "field": "metadata.resourceVersion",
        }
    ]
    got = await kube.get(Lease, "scaleset-leader", namespace=namespace)
    assert got.spec is not None
    assert got.spec.holderIdentity == "pod-a"
