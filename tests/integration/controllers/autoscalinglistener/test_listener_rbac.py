"""RBAC for real: the listener runs in its pod as the ServiceAccount the controller created, bound
to the Role the controller generated, on both backends (the embedded server authorizes
impersonated requests as kube-apiserver's RBAC does; the real one has RBAC on).

- Every request the listener makes while it does everything it ever does (its session state and
  desired count on its EphemeralRunnerSet, JobStarted and JobCompleted on a runner, a poison
  message's Event and its repeat) is allowed — no 403 — and the set of (verb, resource) it used
  equals the set the Role grants: no grant is unused. The grants come from one declared list
  (``scaleset.api.listener_rbac``), so this test is what ties that list to the listener's code.
- Everything else is refused: deleting a runner, touching another EphemeralRunnerSet, listing
  runners outside its namespace, reading Secrets, creating pods.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.integration.controllers.autoscalinglistener.listener_process import (
    ListenerRecord,
    listener_program,
    service_account_client,
)
from tests.integration.controllers.autoscalinglistener.world import SCALE_SET, World

from scaleset.api import keys
from scaleset.api.listener_rbac import granted_accesses
from scaleset.devtools.transports import ServiceAccountRef
from scaleset.embedded.actions.faults import Surface
from scaleset.kube import Forbidden, KubeClient, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    EVENT,
    POD,
    ROLE,
    SECRET,
)
from scaleset.listener.loop import POISON_EVENT_REASON

RUNNER = "arc-runner-rbac1"


def runner_body(namespace: str, scale_set_id: int, config_url: str) -> dict[str, Any]:
    return {
        "metadata": {"name": RUNNER, "namespace": namespace},
        "spec": {
            "githubConfigUrl": config_url,
            "githubConfigSecret": "github-config",
            "runnerScaleSetId": scale_set_id,
            "spec": {"containers": [{"name": "runner", "image": "r:1"}]},
        },
    }


def job_message(message_id: int, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "messageType": "RunnerScaleSetJobMessages",
        "body": json.dumps(jobs),
        "statistics": {"totalAssignedJobs": 0, "totalRunningJobs": 0},
    }


def job(kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "messageType": kind,
        "runnerRequestId": 11,
        "repositoryName": "app",
        "ownerName": "acme",
        "jobId": "job-11",
        "jobDisplayName": "build",
        "workflowRunId": 9011,
        "runnerId": 11,
        "runnerName": RUNNER,
        **extra,
    }


def inject(world: World, *messages: dict[str, Any]) -> None:
    """The next polls are answered with these messages, in order."""
    for message in messages:
        world.fake.control.faults.fail_next(
            1,
            200,
            body=json.dumps(message),
            content_type="application/json",
            surface=Surface.MESSAGE_QUEUE,
            method="GET",
        )


async def rbac_effective(world: World, account: ServiceAccountRef) -> None:
    """Wait until the Role binding is in force (kube-apiserver's authorizer reads RBAC from a
    cache; a pod starts seconds after its RoleBinding in a cluster, here at once)."""
    async with service_account_client(world.backend, account, world.clock) as probe:

        async def allowed() -> bool:
            try:
                await probe.get(
                    EPHEMERAL_RUNNER_SET, ObjectKey(world.scale_set_namespace, SCALE_SET)
                )
            except Forbidden:
                return False
            return True

        await world.until_still(allowed, "the listener's RoleBinding in force")


async def test_the_listener_role_grants_exactly_what_the_listener_uses(world: World) -> None:
    await exercise_the_listener(world)


async def test_a_listener_in_the_controller_namespace_works_in_the_scale_set_namespace(
    split_world: World,
) -> None:
    assert split_world.namespace != split_world.scale_set_namespace
    await exercise_the_listener(split_world)


async def exercise_the_listener(world: World) -> None:
    """Everything the listener ever does, as its ServiceAccount; then compare with the Role."""
    record = ListenerRecord()
    await world.client.create(
        EPHEMERAL_RUNNER,
        runner_body(world.scale_set_namespace, world.scale_set_id, world.fake.config_url("acme")),
    )
    account = ServiceAccountRef(world.namespace, world.name)
    async with world.controller():
        await world.create_listener()

        async def pod_created() -> bool:
            return await world.pod() is not None

        await world.until(pod_created, "the listener pod")
        await rbac_effective(world, account)
        async with world.kubelet(listener_program(world.backend, world.clock, record)):
            await world.running_pod()

            async def state_stored() -> bool:
                ers = await world.client.get(
                    EPHEMERAL_RUNNER_SET, ObjectKey(world.scale_set_namespace, SCALE_SET)
                )
                return keys.LISTENER_STATE_ANNOTATION in ers.annotations

            await world.until(state_stored, "the listener's state on its EphemeralRunnerSet")
            inject(
                world,
                # the second runner does not exist, so its watch cache cannot answer: a get
                job_message(1, [job("JobStarted"), job("JobStarted", runnerName="arc-gone")]),
                job_message(2, [job("JobCompleted", result="succeeded")]),
            )

            async def job_recorded() -> bool:
                runner = await world.client.get(
                    EPHEMERAL_RUNNER, ObjectKey(world.scale_set_namespace, RUNNER)
                )
                return runner.status.get("phase") == "Running" and bool(
                    runner.status.get("jobCompletion")
                )

            await world.until(job_recorded, "JobStarted and JobCompleted on the runner")
            poison = job_message(777, [])
            poison["body"] = "{not json"
            inject(world, *[poison] * 6)  # cap 3: acknowledged twice, the same Event twice

            async def event_repeated() -> bool:
                listed = await world.client.list(EVENT, namespace=world.scale_set_namespace)
                return any(
                    e.raw.get("reason") == POISON_EVENT_REASON and e.raw.get("count") == 2
                    for e in listed.items
                )

            await world.until(event_repeated, "the poison Event created, then counted again")
            pod = await world.pod()
            assert pod is not None
            await world.client.delete(POD, pod.key)  # SIGTERM: the session is deleted

            async def stopped() -> bool:
                return bool(record.exits)

            # no virtual time passes while it stops: a graceful stop needs none, and moving the
            # clock by whole deadlines could time out its hand-over write on a loaded machine
            await world.until_still(stopped, "the listener stopped")

    assert record.exits == [0]
    assert record.forbidden() == []
    assert record.dropped_events == [0.0], "no Event was refused"
    used = record.access.accesses()
    assert {a.namespace for a in used} == {world.scale_set_namespace}
    role = await world.client.get(ROLE, world.rbac_key())
    granted = granted_accesses(role.raw["rules"])
    recorded = {(a.verb, a.group, a.rbac_resource) for a in used}
    assert recorded == granted, (
        f"unused grants: {sorted(granted - recorded)}; used but not granted: "
        f"{sorted(recorded - granted)}"
    )


async def test_the_listener_service_account_is_refused_everything_else(world: World) -> None:
    namespace = world.scale_set_namespace
    await world.runner_set("someone-else")
    await world.client.create(
        EPHEMERAL_RUNNER, runner_body(namespace, world.scale_set_id, world.fake.config_url("acme"))
    )
    account = ServiceAccountRef(world.namespace, world.name)
    async with world.controller():
        await world.create_listener()

        async def bound() -> bool:
            return (await world.listener_objects())["rolebinding"] is not None

        await world.until(bound, "the RoleBinding")
    await rbac_effective(world, account)
    own_set = ObjectKey(namespace, SCALE_SET)
    other_set = ObjectKey(namespace, "someone-else")
    runner = ObjectKey(namespace, RUNNER)
    async with service_account_client(world.backend, account, world.clock) as listener:
        # what the listener does: allowed
        await listener.get(EPHEMERAL_RUNNER, runner)
        await listener.list(EPHEMERAL_RUNNER, namespace=namespace)
        await listener.patch_merge(
            EPHEMERAL_RUNNER, runner, {"status": {"jobId": "j"}}, status=True
        )
        await listener.get(EPHEMERAL_RUNNER_SET, own_set)
        await listener.patch_merge(EPHEMERAL_RUNNER_SET, own_set, {"spec": {"replicas": 1}})
        await listener.create(EVENT, event_body(namespace))
        # anything else: refused
        refused = {
            "delete a runner": listener.delete(EPHEMERAL_RUNNER, runner),
            "patch a runner's spec": listener.patch_merge(
                EPHEMERAL_RUNNER, runner, {"metadata": {"labels": {"x": "y"}}}
            ),
            "list runners in every namespace": listener.list(EPHEMERAL_RUNNER),
            "read another runner set": listener.get(EPHEMERAL_RUNNER_SET, other_set),
            "patch another runner set": listener.patch_merge(
                EPHEMERAL_RUNNER_SET, other_set, {"spec": {"replicas": 9}}
            ),
            "delete its runner set": listener.delete(EPHEMERAL_RUNNER_SET, own_set),
            "read the GitHub Secret": listener.get(SECRET, ObjectKey(namespace, "github-config")),
            "patch the scale set": listener.patch_merge(
                AUTOSCALING_RUNNER_SET, ObjectKey(namespace, SCALE_SET), {"spec": {"maxRunners": 1}}
            ),
            "create a pod": listener.create(
                POD,
                {
                    "metadata": {"name": "x", "namespace": namespace},
                    "spec": {"containers": [{"name": "x", "image": "x"}]},
                },
            ),
        }
        for what, call in refused.items():
            with pytest.raises(Forbidden):
                await call
            assert what


def event_body(namespace: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "arc.rbac-probe", "namespace": namespace},
        "involvedObject": {
            "apiVersion": keys.API_VERSION,
            "kind": "EphemeralRunnerSet",
            "name": SCALE_SET,
            "namespace": namespace,
        },
        "reason": "Probe",
        "message": "rbac probe",
        "type": "Normal",
    }


__all__ = ["KubeClient"]
