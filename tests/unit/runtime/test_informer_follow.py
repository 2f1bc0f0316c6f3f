"""The informer's watch follower ends its stream reader on every way out and retrieves how it
ended: a stream that fails as it is closed (the informer cancelled, e.g. a listener stopping)
leaves no "Task exception was never retrieved" (issue 25, item 12; seen with a 410 Gone in the
demo's chaos seeds). The task guard (tests/plugins/task_guard.py) fails this test at teardown
if the reader's error is left unretrieved."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import cast

from scaleset.clock import ManualClock
from scaleset.kube.client import KubeClient, WatchEvent
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.runtime.informer import Informer


async def test_a_stream_failing_as_it_is_closed_leaves_no_unretrieved_error() -> None:
    informer = Informer(cast(KubeClient, None), EPHEMERAL_RUNNER, clock=ManualClock())
    reading = asyncio.Event()

    async def stream() -> AsyncIterator[WatchEvent]:
        reading.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("the stream failed as it was closed") from None
        return
        yield  # (never reached: it makes this an async generator)

    follow = asyncio.ensure_future(informer._follow(stream(), "", lambda: None))
    await reading.wait()
    follow.cancel()
    [outcome] = await asyncio.gather(follow, return_exceptions=True)
    assert isinstance(outcome, asyncio.CancelledError)
