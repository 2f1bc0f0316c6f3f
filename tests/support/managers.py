"""Managers for tests: in-process (optionally on a ``ManualClock``), child processes, lease reads.

``new_manager`` builds a ``Manager`` with test-sized lease timings for one namespace, on the
clock it is given (``ManualClock`` for anything that depends on time); ``running`` runs it in a
task and stops it on exit. ``Process``/``processes`` start child processes that tests may kill
with SIGKILL (and nothing else).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from scaleset.clock import Clock, ManualClock
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import NotFound
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import LEASE
from scaleset.runtime.leader import LeaderElectionConfig, LeaseRecord
from scaleset.runtime.manager import Manager, ManagerSettings
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.netfaults import TcpProxy
from tests.support.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
SCALESET = Path(sys.executable).with_name("scaleset")


@dataclass(frozen=True)
class Timings:
    """Lease timings (short by default, for tests on the real clock)."""

    lease_duration: float = 3.0
    renew_deadline: float = 2.0
    retry_period: float = 0.25


CALM = Timings(lease_duration=3600.0, renew_deadline=2400.0, retry_period=600.0)
"""For a manager on a ``ManualClock`` whose test moves time by minutes for other reasons: the
lease is renewed every 10 virtual minutes, so advancing the clock never costs leadership."""


def manual_manager(
    client: KubeClient, namespace: str, identity: str, clock: ManualClock, **settings: object
) -> Manager:
    """``new_manager`` on ``clock`` with ``CALM`` lease timings."""
    settings.setdefault("timings", CALM)
    return new_manager(client, namespace, identity, clock=clock, **settings)  # type: ignore[arg-type]


def new_manager(
    client: KubeClient,
    namespace: str,
    identity: str,
    *,
    lease: str = "test-lease",
    timings: Timings = Timings(),
    metrics: RuntimeMetrics | None = None,
    clock: Clock | None = None,
    election_client: KubeClient | None = None,
    **settings: object,
) -> Manager:
    """A manager for ``namespace`` (its caches there, unless ``namespaces`` says where) with
    production settings unless ``settings`` say otherwise,
    except that it binds no fixed port (no metrics server unless ``metrics_address`` is given;
    tests pass ``127.0.0.1:0``)."""
    metrics = metrics or RuntimeMetrics(CollectorRegistry())
    settings.setdefault("metrics_address", "0")
    settings.setdefault("namespaces", [namespace])
    return Manager(
        client,
        ManagerSettings(
            election=LeaderElectionConfig(
                lease_name=lease,
                namespace=namespace,
                identity=identity,
                lease_duration=timings.lease_duration,
                renew_deadline=timings.renew_deadline,
                retry_period=timings.retry_period,
            ),
            **settings,  # type: ignore[arg-type]
        ),
        metrics=metrics,
        clock=clock,
        election_client=election_client,
    )


@asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``manager`` in a task; stop it (and wait) on exit."""
    task = asyncio.ensure_future(manager.run())
    try:
        yield task
    finally:
        manager.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, 30.0)


async def lease_record(client: KubeClient, namespace: str, name: str) -> LeaseRecord | None:
    try:
        lease = await client.get(LEASE, ObjectKey(namespace, name))
    except NotFound:
        return None
    return LeaseRecord.from_lease(lease)


async def wait_holder(client: KubeClient, namespace: str, name: str, holder: str) -> None:
    async def held() -> bool:
        record = await lease_record(client, namespace, name)
        return record is not None and record.holder == holder

    await eventually(held, within=30.0, what=f"lease held by {holder!r}")


def client_for(backend: KubeBackend, proxy: TcpProxy | None = None) -> KubeClient:
    return make_client(backend, proxy=proxy)


class Process:
    """A child process (``kill()`` is SIGKILL — kill -9 — and nothing else is touched)."""

    def __init__(self, proc: asyncio.subprocess.Process, log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path

    @classmethod
    async def start(cls, argv: list[str], log_path: Path, env: dict[str, str]) -> Process:
        log_file = log_path.open("wb")
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO), **env},
            )
        finally:
            log_file.close()
        return cls(proc, log_path)

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)

    async def wait(self, within: float = 30.0) -> int:
        return await asyncio.wait_for(self.proc.wait(), within)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@asynccontextmanager
async def processes() -> AsyncIterator[list[Process]]:
    """Collects started processes and SIGKILLs any still running on exit."""
    started: list[Process] = []
    try:
        yield started
    finally:
        for process in started:
            process.kill()
            with contextlib.suppress(Exception):
                await process.wait(10.0)


def reconcile_count(registry: CollectorRegistry, controller: str) -> float:
    """Reconciles of ``controller`` finished so far (any outcome), as its manager counted them
    into ``registry``."""
    return sum(
        sample.value
        for metric in registry.collect()
        if metric.name == "controller_runtime_reconcile"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("controller") == controller
    )
