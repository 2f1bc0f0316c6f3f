"""End-to-end: a warm window opening mid-run raises the idle runners with no job.

The whole demo system runs (controller manager, the listener from its pod spec, simulated
kubelet and runners, fake GitHub) with a scale set of ``minRunners: 0`` and one window of
``minRunners: 2`` that opens while the run is idle. The window has whole minutes, so the run's
wall clock (every component's, one clock) is set a few seconds ahead of the machine's: the
window opens ``LEAD`` seconds of real time after the start instead of at the next whole minute.

What must hold, each awaited with a bound: before the window, the listener runs and asks for
no runner; after it opens, with no job queued anywhere, two runners are up and idle, the
scale set's status names the window and its minimum, and a ``WarmWindowChanged`` Event says
so. On the real kube-apiserver (``SCALESET_TEST_KUBECONFIG``) the run uses namespaces of its own.
``scaleset demo --window`` itself runs with a window in force all along and settles at its
minimum.
"""

from __future__ import annotations

import io
import math
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.waiting import eventually

from scaleset.api.listener_state import ListenerState
from scaleset.clock import SystemClock
from scaleset.demo.options import DemoOptions
from scaleset.demo.run import run_demo
from scaleset.demo.system import SCALE_SET_NAME, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.kube import ObjectKey
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER_SET, EVENT

pytestmark = pytest.mark.timeout(300)

LEAD = 40.0
"""Real seconds from the start to the window's opening: the system is up well before."""
BACKENDS = ["embedded", "real"]


class AheadClock(SystemClock):
    """The machine's clock with its wall time ``ahead`` seconds on (monotonic time unchanged)."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def time(self) -> float:
        return super().time() + self.ahead

    def now(self) -> datetime:
        return super().now() + timedelta(seconds=self.ahead)


def opening() -> tuple[AheadClock, datetime]:
    """A clock and the whole minute on it at which the window opens, ``LEAD`` s from now."""
    target = datetime.now(UTC) + timedelta(seconds=LEAD)
    minute = datetime.fromtimestamp(math.ceil(target.timestamp() / 60) * 60, UTC)
    return AheadClock((minute - target).total_seconds()), minute


@asynccontextmanager
async def _system(backend: str, clock: AheadClock, opens: datetime) -> AsyncIterator[DemoSystem]:
    namespaces: dict[str, str] = {}
    kubeconfig: Path | None = None
    if backend == "real":
        path = os.environ.get("SCALESET_TEST_KUBECONFIG")
        if not path:
            pytest.skip("needs the real kube-apiserver (SCALESET_TEST_KUBECONFIG)")
        kubeconfig = Path(path)
        suffix = uuid.uuid4().hex[:6]
        namespaces = {
            "controller_namespace": f"warm-sys-{suffix}",
            "runner_namespace": f"warm-run-{suffix}",
        }
    closes = opens + timedelta(minutes=30)
    window = {
        "start": opens.strftime("%H:%M"),
        "end": closes.strftime("%H:%M"),
        "timeZone": "UTC",
        "minRunners": 2,
    }
    system = DemoSystem(
        clock=clock,
        truth=Truth(zombie_bound=60.0),
        min_runners=0,
        max_runners=5,
        grace=5.0,
        kubeconfig=kubeconfig,
        started_at=clock.monotonic(),
        warm_windows=(window,),
        **namespaces,
    )
    await system.start()
    try:
        yield system
    finally:
        await system.stop()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_window_opening_mid_run_raises_the_idle_runners_without_a_job(
    backend: str,
) -> None:
    clock, opens = opening()
    async with _system(backend, clock, opens) as system:
        assert system.fake is not None
        assert system.client is not None
        control = system.fake.control
        client = system.client
        namespace = system.runner_namespace
        scale_set_key = ObjectKey(namespace, SCALE_SET_NAME)

        async def listener_asked_for_none() -> bool:
            found = (await client.list(EPHEMERAL_RUNNER_SET, namespace=namespace)).items
            if not found:
                return False
            state = ListenerState.of(found[0].annotations)
            return state.patch_seq >= 0 and not found[0].raw["spec"].get("replicas")

        await eventually(
            listener_asked_for_none,
            within=LEAD,
            what="the listener's first desired count (0) before the window",
            interval=0.2,
        )
        assert clock.now() < opens, "the system came up only after the window opened"

        async def two_idle_runners() -> bool:
            # the counts are the runner set's (the scale set's status does not copy them)
            found = (await client.list(EPHEMERAL_RUNNER_SET, namespace=namespace)).items
            return any(rs.raw.get("status", {}).get("idleEphemeralRunners") == 2 for rs in found)

        await eventually(
            two_idle_runners,
            within=LEAD + 90.0,
            what="two idle runners after the window opened",
            interval=0.2,
        )
        assert clock.now() >= opens
        assert control.snapshot().jobs == (), "no job was queued"

        status = (await client.get(AUTOSCALING_RUNNER_SET, scale_set_key)).raw["status"]
        assert status["minRunnersInForce"] == 2, (status, clock.now(), opens)
        assert status["warmWindow"].startswith("warmWindows[0] (daily ")

        async def window_event() -> bool:
            events = (await client.list(EVENT, namespace=namespace)).items
            return any(e.raw.get("reason") == "WarmWindowChanged" for e in events)

        await eventually(window_event, within=30, what="a WarmWindowChanged Event", interval=0.2)


async def test_the_demo_command_settles_at_the_minimum_of_the_window_in_force() -> None:
    """``scaleset demo --window``: a window in force all day keeps two runners; the run ends
    with every invariant held, the runners converged on the window's minimum, not
    ``--runners``' 0."""
    out = io.StringIO()
    options = DemoOptions(
        jobs=3, duration=3, seed=4, warm_windows=("00:00-24:00 UTC min=2",), settle_timeout=60
    )
    code = await run_demo(options, stream=out)
    text = out.getvalue()
    assert code == 0, text
    assert "invariants: all held" in text, text
    assert "3 succeeded" in text
