"""Reads what the doctor needs, and nothing but reads (get and list): the namespace, the
AutoscalingRunnerSets, the runners, their pods and sets, the listeners (everywhere, kept by the
namespace they serve) and their pods, the controller pods and their leader-election Leases, the
four CRDs, and — with GitHub credentials — GitHub's REST runners list per approved
githubConfigUrl (``registrations``).

A read that is refused (RBAC) or fails makes the checks that need it "skipped" with the reason,
never a crash. When the doctor cannot look at all — the API server unreachable or refusing the
kubeconfig's credentials, the namespace missing, every read refused — it says that, in one line
(``could_not_look``), and nothing is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scaleset.api import KINDS, keys
from scaleset.clock import Clock
from scaleset.doctor import controller_pods, fields
from scaleset.doctor.findings import Skipped
from scaleset.doctor.github_checks import config_urls
from scaleset.doctor.inventory import Inventory, JsonObject
from scaleset.doctor.registrations import GitHubAccess, registered_ids
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import KubeError, KubeTransportError, NotFound, Unauthorized
from scaleset.kube.objects import ObjectKey, drop_managed_fields
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    CUSTOM_RESOURCE_DEFINITION,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    LEASE,
    NAMESPACE,
    POD,
    Kind,
)

LISTENER_POD_SELECTOR = f"{keys.COMPONENT_LABEL}={keys.COMPONENT_LISTENER}"

NEEDS: Mapping[str, tuple[str, ...]] = {
    "controller-missing": ("scale sets", "controller pods"),
    "controller-not-leading": ("controller pods", "leases"),
    "scale-set-condition": ("scale sets",),
    "listener-missing": ("scale sets", "listeners", "listener pods"),
    "runner-version-deprecated": ("runners", "runner pods", "runner sets", "scale sets"),
    "runner-pod-missing": ("runners", "runner pods"),
    "pod-newer-than-runner": ("runners", "runner pods"),
    "running-without-job": ("runners", "runner pods"),
    "stuck-deleting": ("runners", "runner sets"),
    "terminal-holding-slot": ("runners",),
    "idle-past-age": ("runners",),
    "crd-outdated": ("crds",),
    "listener-session-conflict": ("listeners",),
    "listener-crash-loop": ("listener pods",),
    "github-host-not-allowed": ("scale sets", "runners"),
    "registration-missing": ("runners", "github"),
}
"""Which reads each check needs."""
KUBERNETES_READS = (
    "scale sets",
    "runners",
    "runner pods",
    "runner sets",
    "listeners",
    "listener pods",
    "controller pods",
    "leases",
    "crds",
)


@dataclass
class Collected:
    inventory: Inventory
    failed_reads: dict[str, str] = field(default_factory=dict)
    """Read name → why it failed."""
    could_not_look: str = ""
    """Set when nothing could be looked at (see the module docstring)."""

    def skipped(self, check: str) -> Skipped | None:
        for read in NEEDS[check]:
            if read in self.failed_reads:
                return Skipped(check, f"{read}: {self.failed_reads[read]}")
        return None

    @property
    def scale_set_count(self) -> int:
        """AutoscalingRunnerSets, or — where ARC's chart did not make them — runner sets."""
        return len(self.inventory.scale_sets) or len(self.inventory.runner_sets)


class _CannotLook(Exception):
    """The API server cannot be talked to: nothing else is worth trying."""


async def collect(
    client: KubeClient,
    clock: Clock,
    *,
    namespace: str | None = None,
    github: GitHubAccess | None = None,
) -> Collected:
    access = github or GitHubAccess()
    try:
        return await _collect(client, clock, namespace, access)
    except _CannotLook as error:
        return Collected(
            Inventory(now=clock.now(), github_hosts=access.hosts), could_not_look=str(error)
        )


async def _collect(
    client: KubeClient, clock: Clock, namespace: str | None, access: GitHubAccess
) -> Collected:
    reader = _Reader(client)
    if namespace is not None and not await reader.namespace_exists(namespace):
        return Collected(
            Inventory(now=clock.now(), github_hosts=access.hosts),
            could_not_look=f"namespace {namespace!r} does not exist (kubectl get namespaces)",
        )
    scale_sets = await reader.listed("scale sets", AUTOSCALING_RUNNER_SET, namespace)
    runners = await reader.listed("runners", EPHEMERAL_RUNNER, namespace, keep_change_times=True)
    runner_pods = await reader.listed("runner pods", POD, namespace, keys.RUNNER_POD_SELECTOR)
    runner_sets = await reader.listed("runner sets", EPHEMERAL_RUNNER_SET, namespace)
    listeners = await reader.listeners(namespace)
    listener_pods = await reader.listener_pods(namespace)
    controllers = await reader.controller_pods(namespace)
    leases = await reader.leases(controllers)
    crds = await reader.crds()
    if all(read in reader.failed for read in KUBERNETES_READS if read != "leases"):
        reasons = sorted(set(reader.failed.values()))
        raise _CannotLook(f"every read was refused ({', '.join(reasons)}): {_where(client)}")
    urls = config_urls(Inventory(now=clock.now(), runners=runners))
    registered, github_failure = await registered_ids(urls, access, clock)
    if github_failure is not None:
        reader.failed["github"] = github_failure
    inventory = Inventory(
        now=clock.now(),
        runners=runners,
        runner_pods=runner_pods,
        runner_sets=runner_sets,
        scale_sets=scale_sets,
        listeners=listeners,
        listener_pods=listener_pods,
        controller_pods=controllers,
        leases=leases,
        crds=crds,
        registered_ids=None if github_failure is not None else registered,
        github_hosts=access.hosts,
    )
    return Collected(inventory, reader.failed)


def _where(client: KubeClient) -> str:
    return f"the Kubernetes API server at {client.base_url.rstrip('/')}"


def _reason(error: KubeError) -> str:
    return f"{type(error).__name__} ({getattr(error, 'code', '')})".replace(" ()", "")


def _keep_change_times(raw: dict[str, Any]) -> dict[str, Any]:
    """Drop ``managedFields`` but the time of each entry (when each writer last changed it)."""
    meta = raw.get("metadata")
    if isinstance(meta, dict):
        times = [{"time": e.get("time")} for e in fields.dicts(meta.pop("managedFields", None))]
        meta["managedFields"] = [entry for entry in times if entry["time"]]
    return raw


class _Reader:
    """Every read the doctor sends, each one recorded as failed (with why) or not."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.failed: dict[str, str] = {}

    def _fatal(self, error: KubeError) -> None:
        """No answer, or the credentials refused: nothing else will work either."""
        if isinstance(error, KubeTransportError):
            raise _CannotLook(f"cannot reach {_where(self.client)}: {error}") from None
        if isinstance(error, Unauthorized):
            raise _CannotLook(
                f"{_where(self.client)} refused the kubeconfig's credentials (401 Unauthorized)"
            ) from None

    async def namespace_exists(self, namespace: str) -> bool:
        try:
            await self.client.get(NAMESPACE, ObjectKey("", namespace))
        except NotFound:
            return False
        except KubeError as error:
            self._fatal(error)  # refused (RBAC): cannot tell, look anyway
        return True

    async def listed(
        self,
        name: str,
        kind: Kind,
        namespace: str | None,
        selector: str | None = None,
        *,
        keep_change_times: bool = False,
    ) -> tuple[JsonObject, ...]:
        """The objects, or none with ``name`` recorded in ``failed``."""
        projection = _keep_change_times if keep_change_times else drop_managed_fields
        try:
            result = await self.client.list(
                kind, namespace=namespace, label_selector=selector, projection=projection
            )
        except KubeError as error:
            self._fatal(error)
            served = " — the kind is not served: its CRD is not installed"
            self.failed[name] = _reason(error) + (served if isinstance(error, NotFound) else "")
            return ()
        return tuple(item.raw for item in result.items)

    async def listeners(self, namespace: str | None) -> tuple[JsonObject, ...]:
        """Listeners live in the controller's namespace: listed everywhere, kept by the
        namespace of the scale set they serve."""
        found = await self.listed("listeners", AUTOSCALING_LISTENER, None)
        if namespace is None:
            return found
        return tuple(
            item
            for item in found
            if fields.spec(item).get("autoscalingRunnerSetNamespace") == namespace
        )

    async def listener_pods(self, namespace: str | None) -> tuple[JsonObject, ...]:
        """With ``namespace``: the listener pods of its scale sets, found everywhere by their
        ``scale-set-namespace`` label; when that cluster-wide list is refused, those in
        ``namespace`` itself."""
        if namespace is None:
            return await self.listed("listener pods", POD, None, LISTENER_POD_SELECTOR)
        selector = f"{LISTENER_POD_SELECTOR},{keys.SCALE_SET_NAMESPACE_LABEL}={namespace}"
        everywhere = await self.listed("listener pods", POD, None, selector)
        if self.failed.pop("listener pods", None) is None:
            return everywhere
        return await self.listed("listener pods", POD, namespace, LISTENER_POD_SELECTOR)

    async def controller_pods(self, namespace: str | None) -> tuple[JsonObject, ...]:
        """The controller pods (any namespace) that serve ``namespace`` (all without one)."""
        found = await self.listed(
            "controller pods", POD, None, controller_pods.CONTROLLER_POD_SELECTOR
        )
        if namespace is None:
            return found
        return tuple(pod for pod in found if controller_pods.serves(pod, namespace))

    async def leases(
        self, pods: tuple[JsonObject, ...]
    ) -> dict[tuple[str, str], JsonObject | None]:
        leases: dict[tuple[str, str], JsonObject | None] = {}
        for key in sorted({k for pod in pods if (k := controller_pods.lease_key(pod))}):
            try:
                lease = await self.client.get(LEASE, ObjectKey(*key))
            except NotFound:
                leases[key] = None
            except KubeError as error:
                self._fatal(error)
                self.failed["leases"] = _reason(error)
                return {}
            else:
                leases[key] = lease.raw
        return leases

    async def crds(self) -> dict[str, JsonObject | None]:
        crds: dict[str, JsonObject | None] = {}
        for info in KINDS:
            try:
                crd = await self.client.get(
                    CUSTOM_RESOURCE_DEFINITION, ObjectKey("", info.crd_name)
                )
            except NotFound:
                crds[info.crd_name] = None
            except KubeError as error:
                self._fatal(error)
                self.failed["crds"] = _reason(error)
                return {}
            else:
                crds[info.crd_name] = crd.raw
        return crds
