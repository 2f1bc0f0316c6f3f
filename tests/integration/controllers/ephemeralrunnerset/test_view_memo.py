"""The reconciler's memo of runner views stays bounded by what the informer holds: a runner
that is gone leaves it, and a set that is gone leaves nothing behind."""

from __future__ import annotations

from tests.integration.controllers.ephemeralrunnerset.world import Finalizers, World

from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET


async def test_the_memo_follows_the_runners_and_forgets_a_deleted_set(
    world: World, finalizers: Finalizers
) -> None:
    created = await world.create_set(replicas=3, patch_id=1)
    async with world.controller() as controller:
        memo = controller.reconciler.views
        await world.count_is(3)
        names = await world.names()
        for name in names:
            await world.register(name)
        await world.until(lambda: len(memo) == 3, "the three runners kept")
        assert created.uid in memo
        parsed = memo.parsed

        # a runner deleted and replaced: its entry goes, the replacement's comes
        await world.client.delete(EPHEMERAL_RUNNER, world.key(names[0]))

        async def replaced() -> bool:
            current = await world.names()
            return len(current) == 3 and names[0] not in current

        await world.until(replaced, "the deleted runner replaced")
        # a runner's change queues its set 0.1 s later: virtual time must pass
        await world.until(lambda: len(memo) == 3, "the memo back at three runners")
        assert memo.parsed > parsed

        # the set deleted: its idle runners are removed, then the set goes, then its memo
        for name in await world.names():
            if name not in names:
                await world.register(name)
        await world.client.delete(EPHEMERAL_RUNNER_SET, world.key("arc"))

        async def set_gone() -> bool:
            return await world.runner_set() is None

        await world.until(set_gone, "the set gone")
        await world.until(lambda: created.uid not in memo, "nothing kept for a deleted set")
        assert len(memo) == 0
