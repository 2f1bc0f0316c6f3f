"""The registration pass as the manager runs it: a pass for each EphemeralRunnerSet at start,
the next one ``interval`` later on the ManualClock (not before), and the process registry
names it."""

from __future__ import annotations

from tests.integration.controllers.registrationpass.world import PREFIX, World
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.registrationpass import setup as registrationpass_setup
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.controllers.registry import registered_names
from scaleset.controllers.setup import ProcessContext


def test_the_pass_is_registered_last() -> None:
    assert registered_names()[-1] == registrationpass_setup.NAME


async def test_L6_the_manager_runs_a_pass_per_set_every_interval(world: World) -> None:
    await world.create_set()
    first = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}o1").id
    own = make_client(world.backend, clock=world.clock)
    github = GitHubClients(
        own, ClientOptions(clock=world.clock, environ={}, allow_http_github_url=True)
    )
    try:
        manager = manual_manager(own, world.namespace, "pass-1", world.clock)
        options = ControllerOptions(controller_namespace=world.namespace, listener_image="x")
        context = ProcessContext(options, own, world.clock)
        registrationpass_setup.build(
            manager, context, settings=Settings(interval=300.0), github=github
        )
        async with running(manager):
            await eventually(lambda: not world.registered(first), within=30.0, what="pass 1")
            started = world.clock.monotonic()
            second = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}o2").id
            await eventually(
                lambda: not world.registered(second),
                clock=world.clock,
                within=30.0,
                max_step=10.0,
                what="pass 2",
            )
            assert world.clock.monotonic() - started >= 300.0 - 1e-6
    finally:
        await github.aclose()
        await own.close()
