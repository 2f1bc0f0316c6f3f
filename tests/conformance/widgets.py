"""The conformance suite's own small CRD (``widgets.conformance.scaleset.dev``, with a status
subresource and a structural schema), Widget bodies, REST paths, and installing a CRD until it
is Established. The ``widgets`` fixture (conftest) installs it once per backend."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

GROUP = "conformance.scaleset.dev"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
PLURAL = "widgets"
CRD_NAME = f"{PLURAL}.{GROUP}"
ESTABLISHED_TIMEOUT_S = 30.0

Widget = create_namespaced_resource(GROUP, VERSION, "Widget", PLURAL)

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "color": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "nested": {"type": "object", "properties": {"kept": {"type": "string"}}},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string"},
                "count": {"type": "integer"},
            },
        },
    },
}

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": PLURAL,
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
        },
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
            }
        ],
    },
}


GADGET_CRD: dict[str, Any] = {
    **WIDGET_CRD,
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        **WIDGET_CRD["spec"],
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
    },
}
"""A second CRD like Widget's, for tests that change their CRD's spec (the Widget CRD is shared
by the whole suite)."""


def widget(name: str, namespace: str, **spec: Any) -> Any:
    """A Widget object to create."""
    return Widget.from_dict(
        {
            "apiVersion": API_VERSION,
            "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec or {"size": 1, "color": "red"},
        }
    )


def resource_path(
    api_version: str, plural: str, namespace: str, name: str = "", subresource: str = ""
) -> str:
    """The REST path of a namespaced collection, or of one object, or of its subresource."""
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = f"{prefix}/namespaces/{namespace}/{plural}"
    if name:
        path += f"/{name}"
    if subresource:
        path += f"/{subresource}"
    return path


def widget_path(namespace: str, name: str = "", subresource: str = "") -> str:
    return resource_path(API_VERSION, PLURAL, namespace, name, subresource)


async def install_crd(kube: AsyncClient, document: dict[str, Any]) -> None:
    """Create (or replace, on a long-lived server) a CRD and wait, bounded, until Established."""
    name = document["metadata"]["name"]
    crd = cast(CustomResourceDefinition, CustomResourceDefinition.from_dict(document))
    try:
        await kube.create(crd)
    except ApiError as error:
        if error.status.reason != "AlreadyExists":
            raise
        # a long-lived harness may hold an older definition: replace it with this one
        current = await kube.get(CustomResourceDefinition, name)
        assert current.metadata is not None
        assert crd.metadata is not None
        crd.metadata.resourceVersion = current.metadata.resourceVersion
        await kube.replace(crd)
    async with asyncio.timeout(ESTABLISHED_TIMEOUT_S):
        await kube.wait(CustomResourceDefinition, name, for_conditions=["Established"])
