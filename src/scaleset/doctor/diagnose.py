"""One doctor run: collect (read-only), run every check whose reads succeeded, and say which
were skipped. Exit codes of the command: 0 healthy, 1 something found."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import SecretStr

from scaleset.clock import Clock
from scaleset.doctor.checks import GITHUB_CHECKS, KUBERNETES_CHECKS, run_checks
from scaleset.doctor.collect import collect
from scaleset.doctor.findings import Report
from scaleset.doctor.inventory import Thresholds
from scaleset.kube.client import KubeClient


async def diagnose(
    client: KubeClient,
    clock: Clock,
    *,
    namespace: str | None = None,
    github_token: SecretStr | None = None,
    thresholds: Thresholds | None = None,
    environ: Mapping[str, str] | None = None,
) -> Report:
    collected = await collect(
        client, clock, namespace=namespace, github_token=github_token, environ=environ
    )
    ran: list[str] = []
    skipped = []
    for name in [*KUBERNETES_CHECKS, *GITHUB_CHECKS]:
        reason = collected.skipped(name)
        if reason is None:
            ran.append(name)
        else:
            skipped.append(reason)
    findings = run_checks(collected.inventory, thresholds or Thresholds(), ran)
    return Report(tuple(findings), tuple(skipped), tuple(ran))
