"""L10: deleting a scale set never strands runners. The runner set goes first and drains while
the listener keeps running; then the listener, then the scale set on GitHub, then the chart's
cleanup-protection finalizers, then ours. The EphemeralRunnerSet controller is played by hand: its
finalizer holds the runner set until "its runners are gone"."""

from __future__ import annotations

from typing import Any

from tests.integration.controllers.autoscalingrunnerset.world import World

from scaleset.api import AutoscalingRunnerSet, keys
from scaleset.kube import KubeObject, NotFound
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    Kind,
)

CHART_OBJECTS: list[tuple[str, Kind, dict[str, Any]]] = [
    (keys.CLEANUP_KUBERNETES_MODE_ROLE_BINDING_NAME_ANNOTATION, ROLE_BINDING, {}),
    (keys.CLEANUP_KUBERNETES_MODE_ROLE_NAME_ANNOTATION, ROLE, {"rules": []}),
    (keys.CLEANUP_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME_ANNOTATION, SERVICE_ACCOUNT, {}),
    (keys.CLEANUP_NO_PERMISSION_SERVICE_ACCOUNT_NAME_ANNOTATION, SERVICE_ACCOUNT, {}),
    (keys.CLEANUP_GITHUB_SECRET_NAME_ANNOTATION, SECRET, {"data": {}}),
    (keys.CLEANUP_MANAGER_ROLE_BINDING_ANNOTATION, ROLE_BINDING, {}),
    (keys.CLEANUP_MANAGER_ROLE_NAME_ANNOTATION, ROLE, {"rules": []}),
]
"""What the gha-runner-scale-set chart creates with ``actions.github.com/cleanup-protection``
and names in the scale set's ``actions.github.com/cleanup-*`` annotations."""


async def chart_objects(world: World) -> dict[str, str]:
    """Create the chart's protected objects; returns the cleanup annotations naming them."""
    annotations: dict[str, str] = {}
    for index, (annotation, kind, extra) in enumerate(CHART_OBJECTS):
        name = f"chart-{kind.plural}-{index}"
        body: dict[str, Any] = {
            "metadata": {
                "name": name,
                "namespace": world.namespace,
                "finalizers": [keys.CLEANUP_PROTECTION_FINALIZER],
            },
            **extra,
        }
        if kind is ROLE_BINDING:
            body["roleRef"] = {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "chart-role",
            }
            body["subjects"] = [
                {"kind": "ServiceAccount", "name": "controller", "namespace": world.namespace}
            ]
        await world.client.create(kind, body)
        annotations[annotation] = name
    return annotations


async def protected(world: World, kind: Kind, name: str) -> bool:
    obj = await world.client.get(kind, world.key(name))
    return keys.CLEANUP_PROTECTION_FINALIZER in obj.finalizers


async def hold_runner_set(world: World, name: str) -> None:
    """The EphemeralRunnerSet controller's finalizer: the set is gone only when it says so."""
    await world.client.patch_merge(
        EPHEMERAL_RUNNER_SET,
        world.key(name),
        {"metadata": {"finalizers": [keys.EPHEMERAL_RUNNER_SET_FINALIZER]}},
    )


async def release_runner_set(world: World, name: str) -> None:
    await world.client.patch_merge(
        EPHEMERAL_RUNNER_SET, world.key(name), {"metadata": {"finalizers": None}}
    )


def in_order(reasons: list[str], expected: list[str]) -> bool:
    positions = [reasons.index(reason) for reason in expected if reason in reasons]
    return len(positions) == len(expected) and positions == sorted(positions)


async def test_L10_deletion_drains_the_runner_set_first_keeping_the_listener_then_the_rest(
    world: World,
) -> None:
    annotations = await chart_objects(world)
    await world.create_scale_set("arc", annotations=annotations)
    async with world.controller():
        ars = await world.ready("arc")
        scale_set_id = int(ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])
        await hold_runner_set(world, "arc")
        await world.set_runner_set_status(
            "arc", {"currentReplicas": 1, "runningEphemeralRunners": 1, "busyEphemeralRunners": 1}
        )
        await world.client.delete(AUTOSCALING_RUNNER_SET, world.key("arc"))

        async def draining() -> bool:
            current = await world.scale_set("arc")
            return current is not None and any(
                c.type == "Finalizing" and c.reason == "DrainingRunnerSet"
                for c in current.status.conditions
            )

        await world.until(draining, "runner set draining")
        ers = await world.runner_set("arc")
        assert ers is not None
        assert ers.is_deleting
        listener = await world.listener("arc")
        assert listener is not None
        assert not listener.is_deleting, "the listener keeps running while runners drain"
        assert scale_set_id in world.github_scale_sets()
        for annotation, kind, _ in CHART_OBJECTS:
            assert await protected(world, kind, annotations[annotation])

        await release_runner_set(world, "arc")  # its last runner finished
        await world.gone(AUTOSCALING_RUNNER_SET, "arc")
    assert await world.listener("arc") is None
    assert scale_set_id not in world.github_scale_sets()
    for annotation, kind, _ in CHART_OBJECTS:
        assert not await protected(world, kind, annotations[annotation])
    reasons = [reason for reason, _ in await world.events("arc")]
    assert in_order(
        reasons,
        [
            "RunnerSetDeleted",
            "ListenerDeleted",
            "ScaleSetDeleted",
            "ChartObjectReleased",
            "FinalizerRemoved",
        ],
    ), reasons


async def test_deletion_without_the_id_annotation_makes_no_github_call(world: World) -> None:
    await world.create_scale_set("arc")
    async with world.controller():
        ars = await world.ready("arc")
    scale_set_id = int(ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])
    await world.client.patch_merge(
        AUTOSCALING_RUNNER_SET,
        world.key("arc"),
        {"metadata": {"annotations": {keys.RUNNER_SCALE_SET_ID_ANNOTATION: None}}},
    )
    await world.client.delete(AUTOSCALING_RUNNER_SET, world.key("arc"))
    world.fake.control.clear_requests()
    async with world.controller(identity="controller-2"):
        await world.gone(AUTOSCALING_RUNNER_SET, "arc")
    assert await world.listener("arc") is None
    assert await world.runner_set("arc") is None
    assert world.fake.control.requests_to("/runnerscalesets", "DELETE") == []
    assert scale_set_id in world.github_scale_sets(), "nothing to delete it by: left, as ARC"


async def test_deleting_the_runner_set_by_hand_gets_a_new_one_and_the_listener_follows(
    world: World,
) -> None:
    await world.create_scale_set("arc")
    async with world.controller():
        await world.ready("arc")
        old = await world.runner_set("arc")
        assert old is not None
        await world.client.delete(EPHEMERAL_RUNNER_SET, world.key("arc"))

        async def replaced() -> bool:
            current = await world.runner_set("arc")
            return current is not None and current.uid != old.uid

        await world.until(replaced, "a new runner set")
        listener = await world.listener("arc")
    assert listener is not None
    assert listener.spec["ephemeralRunnerSetName"] == "arc"


async def get_or_none(world: World, kind: Kind, name: str) -> KubeObject | None:
    try:
        return await world.client.get(kind, world.key(name))
    except NotFound:
        return None


async def test_L10_deleting_one_scale_set_leaves_the_others_alone(world: World) -> None:
    await world.create_scale_set("one")
    await world.create_scale_set("two")
    async with world.controller():
        await world.ready("one")
        two = await world.ready("two")
        await world.client.delete(AUTOSCALING_RUNNER_SET, world.key("one"))
        await world.gone(AUTOSCALING_RUNNER_SET, "one")
        after: AutoscalingRunnerSet | None = await world.scale_set("two")
    assert after is not None
    assert after.metadata.deletion_timestamp is None
    assert await get_or_none(world, EPHEMERAL_RUNNER_SET, "two") is not None
    assert await get_or_none(world, AUTOSCALING_LISTENER, world.listener_name("two")) is not None
    assert two.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION] in {
        str(i) for i in world.github_scale_sets()
    }
