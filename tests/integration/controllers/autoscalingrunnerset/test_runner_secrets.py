"""A scale set whose runners run the kubernetes container hooks with a ServiceAccount token is
served, with ``RunnersCanReadSecrets=True`` and a Warning: the hooks' Role can read the
namespace's Secrets, the GitHub credentials Secret included (ARC grants the same and says
nothing). The condition clears once the runners carry no token."""

from __future__ import annotations

from typing import Any

from tests.integration.controllers.autoscalingrunnerset.world import CONFIG_SECRET, World

from scaleset.api import AutoscalingRunnerSet, keys


def kubernetes_mode(**spec: Any) -> dict[str, Any]:
    hooks = {"name": keys.RUNNER_CONTAINER_HOOKS_ENV, "value": "/home/runner/k8s/index.js"}
    return {
        "spec": {
            "containers": [{"name": "runner", "image": "runner:1", "env": [hooks]}],
            "restartPolicy": "Never",
            **spec,
        }
    }


def secrets_readable(scale_set: AutoscalingRunnerSet) -> tuple[str, str, str] | None:
    for found in scale_set.status.conditions:
        if found.type == "RunnersCanReadSecrets":
            return (found.status, found.reason, found.message)
    return None


async def test_kubernetes_mode_runners_with_a_token_are_reported_until_fixed(
    world: World,
) -> None:
    await world.create_scale_set("arc", template=kubernetes_mode())
    async with world.controller():
        await world.ready("arc")
        found = await world.scale_set_where(
            "arc",
            lambda s: (secrets_readable(s) or ("",))[0] == "True",
            "RunnersCanReadSecrets=True",
        )
        cond = secrets_readable(found)
        assert cond is not None
        assert CONFIG_SECRET in cond[2]
        messages: list[str] = []

        async def warned() -> bool:
            messages[:] = [m for r, m in await world.events("arc") if r == "KubernetesModeToken"]
            return bool(messages)

        await world.until(warned, "a KubernetesModeToken Event")
        await world.patch_spec(
            "arc", {"template": kubernetes_mode(automountServiceAccountToken=False)}
        )
        await world.scale_set_where(
            "arc",
            lambda s: (secrets_readable(s) or ("",))[0] == "False",
            "RunnersCanReadSecrets=False",
        )
