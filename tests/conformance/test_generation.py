"""metadata.generation: starts at 1, moves on a spec change, not on a status or metadata-only
change, and moves when deletion starts (deletionTimestamp set on an object with a finalizer)."""

from __future__ import annotations

from typing import Any

from lightkube import AsyncClient
from lightkube.types import PatchType
from tests.conformance.widgets import widget

MERGE = PatchType.MERGE


async def generation(kube: AsyncClient, widgets: type[Any], namespace: str) -> int:
    obj = await kube.get(widgets, "w", namespace=namespace)
    value: int = obj["metadata"]["generation"]
    return value


async def test_spec_change_bumps_generation(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = await kube.create(widget("w", namespace, size=1))
    assert created["metadata"]["generation"] == 1

    await kube.patch(widgets, "w", {"spec": {"size": 2}}, namespace=namespace, patch_type=MERGE)

    assert await generation(kube, widgets, namespace) == 2


async def test_identical_spec_write_does_not_bump_generation(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    await kube.patch(widgets, "w", {"spec": {"size": 1}}, namespace=namespace, patch_type=MERGE)

    assert await generation(kube, widgets, namespace) == 1


async def test_status_change_does_not_bump_generation(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    await kube.patch(
        widgets.Status, "w", {"status": {"phase": "Running"}}, namespace=namespace, patch_type=MERGE
    )

    assert await generation(kube, widgets, namespace) == 1


async def test_metadata_change_does_not_bump_generation(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    await kube.create(widget("w", namespace, size=1))

    await kube.patch(
        widgets,
        "w",
        {"metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}}},
        namespace=namespace,
        patch_type=MERGE,
    )

    assert await generation(kube, widgets, namespace) == 1


async def test_deletion_with_finalizer_bumps_generation(
    kube: AsyncClient, widgets: type[Any], namespace: str
) -> None:
    created = widget("w", namespace, size=1)
    created["metadata"]["finalizers"] = ["conformance.scaleset.dev/hold"]
    await kube.create(created)

    await kube.delete(widgets, "w", namespace=namespace)

    deleting = await kube.get(widgets, "w", namespace=namespace)
    assert deleting["metadata"]["deletionTimestamp"]
    assert deleting["metadata"]["generation"] == 2
