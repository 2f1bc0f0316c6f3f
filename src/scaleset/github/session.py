"""MessageSessionClient: one open message session and the calls made with its queue token.

Each queue call (get message, delete message, acquire jobs) that fails with
MessageQueueTokenExpired refreshes the session once and is repeated once; a second expiry is
raised. A failed refresh keeps the old session. Concurrent expiries cause a
single refresh: a caller whose token was already replaced just retries with the new one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from scaleset.github.client import ActionsClient
from scaleset.github.errors import MessageQueueTokenExpired
from scaleset.github.messages import RunnerScaleSetMessage
from scaleset.github.models import RunnerScaleSetSession
from scaleset.logs import get_logger

log = get_logger(__name__)

_Result = TypeVar("_Result")


class MessageSessionClient:
    """Holds the current session of one scale set; use `open()` to create it."""

    def __init__(
        self, client: ActionsClient, scale_set_id: int, session: RunnerScaleSetSession
    ) -> None:
        self.client = client
        self.scale_set_id = scale_set_id
        self._session = session
        self._refresh_lock = asyncio.Lock()
        self.closed = False

    @classmethod
    async def open(
        cls, client: ActionsClient, scale_set_id: int, owner_name: str
    ) -> MessageSessionClient:
        """Create the scale set's message session (SessionConflict if one is active)."""
        session = await client.create_message_session(scale_set_id, owner_name)
        log.info(
            "opened message session", session_id=str(session.session_id), scale_set_id=scale_set_id
        )
        return cls(client, scale_set_id, session)

    @classmethod
    async def resume(
        cls, client: ActionsClient, scale_set_id: int, session_id: uuid.UUID
    ) -> MessageSessionClient:
        """Take over an existing session by id (refreshed: a new queue token, the same queue);
        SessionNotFound when the service no longer has it."""
        session = await client.refresh_message_session(scale_set_id, session_id)
        log.info("resumed message session", session_id=str(session_id), scale_set_id=scale_set_id)
        return cls(client, scale_set_id, session)

    @property
    def session(self) -> RunnerScaleSetSession:
        return self._session

    async def get_message(
        self, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        """The next message after `last_message_id` (0: the first), or None on an empty poll."""
        return await self._with_refresh(
            lambda session: self.client.get_message(session, last_message_id, max_capacity)
        )

    async def delete_message(self, message_id: int) -> None:
        """Acknowledge message `message_id`."""
        await self._with_refresh(lambda session: self.client.delete_message(session, message_id))

    async def acquire_jobs(self, request_ids: Sequence[int]) -> tuple[int, ...]:
        """Acquire the given `JobAvailable` runner request ids; returns those acquired."""
        return await self._with_refresh(
            lambda session: self.client.acquire_jobs(
                self.scale_set_id, session.message_queue_access_token, request_ids
            )
        )

    async def refresh(self) -> RunnerScaleSetSession:
        """Renew the queue token now; the old session is kept when this fails."""
        async with self._refresh_lock:
            return await self._refresh_locked()

    async def close(self) -> None:
        """Delete the session on the service (once)."""
        if self.closed:
            return
        await self.client.delete_message_session(self.scale_set_id, self._session.session_id)
        self.closed = True
        log.info("closed message session", session_id=str(self._session.session_id))

    async def __aenter__(self) -> MessageSessionClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return (
            f"MessageSessionClient(scale_set_id={self.scale_set_id}, "
            f"session_id={self._session.session_id})"
        )

    async def _with_refresh(
        self, call: Callable[[RunnerScaleSetSession], Awaitable[_Result]]
    ) -> _Result:
        used = self._session
        try:
            return await call(used)
        except MessageQueueTokenExpired:
            log.info(
                "message queue token expired; refreshing the session",
                session_id=str(used.session_id),
            )
        async with self._refresh_lock:
            if self._session is used:  # nobody refreshed it meanwhile
                await self._refresh_locked()
        return await call(self._session)

    async def _refresh_locked(self) -> RunnerScaleSetSession:
        fresh = await self.client.refresh_message_session(
            self.scale_set_id, self._session.session_id
        )
        self._session = fresh
        return fresh
