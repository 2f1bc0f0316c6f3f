"""End-to-end L7: a listener roll (a config change replaces the listener pod: SIGTERM, a new
pod) with job events queued in its message session loses none of them.

The whole system runs (controller manager, the listener from its pod spec, simulated kubelet and
runners, fake GitHub). Three jobs start; their runners hang after the job (so each runner's
EphemeralRunner lives until its completion is recorded and the L4 grace ends it). While the jobs
finish, the message queue refuses polls for a moment (503), so their JobCompleted events are
surely still queued in the session when the roll begins — the window a real roll always has,
widened so the test does not depend on timing. Then ``maxRunners`` changes: the listener's
config changes, its pod is replaced. Every job must end with its completion recorded on the
exact runner it ran on, and GitHub must have dropped none of the events.

Issue 25, item 3: SIGTERM deleted the session, and with it the queued events; the hung runners
then lived on until the registration pass found them. On the real kube-apiserver
(``SCALESET_TEST_KUBECONFIG``) the same run uses namespaces of its own.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from tests.support.waiting import eventually

from scaleset.clock import SystemClock
from scaleset.demo.system import SCALE_SET_NAME, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.embedded.actions.faults import Surface
from scaleset.embedded.actions.model import JobEventKind, JobState
from scaleset.kube import NotFound, ObjectKey
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER

pytestmark = pytest.mark.timeout(300)

JOBS = 3
GRACE = 60.0
"""Long enough that a hung runner is still there when its completion is looked for."""

BACKENDS = ["embedded", "real"]


@asynccontextmanager
async def _system(backend: str) -> AsyncIterator[DemoSystem]:
    clock = SystemClock()
    namespaces: dict[str, str] = {}
    kubeconfig: Path | None = None
    if backend == "real":
        path = os.environ.get("SCALESET_TEST_KUBECONFIG")
        if not path:
            pytest.skip("needs the real kube-apiserver (SCALESET_TEST_KUBECONFIG)")
        kubeconfig = Path(path)
        suffix = uuid.uuid4().hex[:6]
        namespaces = {
            "controller_namespace": f"roll-sys-{suffix}",
            "runner_namespace": f"roll-run-{suffix}",
        }
    system = DemoSystem(
        clock=clock,
        truth=Truth(zombie_bound=GRACE + 30.0),
        min_runners=0,
        max_runners=5,
        grace=GRACE,
        kubeconfig=kubeconfig,
        started_at=clock.monotonic(),
        **namespaces,
    )
    await system.start()
    try:
        yield system
    finally:
        await system.stop()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_L7_a_listener_roll_loses_no_job_event(backend: str) -> None:
    async with _system(backend) as system:
        assert system.fake is not None
        assert system.client is not None
        assert system.kubelet is not None
        control = system.fake.control
        client = system.client
        kubelet = system.kubelet
        namespace = system.runner_namespace
        await control.wait_for(
            lambda t: any(s.polls > 0 for s in t.sessions), within=60, what="a listener session"
        )
        [session] = control.snapshot().sessions

        system.chaos.hangs_pending = JOBS
        jobs = [control.queue_job([SCALE_SET_NAME], duration_seconds=4.0) for _ in range(JOBS)]

        async def started_on_their_runners() -> bool:
            truth = control.snapshot()
            names = [truth.job(job).runner_name for job in jobs]
            if not all(names) or any(truth.job(job).state != JobState.RUNNING for job in jobs):
                return False
            for job, name in zip(jobs, names, strict=True):
                try:
                    runner = await client.get(EPHEMERAL_RUNNER, ObjectKey(namespace, name))
                except NotFound:
                    return False
                if runner.status.get("jobRequestId") != job:
                    return False
            return True

        await eventually(
            started_on_their_runners, within=90, what="JobStarted on every runner", interval=0.2
        )
        runner_of = {job: control.snapshot().job(job).runner_name for job in jobs}

        # the jobs finish while the queue answers no poll: their JobCompleted stay queued
        blocked = control.faults.fail_next(None, 503, surface=Surface.MESSAGE_QUEUE, method="GET")
        try:

            def completed() -> bool:
                truth = control.snapshot()
                return all(truth.job(job).state == JobState.COMPLETED for job in jobs)

            await eventually(
                completed,
                within=60,
                what="the jobs completed",
                interval=0.2,
            )
            queued = [control.job_event(job, JobEventKind.COMPLETED) for job in jobs]
            assert all(e is not None and e.delivered_at is None for e in queued), queued

            # the roll: a config change replaces the listener pod (SIGTERM, then a new pod)
            [old] = [p for p in kubelet.pods() if p.name.endswith("-listener")]
            await client.patch_merge(
                AUTOSCALING_RUNNER_SET,
                ObjectKey(namespace, SCALE_SET_NAME),
                {"spec": {"maxRunners": 6}},
            )
            await eventually(
                lambda: all(
                    p.uid != old.uid for p in kubelet.pods() if p.name.endswith("-listener")
                ),
                within=60,
                what="the old listener pod gone",
                interval=0.2,
            )
        finally:
            control.faults.remove(blocked)

        async def completions_recorded() -> bool:
            for job, name in runner_of.items():
                runner = await client.get(EPHEMERAL_RUNNER, ObjectKey(namespace, name))
                completion = runner.status.get("jobCompletion") or {}
                if completion.get("jobId") != control.snapshot().job(job).job_id:
                    return False
                assert completion.get("runnerName") == name
                # GitHub's result: the JobCompleted itself, not a completion the registration
                # pass inferred after the event was lost (L6's fallback, JobCompletionInferred)
                assert completion.get("result"), completion
            return True

        await eventually(
            completions_recorded,
            within=90,
            what="every completion recorded on its runner",
            interval=0.2,
        )
        events = [
            control.job_event(job, kind)
            for job in jobs
            for kind in (JobEventKind.STARTED, JobEventKind.COMPLETED)
        ]
        assert all(e is not None and e.dropped_why is None for e in events), events
        # acknowledged after they were applied (L7): the last acknowledgements may still be on
        # their way
        await eventually(
            lambda: all(
                (e := control.job_event(job, kind)) is not None and e.acked_at is not None
                for job in jobs
                for kind in (JobEventKind.STARTED, JobEventKind.COMPLETED)
            ),
            within=30,
            what="every job event acknowledged",
            interval=0.2,
        )
        # the successor resumed the same session: nothing was deleted with it
        assert [s.session_id for s in control.snapshot().sessions] == [session.session_id]
        assert [r.status for r in control.requests_to("/sessions/", "DELETE")] == []
