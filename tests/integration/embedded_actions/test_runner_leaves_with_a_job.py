"""A runner that leaves while a job is on its way to it — the answer to its poll lost, its process
killed with the poll held — never keeps that job: the job goes back to its scale set for another
runner, as GitHub re-assigns a job no runner picked up. Kept, it never finished and it held the
scale set a runner above its minimum (an evict-idle demo run)."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from tests.integration.embedded_actions.wire_client import PAT, BrokerRunner, ScaleSetClient
from tests.plugins.secret_guard import register_secret_source
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, JobState, Surface

AGENTS = "_apis/distributedtask/pools/0/agents"
LOST = (httpx2.RemoteProtocolError, httpx2.ReadError)
"""What a client sees when the server closes the connection without answering."""


async def test_a_job_handed_to_a_runner_that_leaves_before_starting_it_is_assigned_again(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    """An idle runner stopped (its pod evicted) while its job poll was being answered: the
    fake handed it the job, the answer never reached it, and it closed its session. The job
    must go back to the scale set for another runner (GitHub re-assigns a job no runner picked
    up), not stay on a runner that is gone — there it blocked the registration's removal
    (JobStillRunning) and never finished."""
    scale_set_id = await org.create_scale_set("arc")
    first = (await org.jit(scale_set_id, "r1")).json()
    request_id = fake.control.queue_job(["arc"])
    leaving = BrokerRunner.from_jit(org.http, first["encodedJITConfig"])
    assert (await leaving.open()).status_code == 200
    fake.control.faults.drop_responses(1, surface=Surface.BROKER, path_contains="message")
    with pytest.raises(LOST):
        await leaving.call("GET", "message")
    assert (await leaving.call("DELETE", "session")).status_code == 204

    assert fake.control.snapshot().job(request_id).state is JobState.ASSIGNED
    removed = await org.admin("DELETE", f"{AGENTS}/{first['runner']['id']}")
    assert removed.status_code == 204, removed.text
    second = (await org.jit(scale_set_id, "r2")).json()
    taker = BrokerRunner.from_jit(org.http, second["encodedJITConfig"])
    assert (await taker.open()).status_code == 200
    assert int((await taker.take_job())["runnerRequestId"]) == request_id


async def test_a_poll_held_for_a_runner_whose_registration_is_removed_hands_it_no_job(
    clock: ManualClock, http: httpx2.AsyncClient
) -> None:
    """A runner pod killed with its job poll held: the poll's handler outlives the process, the
    controller removes the idle runner's registration, then a job arrives. The held poll must
    not hand that job to the removed runner — nobody would ever run or fail it (its session is
    gone, so no lost-runner timeout applies) and it never finished (an evict-idle demo run)."""
    async with FakeGitHub(
        clock=clock, poll_hold_seconds=0.05, runner_poll_hold_seconds=30.0
    ) as fake:
        fake.add_pat(PAT)
        register_secret_source(fake.control.issued_secrets)
        org = await ScaleSetClient.register(http, fake, fake.config_url("acme"))
        scale_set_id = await org.create_scale_set("arc")
        first = (await org.jit(scale_set_id, "r1")).json()
        runner_id = first["runner"]["id"]
        killed = BrokerRunner.from_jit(http, first["encodedJITConfig"])
        assert (await killed.open()).status_code == 200
        held = asyncio.create_task(killed.call("GET", "message"))
        await eventually(
            lambda: fake.control.snapshot().runner(runner_id).polling, what="the poll held"
        )
        removed = await org.admin("DELETE", f"{AGENTS}/{runner_id}")
        assert removed.status_code == 204, removed.text
        request_id = fake.control.queue_job(["arc"])

        answer = await held
        assert answer.status_code != 200, answer.text
        assert fake.control.snapshot().job(request_id).state is JobState.ASSIGNED
