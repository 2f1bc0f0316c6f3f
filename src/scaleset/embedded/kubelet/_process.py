"""One running container process: a program's task plus SIGTERM, SIGKILL and "hang".

``terminate()`` is SIGTERM (sets the program's ``stop`` event); ``kill()`` is SIGKILL (cancels
the task) and records why (137 ``Error`` for a grace-period kill, 137 ``OOMKilled``). A *hung*
process ignores SIGTERM and, when its program returns, does not exit: only ``kill()`` ends it.
``wait()`` never raises: it returns the ``Exit`` however the process ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import NamedTuple

from scaleset.embedded.kubelet.programs import ContainerRun, Program
from scaleset.embedded.kubelet.status import ERROR, exit_reason
from scaleset.logs import get_logger

log = get_logger(__name__)

SIGKILL_EXIT = 137
CRASH_EXIT = 1


class Exit(NamedTuple):
    code: int
    reason: str


class ContainerProcess:
    """The program of one container start, running as its own task."""

    def __init__(self, program: Program, run: ContainerRun, hung: Callable[[], bool]) -> None:
        self.run = run
        self._program = program
        self._hung = hung
        self._forced: Exit | None = None
        self.task: asyncio.Task[int] = asyncio.ensure_future(self._main())

    async def _main(self) -> int:
        try:
            code = await self._program(self.run)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "container program crashed",
                pod=str(self.run.pod),
                container=self.run.container,
                image=self.run.image,
            )
            code = CRASH_EXIT
        while self._hung():  # a hung process does not exit; only SIGKILL ends it
            await asyncio.Event().wait()
        return int(code) & 0xFF

    @property
    def done(self) -> bool:
        return self.task.done()

    def terminate(self) -> None:
        """SIGTERM: ask the program to stop (ignored while hung)."""
        if not self._hung():
            self.run.stop.set()

    def kill(self, code: int = SIGKILL_EXIT, reason: str = ERROR) -> None:
        """SIGKILL: end the program now; the exit is reported as ``code``/``reason``."""
        if not self.task.done():
            self._forced = Exit(code, reason)
            self.task.cancel()

    async def wait(self) -> Exit:
        await asyncio.wait({self.task})
        if self._forced is not None:
            return self._forced
        if self.task.cancelled():
            return Exit(SIGKILL_EXIT, ERROR)
        code = self.task.result()
        return Exit(code, exit_reason(code))
