"""End-to-end L10: an AutoscalingRunnerSet deleted while one runner is busy and another hangs
after its job. The whole system runs (controller manager, listener from its pod spec, simulated
kubelet and runners, fake GitHub): the hung runner is ended by L4 during the deletion, the busy
one finishes its job, then everything is gone — runners, runner set, listener, the scale set on
GitHub, every registration — and the busy runner's job succeeded (it was never cut short)."""

from __future__ import annotations

import asyncio

import pytest
from tests.support.waiting import eventually

from scaleset.clock import SystemClock
from scaleset.demo.system import SCALE_SET_NAME, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.embedded.actions.model import JobState
from scaleset.kube import NotFound, ObjectKey
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER

pytestmark = pytest.mark.timeout(240)

GRACE = 10.0
BUSY_JOB_SECONDS = 60.0


async def _watch_processes(system: DemoSystem) -> None:
    """Ground truth while the deletion runs: runner processes whose pod the node no longer runs
    have ended; zombies are checked against their bound."""
    assert system.kubelet is not None
    while True:
        now = system.elapsed()
        alive = {pod.name for pod in system.kubelet.pods() if pod.processes_alive}
        for process in list(system.truth.processes.values()):
            if process.ended_at is None and process.pod not in alive:
                system.truth.pod_gone(process.pod, now)
        system.truth.check(now)
        await asyncio.sleep(0.2)


async def test_L10_L4_deleting_a_scale_set_with_a_busy_and_a_hung_runner() -> None:
    clock = SystemClock()
    truth = Truth(zombie_bound=GRACE + 10.0)
    system = DemoSystem(
        clock=clock,
        truth=truth,
        min_runners=0,
        max_runners=5,
        grace=GRACE,
        kubeconfig=None,
        started_at=clock.monotonic(),
    )
    await system.start()
    try:
        assert system.fake is not None
        assert system.client is not None
        control = system.fake.control
        client = system.client
        await control.wait_for(
            lambda t: any(s.polls > 0 for s in t.sessions), within=60, what="listener session"
        )
        # The busy runner first, then the one that hangs: the deletion is issued as soon as the
        # second runner is seen hanging, well inside its grace period, so L4 ends it during the
        # deletion however long the runners took to start (a hung runner found first could be
        # ended by L4 before the deletion began).
        busy = control.queue_job([SCALE_SET_NAME], duration_seconds=BUSY_JOB_SECONDS)
        await eventually(
            lambda: control.snapshot().job(busy).state == JobState.RUNNING,
            within=60,
            what="the long job",
            interval=0.2,
        )
        system.chaos.hangs_pending = 1
        short = control.queue_job([SCALE_SET_NAME], duration_seconds=1.0)
        await eventually(
            lambda: any(p.zombie_since is not None for p in truth.processes.values()),
            within=60,
            what="the second runner hanging after its job",
            interval=0.1,
        )
        assert control.snapshot().job(short).state == JobState.COMPLETED
        assert control.snapshot().job(busy).state == JobState.RUNNING
        hung = [p for p in truth.processes.values() if p.zombie_since is not None]
        assert len(hung) == 1, "exactly one runner hangs after its job"
        watcher = asyncio.create_task(_watch_processes(system))

        await client.delete(
            AUTOSCALING_RUNNER_SET, ObjectKey(system.runner_namespace, SCALE_SET_NAME)
        )

        async def scale_set_gone() -> bool:
            try:
                await client.get(
                    AUTOSCALING_RUNNER_SET, ObjectKey(system.runner_namespace, SCALE_SET_NAME)
                )
            except NotFound:
                return True
            return False

        await eventually(
            scale_set_gone, within=120, what="the AutoscalingRunnerSet's deletion", interval=0.2
        )
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        assert system.kubelet is not None
        alive = [p.name for p in system.kubelet.pods() if p.processes_alive]
        assert not [name for name in alive if name.startswith(SCALE_SET_NAME + "-runner")]
        snapshot = control.snapshot()
        assert snapshot.job(busy).state == JobState.COMPLETED
        assert (snapshot.job(busy).result or "").lower() in ("succeeded", "success")
        assert snapshot.scale_sets == ()
        assert snapshot.registered_runners() == []
        runners = await client.list(EPHEMERAL_RUNNER, namespace=system.runner_namespace)
        assert runners.items == []
        assert hung[0].ended_at is not None
        assert 0 < hung[0].max_zombie_age <= truth.zombie_bound
        truth.check(system.elapsed())
        assert truth.violations == []
    finally:
        await system.stop()
