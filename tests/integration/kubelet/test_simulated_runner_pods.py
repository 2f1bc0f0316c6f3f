"""The simulated runner as a container program: an ARC-shaped runner pod whose JIT config comes
from a Secret (``secretKeyRef``) connects to the fake GitHub service, takes a job, exits 0, and
the pod Succeeds; a deleted idle runner pod gets SIGTERM, exits and goes away."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx2
import pytest
from tests.integration.embedded_actions.wire_client import PAT, ScaleSetClient, Session
from tests.integration.kubelet.pods import (
    SIM_LABEL,
    KubeletFactory,
    advance,
    container_status,
    create_pod,
    is_running,
    phase,
    terminated,
    wait_gone,
    wait_pod,
)
from tests.plugins.secret_guard import register_secret_source
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, JobState
from scaleset.embedded.kubelet import ContainerRun, default_runtime, runner_program
from scaleset.embedded.kubelet.directives import RUNNER_FAULTS
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube import KubeClient, ObjectKey
from scaleset.kube.resources import POD, SECRET

RUNNER_IMAGE = "ghcr.io/actions/actions-runner:2.335.1"
JOB_SECONDS = 300.0


@dataclass
class Phases:
    """Runner phases per pod, reported by the runner program."""

    by_pod: dict[str, list[RunnerPhase]] = field(default_factory=dict)

    def __call__(self, run: ContainerRun, phase: RunnerPhase) -> None:
        self.by_pod.setdefault(run.pod.name, []).append(phase)

    def of(self, pod: str) -> list[RunnerPhase]:
        return self.by_pod.get(pod, [])


@dataclass
class Actions:
    fake: FakeGitHub
    scale_set_id: int
    listener: Session


@pytest.fixture
async def actions(clock: ManualClock) -> AsyncIterator[Actions]:
    async with (
        FakeGitHub(clock=clock, poll_hold_seconds=0.05) as fake,
        httpx2.AsyncClient(timeout=20.0) as http,
    ):
        fake.add_pat(PAT)
        register_secret_source(fake.control.issued_secrets)
        org = await ScaleSetClient.register(http, fake, fake.config_url("acme"))
        scale_set_id = await org.create_scale_set("arc")
        listener = await org.open_session(scale_set_id)
        yield Actions(fake, scale_set_id, listener)


def runner_pod(name: str, annotations: dict[str, str] | None = None) -> dict[str, object]:
    """The runner pod ARC's EphemeralRunner controller builds (the parts that matter here)."""
    return {
        "metadata": {
            "name": name,
            "labels": {**SIM_LABEL, "actions-ephemeral-runner": "True"},
            "annotations": annotations or {},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "runner",
                    "image": RUNNER_IMAGE,
                    "command": ["/home/runner/run.sh"],
                    "env": [
                        {
                            "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
                            "valueFrom": {"secretKeyRef": {"name": name, "key": "jitToken"}},
                        },
                        {
                            "name": "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT",
                            "value": "actions-runner-controller/test",
                        },
                        {
                            "name": "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE",
                            "value": "1",
                        },
                    ],
                }
            ],
        },
    }


async def jit_secret(client: KubeClient, namespace: str, actions: Actions, name: str) -> int:
    runner = actions.fake.control.generate_jit_config(actions.scale_set_id, name)
    encoded = base64.b64encode(runner.encoded_jit_config.encode()).decode()
    body = {"metadata": {"name": name}, "data": {"jitToken": encoded}}
    await client.create(SECRET, body, namespace=namespace)
    return runner.id


async def test_a_runner_pod_takes_a_job_and_succeeds(
    client: KubeClient,
    namespace: str,
    start_kubelet: KubeletFactory,
    clock: ManualClock,
    actions: Actions,
) -> None:
    phases = Phases()
    runtime = default_runtime(runner_program(on_phase=phases))
    async with start_kubelet(runtime=runtime) as kubelet:
        runner_id = await jit_secret(client, namespace, actions, "arc-runner-abc")
        request_id = actions.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
        await create_pod(client, namespace, runner_pod("arc-runner-abc"))
        await wait_pod(client, namespace, "arc-runner-abc", lambda p: is_running(p, "runner"), "up")
        await eventually(
            lambda: RunnerPhase.JOB_STARTED in phases.of("arc-runner-abc"),
            within=10.0,
            what="job started",
        )
        truth = actions.fake.control.snapshot()
        assert truth.job(request_id).state is JobState.RUNNING
        assert truth.job(request_id).runner_id == runner_id

        await advance(clock, JOB_SECONDS)
        pod = await wait_pod(
            client, namespace, "arc-runner-abc", lambda p: phase(p) == "Succeeded", "Succeeded"
        )
        done = terminated(pod, "runner")
        assert done is not None
        assert (done["exitCode"], done["reason"]) == (0, "Completed")
        assert container_status(pod, "runner")["image"] == RUNNER_IMAGE
        truth = actions.fake.control.snapshot()
        assert truth.job(request_id).state is JobState.COMPLETED
        assert truth.job(request_id).result == "success"
        assert not truth.runner(runner_id).registered
        assert kubelet.truth(namespace, "arc-runner-abc") is not None


async def test_an_outdated_runner_exits_7_from_the_annotation(
    client: KubeClient, namespace: str, kubelet: object, actions: Actions
) -> None:
    await jit_secret(client, namespace, actions, "arc-runner-old")
    pod = runner_pod("arc-runner-old", annotations={RUNNER_FAULTS: "outdated"})
    await create_pod(client, namespace, pod)
    done_pod = await wait_pod(
        client, namespace, "arc-runner-old", lambda p: phase(p) == "Failed", "Failed"
    )
    done = terminated(done_pod, "runner")
    assert done is not None
    assert (done["exitCode"], done["reason"]) == (7, "Error")


async def test_deleting_an_idle_runner_pod_stops_the_runner_and_removes_the_pod(
    client: KubeClient,
    namespace: str,
    start_kubelet: KubeletFactory,
    actions: Actions,
) -> None:
    phases = Phases()
    async with start_kubelet(runtime=default_runtime(runner_program(on_phase=phases))):
        runner_id = await jit_secret(client, namespace, actions, "arc-runner-idle")
        await create_pod(client, namespace, runner_pod("arc-runner-idle"))
        await eventually(
            lambda: RunnerPhase.LISTENING in phases.of("arc-runner-idle"),
            within=10.0,
            what="listening",
        )
        assert actions.fake.control.snapshot().runner(runner_id).connected
        # ARC deletes the JIT Secret once the runner runs (lifecycle L5): nothing breaks.
        await client.delete(SECRET, ObjectKey(namespace, "arc-runner-idle"))

        await client.delete(POD, ObjectKey(namespace, "arc-runner-idle"))
        await wait_gone(client, namespace, "arc-runner-idle")
        assert phases.of("arc-runner-idle")[-1] is RunnerPhase.EXITED
        assert not actions.fake.control.snapshot().runner(runner_id).connected
