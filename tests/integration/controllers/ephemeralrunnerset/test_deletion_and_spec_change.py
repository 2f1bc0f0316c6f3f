"""L10: a deleting set ignores replicas, removes idle runners at once and waits for busy ones;
a runner-spec change replaces idle runners in place and lets busy ones finish on the old spec,
never waiting for idle runners to drain (ARC #4432)."""

from __future__ import annotations

from tests.integration.controllers.ephemeralrunnerset.world import Finalizers, World

from scaleset.api import keys
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET

NEW_IMAGE = "ghcr.io/actions/actions-runner:2.336.0"


def image_of(runner: object) -> str:
    spec = getattr(runner, "spec", {})
    return str(spec["spec"]["containers"][0]["image"])


async def test_L10_a_deleting_set_removes_idle_at_once_and_waits_for_busy(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=3, patch_id=1)
    async with world.controller():
        await world.count_is(3)
        idle, starting, busy = await world.names()
        await world.register(idle)
        await world.register(starting, idle=False)
        await world.register(busy)
        await world.job_started(busy)
        await world.start_job(busy)
        await world.client.delete(EPHEMERAL_RUNNER_SET, world.key("arc"))

        async def only_busy_left() -> bool:
            return await world.names() == [busy]

        await world.until(only_busy_left, "idle and starting removed")
        assert not world.registered(idle)
        assert not world.registered(starting)
        ers = await world.runner_set()
        assert ers is not None, "the set waits for its busy runner"
        assert keys.EPHEMERAL_RUNNER_SET_FINALIZER in ers.metadata.finalizers
        # the busy runner finishes: the runner controller deletes it, then the set goes
        await world.client.delete(EPHEMERAL_RUNNER, world.key(busy))

        async def set_gone() -> bool:
            return await world.runner_set() is None

        await world.until(set_gone, "the set gone after its last runner")


async def test_L10_spec_change_replaces_idle_runners_and_keeps_busy_ones_on_the_old_spec(
    world: World, finalizers: Finalizers
) -> None:
    await world.create_set(replicas=3, patch_id=1)
    async with world.controller():
        await world.count_is(3)
        idle, starting, busy = await world.names()
        await world.register(idle)
        await world.register(starting, idle=False)
        await world.register(busy)
        await world.job_started(busy)
        await world.set_image(NEW_IMAGE)

        async def replaced() -> bool:
            runners = await world.runners()
            names = {r.name for r in runners}
            return len(runners) == 3 and idle not in names and starting not in names

        await world.until(replaced, "idle and starting runners replaced")
        runners = {r.name: r for r in await world.runners()}
        assert image_of(runners.pop(busy)) != NEW_IMAGE, "the busy runner keeps its spec"
        assert {image_of(r) for r in runners.values()} == {NEW_IMAGE}
        assert not world.registered(idle)


async def test_L10_spec_change_with_min_runners_and_only_idle_runners_completes(
    world: World, finalizers: Finalizers
) -> None:
    """minRunners 2 and no jobs: ARC waits for idle runners that never drain (#4432); we
    replace them at once, listener or not."""
    await world.create_set(replicas=2, patch_id=0)
    async with world.controller():
        await world.count_is(2)
        old = await world.names()
        for name in old:
            await world.register(name)
        await world.set_image(NEW_IMAGE)

        async def all_new() -> bool:
            runners = await world.runners()
            return (
                len(runners) == 2
                and not {r.name for r in runners} & set(old)
                and {image_of(r) for r in runners} == {NEW_IMAGE}
            )

        await world.until(all_new, "both idle runners replaced with the new spec")
        assert not any(world.registered(name) for name in old)
