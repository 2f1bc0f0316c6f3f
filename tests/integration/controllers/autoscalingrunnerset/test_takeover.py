"""Taking over from a live ARC install, and a scale set that vanished on GitHub (ARC #4571).

ARC-shaped objects are created in the state ARC leaves them — master (runner set named like the
scale set, ``integrity-hash`` everywhere) and 0.14.2 (generated runner set name, its old
finalizer and hash annotations) — and scaleset adopts them without a spec change: the runner
set keeps its spec (no runner replaced), the listener keeps its identity, ARC's annotations stay
for a rollback. While ARC's own controller still runs, scaleset does nothing but say so."""

from __future__ import annotations

from typing import Any

from tests.integration.controllers.autoscalingrunnerset.world import (
    CONFIG_SECRET,
    LISTENER_IMAGE,
    RUNNER_IMAGE,
    World,
)

from scaleset.api import keys
from scaleset.kube import KubeObject
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    POD,
)

ARC_IMAGE = "ghcr.io/actions/gha-runner-scale-set-controller:0.14.2"


def arc_runner_spec(world: World, scale_set_id: int) -> dict[str, Any]:
    """``spec.ephemeralRunnerSpec`` as ARC's Go code writes it: the chart's template plus the
    zero values Go serialises (``resources: {}``, ``metadata.creationTimestamp: null``)."""
    return {
        "githubConfigUrl": world.url,
        "githubConfigSecret": CONFIG_SECRET,
        "runnerScaleSetId": scale_set_id,
        "metadata": {"creationTimestamp": None},
        "spec": {
            "containers": [
                {
                    "name": "runner",
                    "image": RUNNER_IMAGE,
                    "command": ["/home/runner/run.sh"],
                    "resources": {},
                }
            ],
            "restartPolicy": "Never",
        },
    }


async def arc_install(
    world: World, *, shape: str, runner_set_name: str
) -> tuple[int, KubeObject, KubeObject, KubeObject]:
    """A scale set, its runner set and its listener as ARC (``master`` or ``0.14.2``) left
    them, with its scale set registered on GitHub."""
    scale_set_id = world.fake.control.create_scale_set(world.url, "arc")
    hash_key = (
        keys.INTEGRITY_HASH_ANNOTATION if shape == "master" else keys.LEGACY_CHANGE_HASH_ANNOTATION
    )
    body = world.scale_set_body(
        "arc",
        annotations={
            keys.RUNNER_SCALE_SET_ID_ANNOTATION: str(scale_set_id),
            keys.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc",
            keys.RUNNER_GROUP_NAME_ANNOTATION: "Default",
            hash_key: "arc-scale-set-hash",
        },
        labels={keys.ORGANIZATION_LABEL: "acme"},
    )
    body["metadata"]["finalizers"] = [keys.AUTOSCALING_RUNNER_SET_FINALIZER]
    ars = await world.client.create(AUTOSCALING_RUNNER_SET, body)
    ars = await world.client.patch_merge(
        AUTOSCALING_RUNNER_SET,
        world.key("arc"),
        {
            "status": {
                "phase": "Running",
                "currentRunners": 2,
                "pendingEphemeralRunners": 0,
                "runningEphemeralRunners": 2,
                "failedEphemeralRunners": 0,
            }
        },
        status=True,
    )
    ers_finalizer = (
        keys.EPHEMERAL_RUNNER_SET_FINALIZER
        if shape == "master"
        else keys.LEGACY_EPHEMERAL_RUNNER_SET_FINALIZER
    )
    ers_hash = (
        keys.INTEGRITY_HASH_ANNOTATION
        if shape == "master"
        else keys.LEGACY_RUNNER_SPEC_HASH_ANNOTATION
    )
    ers = await world.client.create(
        EPHEMERAL_RUNNER_SET,
        {
            "metadata": {
                "name": runner_set_name,
                "namespace": world.namespace,
                "labels": {
                    keys.PART_OF_LABEL: keys.PART_OF_VALUE,
                    keys.COMPONENT_LABEL: keys.COMPONENT_RUNNER_SET,
                    keys.SCALE_SET_NAME_LABEL: "arc",
                    keys.SCALE_SET_NAMESPACE_LABEL: world.namespace,
                    keys.ORGANIZATION_LABEL: "acme",
                },
                "annotations": {
                    ers_hash: "arc-runner-set-hash",
                    keys.RUNNER_GROUP_NAME_ANNOTATION: "Default",
                    keys.RUNNER_SCALE_SET_NAME_ANNOTATION: "arc",
                },
                "finalizers": [ers_finalizer],
                "ownerReferences": [
                    {
                        "apiVersion": keys.API_VERSION,
                        "kind": "AutoscalingRunnerSet",
                        "name": "arc",
                        "uid": ars.uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "replicas": 2,
                "patchID": 5,
                "ephemeralRunnerSpec": arc_runner_spec(world, scale_set_id),
            },
        },
    )
    await world.set_runner_set_status(
        runner_set_name,
        {"currentReplicas": 2, "runningEphemeralRunners": 2, "phase": "Running"},
    )
    ers = await world.client.get(EPHEMERAL_RUNNER_SET, world.key(runner_set_name))
    listener_annotations = (
        {keys.INTEGRITY_HASH_ANNOTATION: "arc-listener-hash"}
        if shape == "master"
        else {
            keys.LEGACY_RUNNER_SPEC_HASH_ANNOTATION: "arc-listener-hash",
            keys.VALUES_HASH_ANNOTATION: "abc",
        }
    )
    listener = await world.client.create(
        AUTOSCALING_LISTENER,
        {
            "metadata": {
                "name": world.listener_name("arc"),
                "namespace": world.namespace,
                "annotations": listener_annotations,
                "finalizers": [keys.AUTOSCALING_LISTENER_FINALIZER],
            },
            "spec": {
                "githubConfigUrl": world.url,
                "githubConfigSecret": CONFIG_SECRET,
                "runnerScaleSetId": scale_set_id,
                "autoscalingRunnerSetNamespace": world.namespace,
                "autoscalingRunnerSetName": "arc",
                "ephemeralRunnerSetName": runner_set_name,
                "maxRunners": 2147483647,
                "minRunners": 0,
                "image": ARC_IMAGE,
            },
        },
    )
    return scale_set_id, ars, ers, listener


async def adopted(world: World, runner_set_name: str) -> None:
    async def done() -> bool:
        ers = await world.runner_set(runner_set_name)
        listener = await world.listener("arc")
        return (
            ers is not None
            and keys.SPEC_HASH_ANNOTATION in ers.annotations
            and listener is not None
            and listener.spec.get("image") == LISTENER_IMAGE
        )

    await world.until(done, "runner set and listener taken over")


async def test_takeover_of_an_arc_master_install_changes_no_runner_spec(world: World) -> None:
    scale_set_id, ars, ers, listener = await arc_install(
        world, shape="master", runner_set_name="arc"
    )
    world.fake.control.clear_requests()
    async with world.controller():
        await adopted(world, "arc")
        after_ars = await world.ready("arc")
    after_ers = await world.runner_set("arc")
    after_listener = await world.listener("arc")
    assert after_ers is not None
    assert after_listener is not None
    assert (after_ers.uid, after_ers.generation) == (ers.uid, ers.generation), "no spec write"
    assert (after_ers.spec["replicas"], after_ers.spec["patchID"]) == (2, 5)
    assert after_ers.annotations[keys.INTEGRITY_HASH_ANNOTATION] == "arc-runner-set-hash"
    assert after_ers.finalizers == [keys.EPHEMERAL_RUNNER_SET_FINALIZER]
    assert after_listener.uid == listener.uid
    assert after_listener.finalizers == [keys.AUTOSCALING_LISTENER_FINALIZER]
    assert after_listener.annotations[keys.INTEGRITY_HASH_ANNOTATION] == "arc-listener-hash"
    assert after_listener.spec["ephemeralRunnerSetName"] == "arc"
    meta = after_ars.metadata
    assert meta.uid == ars.uid
    assert meta.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION] == str(scale_set_id)
    assert meta.annotations[keys.INTEGRITY_HASH_ANNOTATION] == "arc-scale-set-hash"
    assert after_ars.status.phase == "Running"
    # ARC's copy of the counts is removed; the runner set keeps them
    assert "current_runners" not in after_ars.status.model_fields_set
    assert after_ers.raw["status"]["currentReplicas"] == 2
    assert list(world.github_scale_sets()) == [scale_set_id]
    assert world.fake.control.requests_to("/runnerscalesets", "POST") == []
    assert [r.name for r in await world.runner_sets()] == ["arc"]
    assert "RunnerSetAdopted" in [reason for reason, _ in await world.events("arc")]


async def test_takeover_of_an_arc_0_14_2_install_adopts_the_generated_runner_set(
    world: World,
) -> None:
    _, _, ers, listener = await arc_install(world, shape="0.14.2", runner_set_name="arc-x7k2p")
    async with world.controller():
        await adopted(world, "arc-x7k2p")
        await world.ready("arc")
    after_ers = await world.runner_set("arc-x7k2p")
    after_listener = await world.listener("arc")
    assert after_ers is not None
    assert after_listener is not None
    assert (after_ers.uid, after_ers.generation) == (ers.uid, ers.generation), "no spec write"
    assert after_ers.finalizers == [keys.LEGACY_EPHEMERAL_RUNNER_SET_FINALIZER]
    assert after_ers.annotations[keys.LEGACY_RUNNER_SPEC_HASH_ANNOTATION] == "arc-runner-set-hash"
    assert after_listener.uid == listener.uid
    assert after_listener.spec["ephemeralRunnerSetName"] == "arc-x7k2p"
    assert [r.name for r in await world.runner_sets()] == ["arc-x7k2p"], "no second set"


async def test_while_arcs_controller_runs_scaleset_touches_nothing_but_says_so(
    world: World,
) -> None:
    await world.client.create(
        POD,
        {
            "metadata": {
                "name": "arc-gha-rs-controller-6d9f7-x2x4z",
                "namespace": world.namespace,
                "labels": {
                    keys.PART_OF_LABEL: keys.CONTROLLER_PART_OF_VALUE,
                    keys.COMPONENT_LABEL: keys.COMPONENT_CONTROLLER_MANAGER,
                },
            },
            "spec": {"containers": [{"name": "manager", "image": ARC_IMAGE}]},
        },
    )
    await world.create_scale_set("arc")
    async with world.controller():

        async def reported() -> bool:
            current = await world.scale_set("arc")
            return current is not None and any(
                c.type == "ControllerConflict" and c.status == "True"
                for c in current.status.conditions
            )

        await world.until(reported, "ControllerConflict on the scale set")
        ars = await world.scale_set("arc")
        assert ars is not None
        assert ars.metadata.finalizers == []
        assert await world.runner_sets() == []
        assert await world.listeners() == []
        assert world.github_scale_sets() == {}
        await world.client.delete(
            POD, world.key("arc-gha-rs-controller-6d9f7-x2x4z"), grace_period_seconds=0
        )
        await world.ready("arc")
    reasons = [reason for reason, _ in await world.events("arc")]
    assert reasons.index("ArcControllerRunning") < reasons.index("NoOtherController")


async def test_our_own_controller_pod_is_not_mistaken_for_arc(world: World) -> None:
    await world.client.create(
        POD,
        {
            "metadata": {
                "name": "scaleset-controller-0",
                "namespace": world.namespace,
                "labels": {keys.PART_OF_LABEL: keys.CONTROLLER_PART_OF_VALUE},
            },
            "spec": {"containers": [{"name": "manager", "image": LISTENER_IMAGE}]},
        },
    )
    await world.create_scale_set("arc")
    async with world.controller():
        ars = await world.ready("arc")
    assert all(c.type != "ControllerConflict" or c.status == "False" for c in ars.status.conditions)


async def test_a_scale_set_deleted_on_github_is_registered_again_and_the_id_propagates(
    world: World,
) -> None:
    await world.create_scale_set("arc")
    async with world.controller() as controller:
        ars = await world.ready("arc")
        old_id = int(ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])
        ers = await world.runner_set("arc")
        listener = await world.listener("arc")
        async with world.actions() as github:
            await github.delete_runner_scale_set(old_id)
        world.clock.advance(controller.reconciler.settings.verify_interval)
        ars = await world.scale_set_where(
            "arc",
            lambda s: (
                s.metadata.annotations.get(keys.RUNNER_SCALE_SET_ID_ANNOTATION) != str(old_id)
            ),
            "a new id",
        )
        new_id = int(ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])

        async def propagated() -> bool:
            current_ers = await world.runner_set("arc")
            current_listener = await world.listener("arc")
            return (
                current_ers is not None
                and current_ers.spec["ephemeralRunnerSpec"]["runnerScaleSetId"] == new_id
                and current_listener is not None
                and current_listener.spec["runnerScaleSetId"] == new_id
            )

        await world.until(propagated, "new id in runner set and listener")
        after_ers = await world.runner_set("arc")
        after_listener = await world.listener("arc")
    assert world.github_scale_sets()[new_id][0] == "arc"
    assert old_id not in world.github_scale_sets()
    assert ers is not None
    assert listener is not None
    assert after_ers is not None
    assert after_listener is not None
    assert (after_ers.uid, after_listener.uid) == (ers.uid, listener.uid)
    events = await world.events("arc")
    recreated = [message for reason, message in events if reason == "ScaleSetRecreated"]
    assert len(recreated) == 1
    assert str(old_id) in recreated[0]
    assert str(new_id) in recreated[0]
