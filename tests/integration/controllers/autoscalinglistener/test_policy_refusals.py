"""The listener pod is built only from what the controller's policy accepts: a listener whose
template goes beyond the allow-list (a hostPath, another image) or whose config URL is plain
http gets ``Configured=False`` with the refusal's reason and an Event naming the field, and no
pod — and a pod built under a wider policy (before an upgrade, or with the flag on) is deleted
once the controller runs with the narrower one. The pod the API server stores meets the Pod
Security "restricted" profile, with an accepted template too."""

from __future__ import annotations

import dataclasses

from tests.integration.controllers.autoscalinglistener.world import SETTINGS, World
from tests.support.pod_security import violations

from scaleset.api import Policy

HOST_PATH = {"spec": {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}}
OTHER_IMAGE = {"spec": {"containers": [{"name": "listener", "image": "evil:1"}]}}
FULL_TEMPLATE = dataclasses.replace(
    SETTINGS, policy=dataclasses.replace(SETTINGS.policy, allow_full_listener_template=True)
)


async def configured_false(world: World, reason: str) -> str:
    cond = await world.condition_where(
        "Configured",
        lambda c: c["status"] == "False" and c["reason"] == reason,
        f"Configured=False {reason}",
    )
    return str(cond["message"])


async def test_a_refused_template_gets_no_pod_and_an_event_naming_the_field(
    world: World,
) -> None:
    await world.create_listener(template=OTHER_IMAGE)
    async with world.controller(), world.kubelet():
        message = await configured_false(world, "ListenerTemplateRefused")
        assert "spec.template.spec.containers[0].image" in message
        _, _, event = await world.event_where(
            lambda _t, reason, _m: reason == "ListenerTemplateRefused", "the refusal's Event"
        )
        assert "spec.template.spec.containers[0].image" in event
        assert await world.pod() is None
        assert (await world.listener_objects())["config"] is None, "no credentials written"


async def test_with_the_full_template_allowed_the_pod_gets_it(world: World) -> None:
    await world.create_listener(template=HOST_PATH)
    async with world.controller(settings=FULL_TEMPLATE), world.kubelet():
        pod = await world.running_pod()
    volumes = {volume["name"]: volume for volume in pod.spec["volumes"]}
    assert volumes["host"]["hostPath"]["path"] == "/"


async def test_a_pod_of_a_template_the_policy_now_refuses_is_deleted(world: World) -> None:
    await world.create_listener(template=HOST_PATH)
    async with world.kubelet():
        async with world.controller(settings=FULL_TEMPLATE):
            running = await world.running_pod()
        async with world.controller():
            await configured_false(world, "ListenerTemplateRefused")

            async def gone() -> bool:
                pod = await world.pod()
                return pod is None or pod.uid != running.uid

            await world.until(gone, "the refused pod deleted")
            _, _, event = await world.event_where(
                lambda _t, reason, _m: reason == "ListenerPodRefused", "ListenerPodRefused"
            )
            assert "spec.template.spec.volumes" in event
            assert await world.pod() is None


async def test_an_http_config_url_is_refused_unless_allowed(world: World) -> None:
    await world.create_listener()
    strict = dataclasses.replace(SETTINGS, policy=Policy())
    async with world.controller(settings=strict), world.kubelet():
        message = await configured_false(world, "InsecureGitHubUrl")
        assert "spec.githubConfigUrl" in message
        assert await world.pod() is None
    async with world.controller(), world.kubelet():
        await world.running_pod()


async def test_the_stored_listener_pod_meets_the_restricted_profile(world: World) -> None:
    template = {
        "spec": {
            "securityContext": {"runAsUser": 1001},
            "containers": [{"name": "listener", "resources": {"limits": {"memory": "1Gi"}}}],
        }
    }
    await world.create_listener(template=template)
    async with world.controller(), world.kubelet():
        pod = await world.running_pod()
    assert violations(pod.raw) == []
    assert pod.spec["securityContext"]["runAsUser"] == 1001
