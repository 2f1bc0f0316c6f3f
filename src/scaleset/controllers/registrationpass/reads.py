"""Where a registration pass reads the set's EphemeralRunners and which runner pods run: fresh
lists from the API server (``FreshReads``), or the controller's caches (``CachedReads``).

A pass plans on the caches first, and a plan with nothing to do ends the pass: a settled scale
set costs the API server no request (the caches are the watches the controllers hold anyway).
A plan that would act is made again on fresh reads, in the order ``observed`` explains: a cache
may be behind, and a runner created a moment ago that it does not show yet would make its
registration look like an orphan. Only the fresh plan is applied.
"""

from __future__ import annotations

from typing import Protocol

from scaleset.api import keys
from scaleset.kube.client import KubeClient
from scaleset.kube.objects import KubeObject, Projection, identity, pod_phase, share_subtrees
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD
from scaleset.runtime.informer import Informer


class Reads(Protocol):
    """The two reads of a pass that are not GitHub's."""

    async def runners(self, runner_set: KubeObject, *, names_only: bool) -> dict[str, KubeObject]:
        """The set's EphemeralRunners by name (``names_only``: identity and ownership only)."""
        ...

    async def running_pods(self, namespace: str) -> set[str]:
        """Names of the runner pods of ``namespace`` that run and are not being deleted."""
        ...


class FreshReads:
    """Lists from the API server; each page is projected as it is decoded, so only one page of
    whole objects is ever held beside what the projection keeps."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube

    async def runners(self, runner_set: KubeObject, *, names_only: bool) -> dict[str, KubeObject]:
        projection: Projection = identity if names_only else share_subtrees
        listed = await self._kube.list(
            EPHEMERAL_RUNNER, namespace=runner_set.namespace, projection=projection
        )
        return _owned_by(runner_set, listed.items)

    async def running_pods(self, namespace: str) -> set[str]:
        pods = await self._kube.list(
            POD, namespace=namespace, label_selector=keys.RUNNER_POD_SELECTOR, projection=pod_phase
        )
        return _running(pods.items)


class CachedReads:
    """The controller's caches of EphemeralRunners and of runner pods: no request."""

    def __init__(self, runners: Informer, pods: Informer) -> None:
        self._runners = runners
        self._pods = pods

    async def runners(self, runner_set: KubeObject, *, names_only: bool) -> dict[str, KubeObject]:
        return _owned_by(runner_set, self._runners.by_owner(runner_set.uid))

    async def running_pods(self, namespace: str) -> set[str]:
        return _running(self._pods.list(namespace))


def _owned_by(runner_set: KubeObject, objects: list[KubeObject]) -> dict[str, KubeObject]:
    return {
        obj.name: obj
        for obj in objects
        if obj.namespace == runner_set.namespace
        and (owner := obj.controller_owner) is not None
        and owner.uid == runner_set.uid
    }


def _running(pods: list[KubeObject]) -> set[str]:
    return {
        pod.name for pod in pods if not pod.is_deleting and pod.status.get("phase") == "Running"
    }
