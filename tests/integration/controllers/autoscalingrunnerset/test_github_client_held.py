"""The controller holds its GitHub client while it calls GitHub (``GitHubClients.use``): a
client nobody holds is closed by the next caller once it has been idle for the idle period, so
a call outlasting that period (a slow GitHub) would lose its connection pool mid-call."""

from __future__ import annotations

from tests.integration.controllers.autoscalingrunnerset.world import CONFIG_SECRET, World
from tests.integration.controllers.test_github_access import CallHook

from scaleset.controllers.github_access import GitHubClients, GitHubTarget


async def test_the_client_of_a_call_in_flight_is_not_closed_by_another_caller(
    world: World,
) -> None:
    clients: list[GitHubClients] = []
    open_mid_call: list[int] = []
    other = GitHubTarget(world.namespace, world.fake.config_url("other"), CONFIG_SECRET)

    async def slow_github() -> None:
        github = clients[0]
        world.clock.advance(github.close_idle_after)  # the call outlasts the idle period
        await github.client_for(other)  # any caller sweeps the idle clients
        open_mid_call.append(len(github))

    hook = CallHook("", slow_github)  # the controller's first GitHub request
    try:
        async with world.controller(github_transport=hook) as running:
            clients.append(running.github)
            await world.create_scale_set("arc")
            await world.ready("arc")
    finally:
        await hook.aclose()
    assert open_mid_call == [2], "the scale set's client was closed while its call was in flight"
