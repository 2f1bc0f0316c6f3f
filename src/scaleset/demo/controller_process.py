"""The demo's controller manager as an operating-system process (``controller_worker``).

The soak kills its controller the way a node failure or an OOM kill does: ``SIGKILL`` to a
process of its own — nothing of it runs afterwards (no ``finally`` block, no drain, no lease
release, no HTTP request finished on its behalf), and its successor has nothing of it in memory.
A graceful stop is ``SIGTERM`` (the manager drains and releases its lease). Whether a manager
leads is read where a cluster keeps it: the Lease's ``holderIdentity``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping

from scaleset.controllers.options import ControllerOptions
from scaleset.demo.controller_worker import options_to_json
from scaleset.kube import KubeClient, NotFound, ObjectKey
from scaleset.kube.errors import KubeError
from scaleset.kube.resources import LEASE

STOP_SECONDS = 60.0
"""How long a graceful stop may take before the process is killed (its drain is bounded by
``graceful_shutdown``, 30 s by default)."""


class ControllerProcess:
    """One controller manager process: started, then stopped (SIGTERM) or killed (SIGKILL)."""

    def __init__(self, options: ControllerOptions, environ: Mapping[str, str]) -> None:
        self.options = options
        self._environ = dict(environ)
        self._process: asyncio.subprocess.Process | None = None
        self._ended_by_us = False

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "scaleset.demo.controller_worker",
            options_to_json(self.options),
            env={**os.environ, **self._environ},
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        """The exit status once it ended (``-9``: killed by SIGKILL), else ``None``."""
        return self._process.returncode if self._process is not None else None

    async def stop(self) -> None:
        """SIGTERM, and wait for the process to end (killed if it does not in time)."""
        await self._end(signal.SIGTERM)

    async def kill(self) -> None:
        """SIGKILL, and wait for the process to be gone."""
        await self._end(signal.SIGKILL)

    async def _end(self, signum: signal.Signals) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        self._ended_by_us = True
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)
        try:
            await asyncio.wait_for(process.wait(), STOP_SECONDS)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()

    def exited_on_its_own(self) -> int | None:
        """The exit code, when the process ended without being told to."""
        process = self._process
        if process is None or process.returncode is None or self._ended_by_us:
            return None
        return process.returncode

    async def leading(self, client: KubeClient) -> bool:
        """Whether this process's manager holds the lease (read from the API server)."""
        options = self.options
        namespace = options.leader_election_namespace or options.controller_namespace
        try:
            lease = await client.get(LEASE, ObjectKey(namespace, options.leader_election_id))
        except (NotFound, KubeError):
            return False
        holder = (lease.raw.get("spec") or {}).get("holderIdentity") or ""
        return bool(holder) and holder == options.identity
