"""L4 with L6 — a hung runner whose JobCompleted GitHub dropped is still ended.

The soak's problem 4: the runner's JobStarted landed (job fields, Running), the job finished,
the runner process hangs, and the JobCompleted never came (GitHub dropped it with an expired
message session); GitHub removed the ephemeral registration with the job. The registration pass
never deletes a runner with a job: it records the completion from the runner's own job fields,
and the EphemeralRunner controller's L4 path ends the runner after the grace period — the pod
first (short grace), then the registration (already gone), then the runner. A real JobCompleted
arriving late changes nothing of that (L4: repeats are harmless).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually

from scaleset.api import EphemeralRunner, keys
from scaleset.api.naming import ephemeral_runner_generate_name
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.registrationpass.metrics import PassDecisionMetrics
from scaleset.controllers.registrationpass.reconciler import RegistrationPass
from scaleset.embedded.actions import JobState
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.kubelet.directives import RUNNER_FAULTS
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from scaleset.runtime.events import EventRecorder

SET = "arc"
GRACE = 30.0
HANG = {RUNNER_FAULTS: "hang-after-completion"}


@pytest.fixture
async def recorder(world: World) -> AsyncIterator[EventRecorder]:
    """The registration pass's Event recorder, posting."""
    events = EventRecorder(world.client, clock=world.clock)
    posting = asyncio.ensure_future(events.run())
    try:
        yield events
    finally:
        posting.cancel()


async def runner_set(world: World) -> KubeObject:
    return await world.client.create(
        EPHEMERAL_RUNNER_SET,
        {
            "apiVersion": keys.API_VERSION,
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": SET, "namespace": world.namespace},
            "spec": {
                "replicas": 1,
                "patchID": 0,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": world.fake.config_url("acme"),
                    "githubConfigSecret": "github-config",
                    "runnerScaleSetId": world.scale_set_id,
                    "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
                },
            },
        },
    )


async def owned_runner(world: World, owner: KubeObject, name: str) -> None:
    body = world.runner_body(name, pod_annotations=HANG)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": keys.API_VERSION,
            "kind": "EphemeralRunnerSet",
            "name": owner.name,
            "uid": owner.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    await world.client.create(EPHEMERAL_RUNNER, body)


async def deadline_of(world: World, name: str) -> EphemeralRunner:
    """The runner once the controller stored its grace deadline (no virtual time passes)."""
    found: list[EphemeralRunner] = []

    async def stored() -> bool:
        runner = await world.runner(name)
        if runner is not None and runner.status.job_completion_deadline is not None:
            found.append(runner)
            return True
        return False

    await eventually(stored, within=30.0, what="grace deadline stored")
    return found[-1]


async def test_L4_L6_a_hung_runner_whose_job_completed_event_was_lost_is_ended_after_the_grace(
    world: World, kubelet: SimulatedKubelet, recorder: EventRecorder
) -> None:
    owner = await runner_set(world)
    name = f"{ephemeral_runner_generate_name(SET)}lost"
    github = GitHubClients(
        world.client, ClientOptions(clock=world.clock, environ={}, allow_http_github_url=True)
    )
    registration_pass = RegistrationPass(
        world.client, github, recorder, world.clock, metrics=PassDecisionMetrics(None)
    )
    try:
        async with world.controller() as controller:
            request_id = world.fake.control.queue_job(["arc"], duration_seconds=60.0)
            await owned_runner(world, owner, name)
            await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job")
            await world.job_started(name, request_id)
            await world.runner_where(name, lambda r: r.status.phase == "Running", "Running")
            await world.until(lambda: RunnerPhase.HANGING in world.phases.of(name), "hangs")
            snapshot = world.fake.control.snapshot()
            assert snapshot.job(request_id).state is JobState.COMPLETED
            runner = await world.runner(name)
            assert runner is not None
            runner_id = runner.status.runner_id
            assert not snapshot.runner(runner_id).registered  # ephemeral: gone with its job
            # the JobCompleted is lost: nobody writes it; the controller keeps the runner
            await world.settle(controller, name)
            assert controller.decisions("JobCompletedRunnerAlive") == 0

            started = world.clock.now()
            fresh = await world.client.get(EPHEMERAL_RUNNER_SET, world.key(SET))
            report = await asyncio.wait_for(registration_pass.run(fresh), timeout=30.0)
            assert report.done == ("JobCompletionInferred",)

            runner = await deadline_of(world, name)
            completion = runner.status.job_completion
            assert completion is not None
            assert (completion.runner_id, completion.runner_name) == (runner_id, name)
            assert completion.job_id == runner.status.job_id
            assert completion.workflow_run_id == runner.status.workflow_run_id
            deadline = runner.status.job_completion_deadline
            assert deadline is not None
            assert started + timedelta(seconds=GRACE) <= deadline
            assert not runner.metadata.is_deleting
            assert await world.pod(name) is not None  # the grace period runs

            # the real JobCompleted arrives late after all: harmless, the deadline stands
            await world.job_completed(name, request_id, runner_id)
            await world.settle(controller, name)
            later = await world.runner(name)
            assert later is not None
            assert later.status.job_completion_deadline == deadline
            assert controller.decisions("JobCompletionMismatch") == 0

            world.clock.advance(GRACE)
            await world.gone(name)
            pod = await world.pod(name)
            assert pod is None or pod.is_deleting  # the hung process gets the short kill
            assert controller.decisions("JobCompletedRunnerAlive") == 1
            assert controller.decisions("JobCompletedRunnerEnded") == 1
            await world.event_reasons(name, "JobCompletionInferred", "JobCompletionObserved")
    finally:
        await github.aclose()
