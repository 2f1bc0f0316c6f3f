"""End-to-end: a short chaos soak (issue 20) — ``scaleset demo --chaos soak`` scaled down to
120 jobs over 30 s, with every fault kind of the soak: 10 % of jobs lose their runner to an
eviction, 5 % to an OOM kill, 5 % of runners hang after their job, 2 % of the API server's
writes fail (409/500/503), 3 listener kills, 2 controller kills, a GitHub 5xx burst, a GitHub
outage, a message-queue token expiry, a stale-session restart and a watch expiry (410) during a
burst. Judged on ground truth (the fake service, the simulated node) sampled throughout: every
job completed, no zombie past grace + one pass (beyond blackouts), no leaked registration, no
resurrected runner, no busy runner deleted, no JIT config used twice, no lost job event. The
outage here lasts 10 s, not the soak's minute, so the run takes 1.5-2.5 minutes; the full
soak's figures over 20 seeds are in bench/results/soak.md. Invariants are asserted, never
timings. One fixed seed (12, which stacks every fault kind). The zombie bound (grace + one pass) is
judged on real time; on a machine starved of CPU hung runners end up to a second or so past it
(open problem 5 in bench/results/soak.md), so this test allows 5 s on top of it.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.support.waiting import eventually

from scaleset.clock import SystemClock
from scaleset.demo.run import DemoOptions, Progress, _kill_listeners, demo_options, run_demo_report
from scaleset.demo.system import DemoSystem
from scaleset.demo.truth import Truth
from scaleset.demo.workload import SOAK_SCHEDULE

pytestmark = pytest.mark.timeout(420)

ZOMBIE_TOLERANCE = 5.0
"""Seconds past grace + one pass tolerated for open problem 5 (see the test)."""

INVARIANTS = (
    "no-zombie-over-bound",
    "no-busy-runner-deleted",
    "no-resurrection",
    "jobs-finished",
    "no-leaked-registration",
    "runners-converge",
    "no-jit-reuse",
    "no-lost-job-event",
)


def _short_soak(seed: int) -> DemoOptions:
    options = demo_options(chaos="soak", jobs=120, duration=30, runners="0:30", seed=seed)
    return DemoOptions(
        **{
            **vars(options),
            "outage_seconds": 10.0,
            "session_idle_seconds": 90.0,
            "stale_session_seconds": 8.0,
            "settle_timeout": 180.0,
        }
    )


@pytest.mark.parametrize("seed", [12])
async def test_short_soak_keeps_every_invariant_on_ground_truth(seed: int) -> None:
    out = io.StringIO()
    code, report = await run_demo_report(_short_soak(seed), stream=out)
    text = out.getvalue()
    assert report is not None, text
    assert code == (0 if report.ok else 1), text  # the exit code names a broken invariant
    others = [v.detail for v in report.violations if v.invariant != "no-zombie-over-bound"]
    assert others == [], text
    for invariant in INVARIANTS:
        if invariant != "no-zombie-over-bound":
            assert report.broken(invariant) == 0, text
    assert report.jobs_completed == report.jobs_planned == 120, text
    assert report.leaked_registrations == 0
    # Open problem 5 of bench/results/soak.md: on a CPU-starved machine a hung runner can end
    # up to a second or so past grace + one pass (the grace is counted from when the controller
    # sees jobCompletion, not from the job's end). The zombie bound is held with that much
    # tolerance here and strictly by `scaleset demo` itself (exit 1).
    assert report.max_judged_zombie_age <= report.zombie_bound + ZOMBIE_TOLERANCE, text
    # the chaos really happened: every scheduled fault fired and hit something
    for kind, count in SOAK_SCHEDULE:
        assert text.count(f"fault {kind.value}:") >= count, (kind, text)
    assert text.count("fault kill-listener: 1 killed") == 3, text
    assert "fault mq-token-expiry: 1 message-queue token(s) expired" in text, text
    assert "fault stale-session-restart: 1 killed" in text, text
    assert "fault kill-controller: a new controller leads" in text, text
    assert "fault evict-busy: arc-runner-set-runner-" in text, text
    assert "fault oom-busy: arc-runner-set-runner-" in text, text
    assert report.api_failures_injected > 0, text
    assert report.jobs_failed > 0  # the evicted and OOM-killed jobs failed, as they should


@asynccontextmanager
async def _small_system(**options: Any) -> AsyncIterator[DemoSystem]:
    """A small demo system (0:2 runners, grace 5 s), started; stopped on exit."""
    clock = SystemClock()
    system = DemoSystem(
        clock=clock,
        truth=Truth(zombie_bound=15.0),
        min_runners=0,
        max_runners=2,
        grace=5.0,
        kubeconfig=None,
        started_at=clock.monotonic(),
        **options,
    )
    await system.start()
    try:
        yield system
    finally:
        await system.stop()


@asynccontextmanager
async def _one_listener(session_idle_seconds: float) -> AsyncIterator[tuple[DemoSystem, Any]]:
    """A small demo system whose listener has polled its message session once; stopped on
    exit. Yields the system and its first session."""
    async with _small_system(session_idle_seconds=session_idle_seconds) as system:
        assert system.fake is not None
        first = await system.fake.control.wait_for(
            lambda t: any(s.polls > 0 for s in t.sessions), within=60, what="listener session"
        )
        [session] = first.sessions
        yield system, session


async def test_the_soak_kills_its_controller_with_sigkill_and_a_successor_takes_the_lease() -> None:
    """The soak's controller kill is what a node failure or an OOM kill does: ``SIGKILL`` to a
    process of its own, so nothing of it runs afterwards — it does not release its lease (a
    graceful stop would) — and its successor leads only once the lease expired."""
    async with _small_system(separate_controller=True) as system:
        assert system.client is not None
        await eventually(system.controller_leads, within=60, what="the first controller leads")
        killed = system.controller_process
        assert killed is not None
        assert killed.pid is not None
        assert killed.pid != os.getpid()
        await system.kill_controller()
        assert killed.returncode == -signal.SIGKILL
        assert system.controller_failed() is None  # ended by the demo, not a failure
        assert await killed.leading(system.client)  # the lease still names the killed one
        await system.start_controller()
        await eventually(system.controller_leads, within=90, what="the successor leads")
        assert not await killed.leading(system.client)


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_killed_listener_leaves_its_message_session_to_its_successor() -> None:
    """The soak's listener kill is a ``kill -9``: the process ends without its shutdown path
    reaching GitHub, so its message session (and the job events queued in it) stays for the
    next listener to resume. A simulated process ends by cancellation, which would run the
    listener's session delete; the demo keeps it from reaching GitHub."""
    async with _one_listener(90.0) as (system, session):
        assert system.fake is not None
        control = system.fake.control
        back: asyncio.Task[None] | None = None
        try:
            killed, back = await _kill_listeners(system, Progress(io.StringIO()))
            assert killed == 1
            assert [s.session_id for s in control.snapshot().sessions] == [session.session_id]
            assert all(r.status == 404 for r in control.requests_to("/sessions/", "DELETE"))
            await asyncio.wait_for(back, 60)  # the successor polls again: the same session
            assert [s.session_id for s in control.snapshot().sessions] == [session.session_id]
        finally:
            await _cancel(back)


async def test_a_listener_restarted_during_an_outage_resumes_its_session_afterwards() -> None:
    """Soak seeds 1 and 6 (500 jobs): the listener is killed during the GitHub outage and its
    successor cannot resume its session (503 past the client's five tries). It used to go on
    to delete the session, which succeeded once GitHub was back, with the JobCompleted events
    queued in it (the only way the hung runners of those jobs end within the grace, L4, L7).
    It must try the resume again until GitHub answers: the same session afterwards."""
    async with _one_listener(300.0) as (system, session):
        assert system.fake is not None
        control = system.fake.control
        back: asyncio.Task[None] | None = None
        try:
            outage = control.faults.unavailable(None)
            try:
                _, back = await _kill_listeners(system, Progress(io.StringIO()))
                refused = len(control.requests_to("registration-token", "POST"))
                # the successor's first resume gives up after the client's five tries
                await control.wait_for(
                    lambda _: len(control.requests_to("registration-token", "POST")) >= refused + 5,
                    within=90,
                    what="the successor's failed resume",
                )
            finally:
                control.faults.remove(outage)
            await asyncio.wait_for(back, 90)  # a listener polls again
            assert [s.session_id for s in control.snapshot().sessions] == [session.session_id]
        finally:
            await _cancel(back)
