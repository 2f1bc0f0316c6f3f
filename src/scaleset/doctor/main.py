"""``scaleset doctor`` as a function: build the client from the kubeconfig, diagnose, print,
return the exit code — 0 healthy, 1 something found, 2 bad options (bad kubeconfig, unknown
output format), 3 nothing could be checked (every Kubernetes read failed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import SecretStr

from scaleset.clock import SystemClock
from scaleset.doctor.checks import KUBERNETES_CHECKS
from scaleset.doctor.diagnose import diagnose
from scaleset.doctor.report import as_json, as_table
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import KubeConfigError

OUTPUTS = ("table", "json")
TOKEN_VARIABLE = "GITHUB_TOKEN"  # noqa: S105 (the name of the variable, not a token)


class BadOption(ValueError):
    """An option the doctor cannot run with (exit 2)."""


def run_doctor(
    *,
    kubeconfig: Path | None,
    namespace: str | None,
    output: str,
    environ: Mapping[str, str],
    echo: Callable[[str], None],
) -> int:
    if output not in OUTPUTS:
        raise BadOption(f"--output {output!r}: use one of {', '.join(OUTPUTS)}")
    try:
        client = KubeClient.from_kubeconfig(kubeconfig)
    except (KubeConfigError, OSError, ValueError) as error:
        raise BadOption(str(error)) from None
    token = environ.get(TOKEN_VARIABLE, "").strip()
    return asyncio.run(
        _run(client, namespace, output, SecretStr(token) if token else None, environ, echo)
    )


async def _run(
    client: KubeClient,
    namespace: str | None,
    output: str,
    token: SecretStr | None,
    environ: Mapping[str, str],
    echo: Callable[[str], None],
) -> int:
    try:
        report = await diagnose(
            client, SystemClock(), namespace=namespace, github_token=token, environ=environ
        )
    finally:
        await client.close()
    echo(as_json(report) if output == "json" else as_table(report))
    if not report.healthy:
        return 1
    if not any(name in report.checked for name in KUBERNETES_CHECKS):
        return 3
    return 0
