"""A scale set's author cannot reach past their scale set: a listener template that would run
anything but the listener as the controller builds it (another image, a hostPath, a Secret of
the controller's namespace) and a ``githubConfigUrl`` over plain http are refused —
``Valid=False`` with the refusal's reason and an Event naming the field, nothing registered,
no listener — unless the controller's flags allow them. The other scale sets are served."""

from __future__ import annotations

from typing import Any

from tests.integration.controllers.autoscalingrunnerset.world import World

from scaleset.api import AutoscalingRunnerSet, Policy, keys
from scaleset.kube.resources import AUTOSCALING_LISTENER

HOST_PATH = {"spec": {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}}
OTHER_IMAGE = {"spec": {"containers": [{"name": "listener", "image": "evil:1"}]}}
ACCEPTED = {
    "metadata": {"labels": {"team": "ci"}},
    "spec": {
        "nodeSelector": {"pool": "system"},
        "priorityClassName": "high",
        "containers": [
            {
                "name": "listener",
                "resources": {"limits": {"memory": "256Mi"}},
                "env": [{"name": "LOG_EXTRA", "value": "1"}],
                "securityContext": {"runAsUser": 1001},
            }
        ],
    },
}


def valid_condition(scale_set: AutoscalingRunnerSet) -> tuple[str, str, str] | None:
    for found in scale_set.status.conditions:
        if found.type == "Valid":
            return (found.status, found.reason, found.message)
    return None


async def refused(world: World, name: str, reason: str) -> tuple[str, str, str]:
    def holds(current: AutoscalingRunnerSet) -> bool:
        cond = valid_condition(current)
        return cond is not None and cond[:2] == ("False", reason)

    found = await world.scale_set_where(name, holds, f"Valid=False {reason} on {name}")
    cond = valid_condition(found)
    assert cond is not None
    assert keys.RUNNER_SCALE_SET_ID_ANNOTATION not in found.metadata.annotations
    return cond


async def event(world: World, name: str, reason: str) -> str:
    messages: list[str] = []

    async def posted() -> bool:
        messages[:] = [m for r, m in await world.events(name) if r == reason]
        return bool(messages)

    await world.until(posted, f"a {reason} Event on {name}")
    return messages[0]


async def listener_template(world: World, name: str) -> dict[str, Any] | None:
    listener = await world.listener(name)
    assert listener is not None
    template: dict[str, Any] | None = listener.spec.get("template")
    return template


async def test_a_listener_template_beyond_the_allow_list_is_refused_by_field(
    world: World,
) -> None:
    await world.create_scale_set("host-path", listenerTemplate=HOST_PATH)
    await world.create_scale_set("other-image", listenerTemplate=OTHER_IMAGE)
    await world.create_scale_set("good", listenerTemplate=ACCEPTED)
    async with world.controller():
        await world.ready("good")
        for name, field in (
            ("host-path", "spec.listenerTemplate.spec.volumes"),
            ("other-image", "spec.listenerTemplate.spec.containers[0].image"),
        ):
            cond = await refused(world, name, "ListenerTemplateRefused")
            assert field in cond[2]
            assert "--allow-full-listener-template" in cond[2]
            assert field in await event(world, name, "ListenerTemplateRefused")
    assert await listener_template(world, "good") == ACCEPTED
    listeners = [obj.spec["autoscalingRunnerSetName"] for obj in await world.listeners()]
    assert listeners == ["good"], "no listener for a refused scale set"
    assert [s[0] for s in world.github_scale_sets().values()] == ["good"]


async def test_with_the_full_template_allowed_the_template_reaches_the_listener(
    world: World,
) -> None:
    await world.create_scale_set("host-path", listenerTemplate=HOST_PATH)
    async with world.controller(
        settings=world.settings(
            policy=Policy(allow_http_github_url=True, allow_full_listener_template=True)
        )
    ):
        await world.ready("host-path")
    assert await listener_template(world, "host-path") == HOST_PATH


async def test_a_refused_template_fixed_by_its_author_is_served(world: World) -> None:
    await world.create_scale_set("arc", listenerTemplate=OTHER_IMAGE)
    async with world.controller():
        await refused(world, "arc", "ListenerTemplateRefused")
        await world.patch_spec("arc", {"listenerTemplate": ACCEPTED})
        await world.ready("arc")
    assert await listener_template(world, "arc") == ACCEPTED


async def test_an_http_config_url_is_refused_unless_the_controller_allows_it(
    world: World,
) -> None:
    assert world.url.startswith("http://"), "the fake GitHub serves http"
    await world.create_scale_set("arc")
    async with world.controller(settings=world.settings(policy=Policy())):
        cond = await refused(world, "arc", "InsecureGitHubUrl")
        assert "spec.githubConfigUrl" in cond[2]
        assert "--allow-http-github-url" in cond[2]
        assert "spec.githubConfigUrl" in await event(world, "arc", "InsecureGitHubUrl")
        assert world.github_scale_sets() == {}, "no credential was sent"
    async with world.controller():
        await world.ready("arc")
    listener = await world.get(AUTOSCALING_LISTENER, world.listener_name("arc"))
    assert listener is not None
