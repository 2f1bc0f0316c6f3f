"""A compromised listener cannot change its runners' pod template: the listener's own RBAC lets
it patch its EphemeralRunnerSet (for replicas and patchID), and a patch of the runner spec made
with exactly those rights is undone by the controller, with a Warning Event. The listener's
replicas and patchID patches stay as written."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.integration.controllers.autoscalingrunnerset.world import World
from tests.support.kube import make_client

from scaleset.api import AutoscalingListener, keys
from scaleset.controllers.autoscalinglistener import resources
from scaleset.controllers.autoscalinglistener.settings import Settings as ListenerSettings
from scaleset.controllers.autoscalingrunnerset.desired import same
from scaleset.devtools.transports import ImpersonatingTransport, ServiceAccountRef
from scaleset.kube import KubeClient
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET, ROLE, ROLE_BINDING, SERVICE_ACCOUNT


@asynccontextmanager
async def as_the_listener(world: World, scale_set: str) -> AsyncIterator[KubeClient]:
    """A client holding exactly the listener's rights: its ServiceAccount, Role and RoleBinding
    as the AutoscalingListener controller makes them (it does not run here)."""
    listener_obj = await world.listener(scale_set)
    assert listener_obj is not None
    listener = AutoscalingListener.model_validate(listener_obj.raw)
    settings = ListenerSettings()
    for kind, body in (
        (SERVICE_ACCOUNT, resources.service_account(listener, settings)),
        (ROLE, resources.role(listener, settings)),
        (ROLE_BINDING, resources.role_binding(listener, settings)),
    ):
        body = copy.deepcopy(body)
        body["metadata"].pop("ownerReferences", None)
        await world.client.create(kind, body)
    account = ServiceAccountRef(listener.metadata.namespace, listener.metadata.name)
    client = make_client(
        world.backend,
        clock=world.clock,
        wrap=lambda inner: ImpersonatingTransport.as_service_account(inner, account),
    )
    try:
        yield client
    finally:
        await client.close()


def runner_spec(obj: Any) -> dict[str, Any]:
    spec: dict[str, Any] = obj.spec["ephemeralRunnerSpec"]
    return spec


async def test_a_listener_patching_its_runner_spec_is_undone_with_an_event(world: World) -> None:
    await world.create_scale_set("arc")
    async with world.controller():
        await world.ready("arc")
        before = await world.runner_set("arc")
        assert before is not None
        wanted = copy.deepcopy(runner_spec(before))
        hostile = {
            "spec": {
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": "http://attacker.internal/acme",
                    "spec": {
                        "serviceAccountName": "default",
                        "containers": [
                            {
                                "name": "runner",
                                "image": "evil:1",
                                "securityContext": {"privileged": True},
                            }
                        ],
                        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
                    },
                }
            }
        }
        async with as_the_listener(world, "arc") as listener:
            patched = await listener.patch_merge(EPHEMERAL_RUNNER_SET, world.key("arc"), hostile)
        assert not same(runner_spec(patched), wanted), "the listener's rights allow the patch"

        async def restored() -> bool:
            current = await world.runner_set("arc")
            return current is not None and same(runner_spec(current), wanted)

        await world.until(restored, "the runner spec restored")
        events: list[tuple[str, str]] = []

        async def announced() -> bool:
            events[:] = [e for e in await world.events("arc") if e[0] == "RunnerSetSpecRestored"]
            return bool(events)

        await world.until(announced, "a RunnerSetSpecRestored Event")
        assert "spec.ephemeralRunnerSpec.spec" in events[0][1]
        assert "spec.ephemeralRunnerSpec.githubConfigUrl" in events[0][1]
        assert "attacker" not in events[0][1]


async def test_the_listeners_replicas_and_patch_id_stay_as_written(world: World) -> None:
    await world.create_scale_set("arc")
    async with world.controller() as running:
        await world.ready("arc")
        async with as_the_listener(world, "arc") as listener:
            await listener.patch_merge(
                EPHEMERAL_RUNNER_SET,
                world.key("arc"),
                {"spec": {"replicas": 7, "patchID": 42}},
            )
        # a change of the scale set afterwards still goes through in place, and leaves them
        await world.patch_spec("arc", {"maxRunners": 9, "runnerScaleSetLabels": ["gpu"]})

        async def relabelled() -> bool:
            current = await world.scale_set("arc")
            return current is not None and any(
                "gpu" in labels for _, labels, _ in world.github_scale_sets().values()
            )

        await world.until(relabelled, "the label change reached GitHub")
        await world.until(lambda: running.decisions("ListenerUpdated") >= 1, "listener updated")
        current = await world.runner_set("arc")
        assert current is not None
        assert current.spec["replicas"] == 7
        assert current.spec["patchID"] == 42
        assert running.decisions("RunnerSetSpecRestored") == 0
        assert keys.SPEC_HASH_ANNOTATION in current.annotations
