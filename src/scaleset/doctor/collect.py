"""Reads what the doctor needs, and nothing but reads (get and list): the runners, their pods,
the sets, the listeners and their pods, the four CRDs, and — with a GitHub token — GitHub's
REST runners list per githubConfigUrl. A read that is refused (RBAC) or fails makes the checks
that need it "skipped" with the reason, never a crash."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import SecretStr

from scaleset.api import KINDS, keys
from scaleset.clock import Clock
from scaleset.doctor.findings import Skipped
from scaleset.doctor.inventory import Inventory, JsonObject
from scaleset.github import ActionsClient, GitHubError, PersonalAccessToken
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import KubeError, NotFound
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    CUSTOM_RESOURCE_DEFINITION,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    POD,
    Kind,
)

RUNNER_POD_SELECTOR = f"{keys.EPHEMERAL_RUNNER_LABEL}={keys.EPHEMERAL_RUNNER_LABEL_VALUE}"
LISTENER_POD_SELECTOR = f"{keys.COMPONENT_LABEL}={keys.COMPONENT_LISTENER}"

NEEDS: Mapping[str, tuple[str, ...]] = {
    "pod-newer-than-runner": ("runners", "runner pods"),
    "running-without-job": ("runners",),
    "stuck-deleting": ("runners", "runner sets"),
    "terminal-holding-slot": ("runners",),
    "idle-past-age": ("runners",),
    "crd-outdated": ("crds",),
    "listener-session-conflict": ("listeners",),
    "listener-crash-loop": ("listener pods",),
    "registration-missing": ("runners", "github"),
}
"""Which reads each check needs."""


@dataclass
class Collected:
    inventory: Inventory
    failed_reads: dict[str, str] = field(default_factory=dict)
    """Read name → why it failed."""

    def skipped(self, check: str) -> Skipped | None:
        for read in NEEDS[check]:
            if read in self.failed_reads:
                return Skipped(check, f"{read}: {self.failed_reads[read]}")
        return None


async def collect(
    client: KubeClient,
    clock: Clock,
    *,
    namespace: str | None = None,
    github_token: SecretStr | None = None,
    environ: Mapping[str, str] | None = None,
) -> Collected:
    failed: dict[str, str] = {}

    async def listed(name: str, kind: Kind, selector: str | None = None) -> tuple[JsonObject, ...]:
        try:
            result = await client.list(kind, namespace=namespace, label_selector=selector)
        except KubeError as error:
            failed[name] = _kube_reason(error)
            return ()
        return tuple(item.raw for item in result.items)

    runners = await listed("runners", EPHEMERAL_RUNNER)
    runner_pods = await listed("runner pods", POD, RUNNER_POD_SELECTOR)
    runner_sets = await listed("runner sets", EPHEMERAL_RUNNER_SET)
    listeners = await listed("listeners", AUTOSCALING_LISTENER)
    listener_pods = await _listener_pods(client, namespace, failed)
    crds: dict[str, JsonObject | None] = {}
    for info in KINDS:
        try:
            crd = await client.get(CUSTOM_RESOURCE_DEFINITION, ObjectKey("", info.crd_name))
        except NotFound:
            crds[info.crd_name] = None
        except KubeError as error:
            failed["crds"] = _kube_reason(error)
            crds = {}
            break
        else:
            crds[info.crd_name] = crd.raw
    registered: dict[str, frozenset[int]] | None = None
    if github_token is None:
        failed["github"] = "no GitHub token (set GITHUB_TOKEN to check registrations)"
    else:
        registered = await _registrations(runners, github_token, clock, environ, failed)
    inventory = Inventory(
        now=clock.now(),
        runners=runners,
        runner_pods=runner_pods,
        runner_sets=runner_sets,
        listeners=listeners,
        listener_pods=listener_pods,
        crds=crds,
        registered_ids=registered,
    )
    return Collected(inventory, failed)


async def _listener_pods(
    client: KubeClient, namespace: str | None, failed: dict[str, str]
) -> tuple[JsonObject, ...]:
    """Listener pods live in the controller's namespace, often not the runners'. With a
    ``namespace``: the listener pods of its scale sets, found everywhere by their
    ``scale-set-namespace`` label; when that cluster-wide list is refused, those in
    ``namespace`` itself."""
    attempts: list[tuple[str | None, str]] = [(None, LISTENER_POD_SELECTOR)]
    if namespace is not None:
        attempts = [
            (None, f"{LISTENER_POD_SELECTOR},{keys.SCALE_SET_NAMESPACE_LABEL}={namespace}"),
            (namespace, LISTENER_POD_SELECTOR),
        ]
    reason = ""
    for scope, selector in attempts:
        try:
            result = await client.list(POD, namespace=scope, label_selector=selector)
        except KubeError as error:
            reason = _kube_reason(error)
            continue
        return tuple(item.raw for item in result.items)
    failed["listener pods"] = reason
    return ()


async def _registrations(
    runners: tuple[JsonObject, ...],
    token: SecretStr,
    clock: Clock,
    environ: Mapping[str, str] | None,
    failed: dict[str, str],
) -> dict[str, frozenset[int]] | None:
    urls = sorted(
        {
            str(spec.get("githubConfigUrl"))
            for runner in runners
            if isinstance(spec := runner.get("spec"), dict) and spec.get("githubConfigUrl")
        }
    )
    registered: dict[str, frozenset[int]] = {}
    for url in urls:
        try:
            async with ActionsClient(
                url, PersonalAccessToken(token=token), clock=clock, environ=environ
            ) as github:
                listed = await github.list_runners()
        except (GitHubError, ValueError) as error:
            failed["github"] = f"{url}: {type(error).__name__}: {error}"
            return None
        registered[url] = frozenset(r.id for r in listed)
    return registered


def _kube_reason(error: KubeError) -> str:
    return f"{type(error).__name__} ({getattr(error, 'code', '')})".replace(" ()", "")
