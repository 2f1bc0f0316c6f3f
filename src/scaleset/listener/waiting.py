"""Waiting in the listener, cut short by a stop request: pauses on the injected clock, work that
a stop cancels, and calls tried again while they fail transiently.

A stop (SIGTERM) must end the listener promptly wherever it waits — in a long poll, a back-off,
a retried write — so every wait goes through ``Waiter``, which raises ``Stopped`` as soon as stop
is requested. Whatever way a wait ends, the task it started has ended and its outcome was
retrieved: nothing is left running against a closed client.

Transient failures (retried): network errors, 5xx and 429 from GitHub, and the API server errors
``scaleset.kube.is_retryable`` names. Anything else is the caller's to decide.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from scaleset.backoff import Backoff
from scaleset.clock import Clock
from scaleset.github import GitHubError, ResponseError, TransportFailure
from scaleset.kube import Conflict, KubeError, is_retryable
from scaleset.logs import get_logger

log = get_logger(__name__)

T = TypeVar("T")


class Stopped(Exception):
    """Stop was requested while waiting."""


async def cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel the tasks still running and wait for all of them to end, retrieving every outcome
    (result, error or cancellation), so none is left behind or reported as never retrieved."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def is_github_transient(error: GitHubError) -> bool:
    """A GitHub failure worth trying again: the network, a 5xx or a 429."""
    if isinstance(error, TransportFailure):
        return True
    return isinstance(error, ResponseError) and (error.status >= 500 or error.status == 429)


def is_transient(error: Exception) -> bool:
    """A failure of either service worth trying again."""
    if isinstance(error, KubeError):
        return is_retryable(error)
    if isinstance(error, GitHubError):
        return is_github_transient(error)
    return False


class Waiter:
    """Waits on ``clock`` until ``stop`` is set (``run`` of the listener sets ``stop``)."""

    def __init__(
        self, clock: Clock, *, retry_initial: float, retry_max: float, rng: random.Random
    ) -> None:
        self.clock = clock
        self.stop = asyncio.Event()
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        self._rng = rng

    def backoff(self) -> Backoff:
        """A fresh back-off for retries of failures (``retry_initial`` .. ``retry_max``)."""
        return Backoff(self._retry_initial, self._retry_max, rng=self._rng)

    async def pause(self, seconds: float) -> None:
        """Sleep on the clock; raise ``Stopped`` as soon as stop is requested."""
        if self.stop.is_set():
            raise Stopped
        await self.until_stopped(self.clock.sleep(seconds))
        if self.stop.is_set():
            raise Stopped

    async def until_stopped(self, work: Awaitable[T]) -> T:
        """Await ``work`` unless stop is requested first (then it is cancelled and ``Stopped``
        raised). Whatever way this ends — the caller's own cancellation included — the task
        running ``work`` has ended and its outcome was retrieved: a long poll is never left
        running to fail against a closed client."""
        task = asyncio.ensure_future(work)
        stopper = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await cancel_and_wait(task, stopper)
            raise
        await cancel_and_wait(stopper)
        if not task.done():
            await cancel_and_wait(task)
            raise Stopped
        return task.result()

    async def retrying(
        self,
        what: str,
        call: Callable[[], Awaitable[T]],
        *,
        backoff: Backoff | None = None,
        conflicts_transient: bool = False,
    ) -> T:
        """``call()`` until it does not fail transiently; other errors propagate. With
        ``conflicts_transient`` a 409 is retried too (for writes with no precondition, where a
        409 is the server's own transient conflict, never a stale read of ours)."""
        backoff = backoff or self.backoff()
        while True:
            try:
                return await self.until_stopped(call())
            except (KubeError, GitHubError) as error:
                retry_conflict = conflicts_transient and isinstance(error, Conflict)
                if not (retry_conflict or is_transient(error)):
                    raise
                await self.pause(self.retry_delay(what, error, backoff))

    @staticmethod
    def retry_delay(what: str, error: Exception, backoff: Backoff) -> float:
        """The next delay of ``backoff``, logged as the retry of ``what``."""
        delay = backoff.next()
        log.warning(f"{what} failed; retrying", error=str(error), retry_in=round(delay, 2))
        return delay
