"""The container runtime of the simulated kubelet: images map to async programs.

A **program** is ``async def program(run: ContainerRun) -> int``: it gets the container's spec,
its resolved environment and files, the kubelet's clock and a ``stop`` event (SIGTERM), and
returns the exit code. Returning ends the container; cancellation is SIGKILL (the kubelet then
reports exit code 137). A program that raises is a crashed process: exit code 1, logged.

``ContainerRuntime`` picks the program for an image: the first matching ``fnmatch`` pattern of
its table (``ghcr.io/actions/actions-runner:*``), else its default program. Image pulls of
images matching a ``missing_images`` pattern fail as a real registry's "not found" would.

Built-in programs: ``until_stopped(exit_code)`` (the default: runs until SIGTERM, then exits
with ``exit_code``), ``exit_after(seconds, exit_code)`` (exits by itself after ``seconds`` of
the kubelet's clock, or at SIGTERM). The simulated runner's adapter is ``runner_program``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scaleset.clock import Clock
from scaleset.kube import ObjectKey


@dataclass(frozen=True)
class ContainerRun:
    """One start of one container: everything its program may look at."""

    pod: ObjectKey
    pod_uid: str
    node: str
    container: str
    image: str
    spec: Mapping[str, Any]
    env: Mapping[str, str]
    files: Mapping[str, bytes]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    init: bool
    restart_count: int
    clock: Clock
    stop: asyncio.Event
    """Set when the kubelet sends SIGTERM (graceful deletion, eviction of a soft kind)."""

    def __repr__(self) -> str:
        # The environment and files hold secrets (a JIT config): never in a repr.
        return f"ContainerRun({self.pod}/{self.container} image={self.image!r})"

    async def sleep_or_stop(self, seconds: float) -> bool:
        """Sleep ``seconds`` on the kubelet's clock; ``True`` if SIGTERM came first."""
        if self.stop.is_set():
            return True
        nap = asyncio.ensure_future(self.clock.sleep(seconds))
        stop = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({nap, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (nap, stop):
                task.cancel()
            for task in (nap, stop):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        return self.stop.is_set()


Program = Callable[[ContainerRun], Awaitable[int]]


def until_stopped(exit_code: int = 0) -> Program:
    """Runs until SIGTERM, then exits with ``exit_code`` (a well-behaved server process)."""

    async def program(run: ContainerRun) -> int:
        await run.stop.wait()
        return exit_code

    return program


def exit_after(seconds: float, exit_code: int = 0, *, on_stop: int = 0) -> Program:
    """Exits with ``exit_code`` after ``seconds`` of clock time; with ``on_stop`` at SIGTERM."""

    async def program(run: ContainerRun) -> int:
        if await run.sleep_or_stop(seconds):
            return on_stop
        return exit_code

    return program


class ContainerRuntime:
    """Image pattern -> program, plus images the "registry" does not have."""

    def __init__(
        self,
        programs: Mapping[str, Program] | Sequence[tuple[str, Program]] = (),
        *,
        default: Program | None = None,
        missing_images: Sequence[str] = (),
    ) -> None:
        items = list(programs.items()) if isinstance(programs, Mapping) else list(programs)
        self._programs: list[tuple[str, Program]] = items
        self.default = default or until_stopped()
        self.missing_images = tuple(missing_images)

    def with_program(self, pattern: str, program: Program) -> ContainerRuntime:
        """A copy where ``pattern`` (matched before the existing ones) runs ``program``."""
        return ContainerRuntime(
            [(pattern, program), *self._programs],
            default=self.default,
            missing_images=self.missing_images,
        )

    def program_for(self, image: str) -> Program:
        for pattern, program in self._programs:
            if fnmatch.fnmatchcase(image, pattern):
                return program
        return self.default

    def image_missing(self, image: str) -> bool:
        return any(fnmatch.fnmatchcase(image, pattern) for pattern in self.missing_images)
