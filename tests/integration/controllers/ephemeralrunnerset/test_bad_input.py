"""Bad input is ignored with an Event, never acted on: replicas below 0, above the scale set's
maxRunners, a patch id going backwards, a config URL the controller's policy refuses."""

from __future__ import annotations

from tests.integration.controllers.ephemeralrunnerset.world import Finalizers, World

from scaleset.api import keys
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET


def accepted(reason: str):  # type: ignore[no-untyped-def]
    def check(ers) -> bool:  # type: ignore[no-untyped-def]
        return any(
            c.type == "ReplicasAccepted" and c.reason == reason for c in ers.status.conditions
        )

    return check


async def test_L8_negative_replicas_are_ignored_with_an_event(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=2, patch_id=1)
    async with world.controller():
        await world.count_is(2)
        for name in await world.names():
            await world.register(name)
        await world.patch_replicas(-1, 0)
        await world.status_where(accepted("InvalidReplicas"), "rejected")
        await world.event_posted("InvalidReplicas", kind="EphemeralRunnerSet")
        assert len(await world.names()) == 2


async def test_L8_replicas_above_the_scale_sets_maximum_are_ignored(
    world: World, finalizers: Finalizers
) -> None:
    scale_set = await world.client.create(
        AUTOSCALING_RUNNER_SET,
        {
            "apiVersion": keys.API_VERSION,
            "kind": "AutoscalingRunnerSet",
            "metadata": {"name": "arc", "namespace": world.namespace},
            "spec": {
                "githubConfigUrl": world.fake.config_url("acme"),
                "githubConfigSecret": "github-config",
                "maxRunners": 2,
            },
        },
    )
    owner = {
        "apiVersion": keys.API_VERSION,
        "kind": "AutoscalingRunnerSet",
        "name": "arc",
        "uid": scale_set.uid,
        "controller": True,
    }
    await world.create_set(replicas=2, patch_id=1, metadata={"ownerReferences": [owner]})
    async with world.controller():
        await world.count_is(2)
        await world.patch_replicas(50, 2)
        await world.status_where(accepted("ReplicasAboveMaximum"), "rejected")
        await world.event_posted("ReplicasAboveMaximum", kind="EphemeralRunnerSet")
        assert len(await world.names()) == 2


async def test_L8_a_patch_id_going_backwards_is_ignored(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=1, patch_id=7)
    async with world.controller():
        await world.count_is(1)
        await world.status_where(lambda s: s.status.last_patch_id == 7, "patch 7 accepted")
        await world.patch_replicas(4, 5)  # a stale second listener
        await world.status_where(accepted("PatchIDWentBackwards"), "rejected")
        assert len(await world.names()) == 1
        await world.patch_replicas(4, 8)
        await world.count_is(4)


async def test_L8_an_http_config_url_is_refused_unless_the_controller_allows_it(
    world: World, finalizers: Finalizers
) -> None:
    """A set created directly (no AutoscalingRunnerSet refused it first) with an http config
    URL: no runner is created (each would send the namespace's GitHub credentials in clear
    text), a condition and an Event name the field; allowed, the same set scales."""
    assert world.fake.config_url("acme").startswith("http://"), "the fake GitHub serves http"
    await world.create_set(replicas=2, patch_id=1)
    async with world.controller(allow_http_github_url=False) as controller:
        refused = await world.status_where(accepted("InsecureGitHubUrl"), "refused")
        message = next(c.message for c in refused.status.conditions if c.type == "ReplicasAccepted")
        assert "spec.ephemeralRunnerSpec.githubConfigUrl" in message
        await world.event_posted("InsecureGitHubUrl", kind="EphemeralRunnerSet")
        await world.caught_up(controller, "the refused set")
        assert await world.names() == []
        assert world.fake.control.requests == [], "no GitHub call"
    async with world.controller():
        await world.count_is(2)
