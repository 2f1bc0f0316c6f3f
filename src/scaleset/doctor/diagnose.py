"""One doctor run: collect (read-only), run every check whose reads succeeded, and say which
were skipped — or, when the doctor could not look (API server unreachable, namespace missing,
every read refused, no scale set there), say that instead of anything about health."""

from __future__ import annotations

from scaleset.clock import Clock
from scaleset.doctor.checks import GITHUB_CHECKS, KUBERNETES_CHECKS, run_checks
from scaleset.doctor.collect import Collected, collect
from scaleset.doctor.findings import Report
from scaleset.doctor.inventory import Thresholds
from scaleset.doctor.registrations import GitHubAccess
from scaleset.kube.client import KubeClient


async def diagnose(
    client: KubeClient,
    clock: Clock,
    *,
    namespace: str | None = None,
    github: GitHubAccess | None = None,
    thresholds: Thresholds | None = None,
) -> Report:
    collected = await collect(client, clock, namespace=namespace, github=github)
    if collected.could_not_look:
        return Report(could_not_look=collected.could_not_look)
    ran: list[str] = []
    skipped = []
    for name in [*KUBERNETES_CHECKS, *GITHUB_CHECKS]:
        reason = collected.skipped(name)
        if reason is None:
            ran.append(name)
        else:
            skipped.append(reason)
    findings = run_checks(collected.inventory, thresholds or Thresholds(), ran)
    nothing = "no check could run (each is skipped below)" if not ran else ""
    return Report(
        tuple(findings),
        tuple(skipped),
        tuple(ran),
        nothing or _nothing_there(collected, namespace),
    )


def _nothing_there(collected: Collected, namespace: str | None) -> str:
    """Why there is nothing to diagnose, when no scale set, runner set or runner was seen (and
    their reads succeeded); ``""`` otherwise."""
    inventory = collected.inventory
    reads = ("scale sets", "runner sets", "runners")
    if any(read in collected.failed_reads for read in reads):
        return ""
    if inventory.scale_sets or inventory.runner_sets or inventory.runners:
        return ""
    where = f"namespace {namespace!r}" if namespace is not None else "the cluster"
    return (
        f"no scale sets in {where} (no AutoscalingRunnerSet, EphemeralRunnerSet or "
        "EphemeralRunner): nothing to diagnose"
    )
