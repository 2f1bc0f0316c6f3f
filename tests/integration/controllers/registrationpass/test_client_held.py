"""The registration pass holds its GitHub client for the whole pass (``GitHubClients.use``): a
client nobody holds is closed by the next caller once it has been idle for the idle period, so
a pass outlasting that period (a slow GitHub, many runners) would make its later calls on a
closed client."""

from __future__ import annotations

from tests.integration.controllers.registrationpass.world import PREFIX, World
from tests.integration.controllers.test_github_access import CallHook

from scaleset.controllers.github_access import ClientOptions, GitHubClients, GitHubTarget


async def test_L6_a_pass_outlasting_the_idle_period_finishes_with_its_client(
    world: World,
) -> None:
    await world.create_set()
    ours = await world.create_runner(f"{PREFIX}ours1")
    orphan = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}orphan").id
    other = GitHubTarget(world.namespace, world.fake.config_url("other"), "github-config")

    async def slow_github() -> None:
        world.clock.advance(world.github.close_idle_after)  # the pass outlasts the idle period
        await world.github.client_for(other)  # any caller sweeps the idle clients

    hook = CallHook("", slow_github)  # the pass's first GitHub request
    world.github = GitHubClients(
        world.client,
        ClientOptions(clock=world.clock, environ={}, allow_http_github_url=True, transport=hook),
    )
    try:
        report = await world.run_pass(world.registration_pass())
    finally:
        await world.github.aclose()
        await hook.aclose()
    assert report.failed == ""
    assert report.done == ("OrphanRegistration",)
    assert not world.registered(orphan)
    assert world.registered(ours)
