"""``scaleset doctor`` as a function: build the client from the kubeconfig (and context),
diagnose, print, return the exit code (``ExitCode``)."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Mapping
from pathlib import Path

from scaleset.clock import SystemClock
from scaleset.doctor.diagnose import diagnose
from scaleset.doctor.findings import Report
from scaleset.doctor.options import BadOption, GitHubOptions, github_access
from scaleset.doctor.registrations import GitHubAccess
from scaleset.doctor.report import as_json, as_table
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import KubeConfigError

OUTPUTS = ("table", "json")

__all__ = ["BadOption", "ExitCode", "GitHubOptions", "run_doctor"]


class ExitCode(enum.IntEnum):
    HEALTHY = 0
    """Every check that ran found nothing."""
    FINDINGS = 1
    """At least one finding."""
    BAD_OPTIONS = 2
    """An option the doctor cannot use (kubeconfig, context, output, GitHub options)."""
    COULD_NOT_LOOK = 3
    """The API server unreachable or refusing, the namespace missing, every read refused, or
    no scale set there: nothing could be said about health."""


def exit_code(report: Report) -> ExitCode:
    if report.findings:
        return ExitCode.FINDINGS
    if not report.healthy:
        return ExitCode.COULD_NOT_LOOK
    return ExitCode.HEALTHY


def run_doctor(
    *,
    kubeconfig: Path | None,
    namespace: str | None,
    output: str,
    environ: Mapping[str, str],
    echo: Callable[[str], None],
    context: str | None = None,
    github: GitHubOptions | None = None,
) -> int:
    """Raises ``BadOption`` (exit 2) before anything is sent."""
    if output not in OUTPUTS:
        raise BadOption(f"--output {output!r}: use one of {', '.join(OUTPUTS)}")
    access = github_access(github or GitHubOptions(), environ)
    try:
        client = KubeClient.from_kubeconfig(kubeconfig, context=context)
    except (KubeConfigError, OSError, ValueError) as error:
        raise BadOption(str(error)) from None
    return asyncio.run(_run(client, namespace, output, access, echo))


async def _run(
    client: KubeClient,
    namespace: str | None,
    output: str,
    access: GitHubAccess,
    echo: Callable[[str], None],
) -> int:
    try:
        report = await diagnose(client, SystemClock(), namespace=namespace, github=access)
    finally:
        await client.close()
    echo(as_json(report) if output == "json" else as_table(report))
    return exit_code(report)
