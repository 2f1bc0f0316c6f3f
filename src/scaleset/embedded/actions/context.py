"""What every part of the running fake shares: state, credentials, faults, URLs and the pulse.

The ``Pulse`` is how long polls learn that something changed: the state machine calls
``fire()`` after every change and a waiting poll re-checks its condition, so a message is
delivered the moment it exists rather than at the end of a hold.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from scaleset.clock import Clock
from scaleset.embedded.actions.auth import GitHubAuthority
from scaleset.embedded.actions.faults import FaultInjector, Surface
from scaleset.embedded.actions.jitconfig import JitRunnerConfig, encode_jit_config
from scaleset.embedded.actions.model import Runner, ScaleSetSession
from scaleset.embedded.actions.service import ActionsService

REQUEST_LOG_LIMIT = 20_000
SWEEP_INTERVAL_SECONDS = 1.0

_Answer = TypeVar("_Answer")


class Pulse:
    """A broadcast "state changed" signal for long polls."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.closed = False

    def fire(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    def close(self) -> None:
        """Wake every waiter for good (server shutdown)."""
        self.closed = True
        self._event.set()

    async def wait(self, at_most: float) -> None:
        """Return on the next ``fire`` or after ``at_most`` seconds, whichever is first."""
        if self.closed or at_most <= 0:
            return
        event = self._event
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), at_most)


@dataclass(frozen=True)
class RequestRecord:
    """One request the fake answered (credentials are never recorded)."""

    at: float
    surface: Surface
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    status: int
    user_agent: str
    max_capacity: str | None
    content_type: str | None
    accept: str | None
    unsent_status: int | None = None
    """The status of an answer the fake formed and then dropped (``status`` is then 0): the
    request was handled, the client never heard."""


@dataclass
class FakeContext:
    clock: Clock
    service: ActionsService
    authority: GitHubAuthority
    faults: FaultInjector
    pulse: Pulse
    poll_hold_seconds: float
    runner_poll_hold_seconds: float
    base_url: str = ""
    message_queue_base_url: str = ""
    """Origin of the message queue when it is served apart from the tenant API (``""``: the
    same origin as ``base_url``)."""
    requests: deque[RequestRecord] = field(default_factory=lambda: deque(maxlen=REQUEST_LOG_LIMIT))

    async def hold(
        self, seconds: float, ready: Callable[[], _Answer | None], alive: Callable[[], bool]
    ) -> _Answer | None:
        """A long poll: ``ready()``'s first answer, re-checked on every pulse and, after a sweep,
        at least every ``SWEEP_INTERVAL_SECONDS``; ``None`` once ``seconds`` have passed, the
        server stops, or ``alive()`` turns false (the poller's session is gone)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while True:
            if not alive():
                return None  # checked first: a poll outliving its session is handed nothing
            answer = ready()
            if answer is not None:
                return answer
            remaining = deadline - loop.time()
            if remaining <= 0 or self.pulse.closed:
                return None
            await self.pulse.wait(min(remaining, SWEEP_INTERVAL_SECONDS))
            self.service.sweep()

    def tenant_url(self, tenant_id: int) -> str:
        """The Actions-service URL of a tenant (with its trailing slash, spec §1.4)."""
        return f"{self.base_url}/tenant/{tenant_id}/"

    def message_queue_url(self, session: ScaleSetSession) -> str:
        base = self.message_queue_base_url or self.base_url
        return f"{base}/mq/{session.scale_set_id}/messages?sessionId={session.id}"

    @property
    def broker_url(self) -> str:
        return f"{self.base_url}/broker/"

    def issue_jit_config(
        self, tenant_id: int, scale_set_id: int, name: str, work_folder: str
    ) -> tuple[Runner, str]:
        """Register a runner and encode its JIT config (pointing at this fake's broker)."""
        runner, credential = self.service.generate_jit_runner(
            tenant_id, scale_set_id, name=name, work_folder=work_folder
        )
        scale_set = self.service.scale_sets[scale_set_id]
        group = self.service.runner_group_of(scale_set)
        encoded = encode_jit_config(
            JitRunnerConfig(
                runner_id=runner.id,
                runner_name=runner.name,
                scale_set_id=scale_set.id,
                runner_group_id=group.id,
                runner_group_name=group.name,
                server_url=self.tenant_url(tenant_id),
                broker_url=self.broker_url,
                github_url=f"{self.base_url}/{self.service.tenants[tenant_id].scope.path}",
                work_folder=work_folder,
                credential=credential,
            )
        )
        self.authority.remember_secret(credential)
        self.authority.remember_secret(encoded)
        return runner, encoded
