"""Kill the listener process (SIGKILL) between a side effect and its acknowledgement (L7).

The real ``scaleset listener`` runs as a subprocess against the fake GitHub service (in this test
process) and the test backend. The acknowledgement of the message is held by the fake (injected
latency on the DELETE), so the kill always lands after the runner was written and before the
service processed the ack. After a restart: the runner still shows what the message said, the
session is resumed at once (no 409 on the way), a redelivered message changes nothing that
matters, and the patch sequence on the EphemeralRunnerSet only grows across all processes. A
final SIGTERM hands the session over instead of deleting it (L7).

Real time here (two processes cannot share a ManualClock); every wait is a bounded condition.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.integration.listener.runners import make_runner, runner_set_body
from tests.integration.listener.world import PAT, completed_job, job_message, started_job
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.waiting import eventually

from scaleset.api.keys import LISTENER_STATE_ANNOTATION
from scaleset.api.listener_state import ListenerState
from scaleset.clock import SystemClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.embedded.actions.faults import Surface
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET

pytestmark = pytest.mark.usefixtures("actions_crds")

RUNNER_SET = "arc-runners"
ACK_HOLD_SECONDS = 30.0


class ListenerProcess:
    """``python -m scaleset listener`` with a config file; output appended to ``log``."""

    def __init__(self, config: Path, kubeconfig: Path, log: Path) -> None:
        self.config = config
        self.kubeconfig = kubeconfig
        self.log = log
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        env = {
            **os.environ,
            "LISTENER_CONFIG_PATH": str(self.config),
            "KUBECONFIG": str(self.kubeconfig),
        }
        env.pop("KUBERNETES_SERVICE_HOST", None)
        with self.log.open("ab") as out:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "scaleset", "listener", env=env, stdout=out, stderr=out
            )

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        assert await self.process.wait() == -signal.SIGKILL

    async def terminate(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), 30)


@asynccontextmanager
async def fake_github() -> AsyncIterator[FakeGitHub]:
    fake = FakeGitHub(clock=SystemClock(), poll_hold_seconds=0.5, message_queue_host="localhost")
    await fake.start()
    try:
        register_secret_source(fake.control.issued_secrets)
        fake.add_pat(register_secret(PAT))
        yield fake
    finally:
        await fake.stop()


def inject(fake: FakeGitHub, message: dict[str, Any]) -> None:
    fake.control.faults.fail_next(
        1,
        200,
        body=json.dumps(message),
        content_type="application/json",
        surface=Surface.MESSAGE_QUEUE,
        method="GET",
    )


def hold_next_ack(fake: FakeGitHub) -> int:
    """Hold the next acknowledgement (the kill lands while it is held); returns the rule id."""
    return fake.control.faults.add_latency(
        ACK_HOLD_SECONDS, times=1, surface=Surface.MESSAGE_QUEUE, method="DELETE"
    )


def acked(fake: FakeGitHub, message_id: int) -> int:
    return sum(r.status == 204 for r in fake.control.requests_to(f"/{message_id}", "DELETE"))


async def test_L7_killed_between_side_effect_and_ack_loses_nothing(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    async with fake_github() as fake:
        scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
        await client.create(EPHEMERAL_RUNNER_SET, runner_set_body(RUNNER_SET, namespace))
        await make_runner(client, namespace, "r1", {"phase": "Pending"})
        config = tmp_path / "config.json"
        config.write_text(
            json.dumps(
                {
                    "configure_url": fake.config_url("acme"),
                    "github_token": PAT,
                    "ephemeral_runner_set_namespace": namespace,
                    "ephemeral_runner_set_name": RUNNER_SET,
                    "max_runners": 10,
                    "min_runners": 0,
                    "runner_scale_set_id": scale_set_id,
                    "runner_scale_set_name": "arc",
                    "log_level": "debug",
                    "log_format": "text",
                }
            )
        )
        listener = ListenerProcess(config, kube_backend.kubeconfig_path, tmp_path / "listener.log")
        runner_key = ObjectKey(namespace, "r1")
        patch_seqs: list[int] = []

        def sessions() -> list[str]:
            return [s.session_id for s in fake.control.snapshot().sessions]

        async def client_state() -> ListenerState:
            runner_set = await client.get(EPHEMERAL_RUNNER_SET, ObjectKey(namespace, RUNNER_SET))
            return ListenerState.of(runner_set.annotations)

        async def patch_seq() -> int:
            return (await client_state()).patch_seq

        async def remember_patch_seq(*, grown: bool = False) -> None:
            """Record the listener's stored patch sequence; with ``grown``, wait until it is past
            the last one recorded (a restarted listener patches the set at once, but that write
            may land after the session was resumed)."""
            if grown and patch_seqs:

                async def past_the_last() -> bool:
                    return await patch_seq() > patch_seqs[-1]

                await eventually(past_the_last, within=30, what="the patch sequence grown")
            value = await patch_seq()
            if not patch_seqs or patch_seqs[-1] != value:
                patch_seqs.append(value)

        async def runner_status() -> dict[str, Any]:
            return dict((await client.get(EPHEMERAL_RUNNER, runner_key)).status)

        async def restart_and_expect_the_session_resumed(old: str) -> str:
            fake.control.clear_requests()
            await listener.start()

            def resumed() -> bool:
                return any(r.method == "PATCH" for r in fake.control.requests_to("/sessions"))

            await eventually(resumed, within=60, what="the session resumed")
            calls = [(r.method, r.status) for r in fake.control.requests_to("/sessions")]
            assert calls[:1] == [("PATCH", 200)]  # at once: no delete, no create, no 409
            assert sessions() == [old]  # its queued events are not deleted with it
            return old

        try:
            # 1. JobStarted: killed after the runner became Running, before the ack
            await listener.start()
            await eventually(lambda: len(sessions()) == 1, within=60, what="the first session")
            first_session = sessions()[0]
            await remember_patch_seq()
            hold = hold_next_ack(fake)
            inject(fake, job_message(101, [started_job("r1")], assigned=1, running=1))

            async def running() -> bool:
                return (await runner_status()).get("phase") == "Running"

            await eventually(running, within=30, what="the runner Running")
            await listener.kill()
            fake.control.faults.remove(hold)  # (it may not have been reached before the kill)
            assert sessions() == [first_session]  # the killed process deleted nothing
            written = await runner_status()

            second_session = await restart_and_expect_the_session_resumed(first_session)
            await remember_patch_seq(grown=True)
            assert await runner_status() == written  # still recorded, nothing undone

            # the service may deliver the message again: nothing changes
            inject(fake, job_message(101, [started_job("r1")], assigned=1, running=1))
            await eventually(
                lambda: acked(fake, 101) == 1,
                within=30,
                what="the redelivered message acknowledged",
            )
            assert await runner_status() == written

            # 2. JobCompleted: killed after the completion was recorded, before the ack
            hold = hold_next_ack(fake)
            inject(fake, job_message(102, [completed_job("r1")], assigned=0))

            async def completed() -> bool:
                return "jobCompletion" in await runner_status()

            await eventually(completed, within=30, what="the completion recorded")
            await listener.kill()
            fake.control.faults.remove(hold)
            recorded = await runner_status()

            await restart_and_expect_the_session_resumed(second_session)
            await remember_patch_seq(grown=True)
            inject(fake, job_message(102, [completed_job("r1")], assigned=0))
            await eventually(
                lambda: acked(fake, 102) == 1,
                within=30,
                what="the redelivered completion acknowledged",
            )
            final = await runner_status()
            # the repeat writes the same record, but for the id of the patch that follows it
            # now: the same or a later one (a repeat never frees the runner's slot earlier)
            first_patch = recorded["jobCompletion"].pop("patchId")
            assert final["jobCompletion"].pop("patchId") >= first_patch
            assert final == recorded
            assert final["phase"] == "Running"
            assert final["jobCompletion"]["runnerName"] == "r1"
            assert final["jobId"] == "job-11"

            assert await listener.terminate() == 0
            assert sessions() == [second_session]  # SIGTERM hands the session over (L7)
            assert (await client_state()).handed_over
            await remember_patch_seq()
        finally:
            if listener.process is not None and listener.process.returncode is None:
                listener.process.kill()
                await listener.process.wait()
        assert patch_seqs == sorted(set(patch_seqs))  # the sequence only grew across restarts
        assert len(patch_seqs) >= 3
        runner_set = await client.get(EPHEMERAL_RUNNER_SET, ObjectKey(namespace, RUNNER_SET))
        assert LISTENER_STATE_ANNOTATION in runner_set.annotations
        log = (tmp_path / "listener.log").read_text()
        assert "resumed our message session" in log
        for secret in [PAT, *fake.control.issued_secrets()]:
            if len(secret) >= 8:
                assert secret not in log
