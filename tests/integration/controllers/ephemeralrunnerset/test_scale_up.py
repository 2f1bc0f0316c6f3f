"""Scale-up: ARC's replicas/patchID contract, runners built as ARC builds them, creation under
expectations (never from a stale cache), the finalizer and the status counts (L0)."""

from __future__ import annotations

from tests.integration.controllers.ephemeralrunnerset.world import (
    RUNNER_FINALIZERS,
    SET,
    World,
)

from scaleset.api import keys


async def test_L0_scale_up_creates_runners_for_the_patch_and_reports_five_counts(
    world: World,
) -> None:
    created = await world.create_set(replicas=3, patch_id=1)
    async with world.controller() as controller:
        await world.count_is(3)
        runners = await world.runners()
        for runner in runners:
            assert runner.name.startswith(f"{SET}-runner-")
            assert runner.annotations[keys.PATCH_ID_ANNOTATION] == "1"
            assert tuple(runner.finalizers) == RUNNER_FINALIZERS
            assert runner.labels[keys.COMPONENT_LABEL] == keys.COMPONENT_RUNNER
            owner = runner.controller_owner
            assert owner is not None
            assert (owner.kind, owner.name, owner.uid) == ("EphemeralRunnerSet", SET, created.uid)
            assert runner.spec["runnerScaleSetId"] == world.scale_set_id
        await world.register(runners[0].name)  # idle
        await world.register(runners[1].name, idle=False)  # starting, registered
        await world.job_started(runners[1].name)  # busy
        status = (
            await world.status_where(
                lambda s: (
                    s.status.busy_ephemeral_runners == 1 and s.status.idle_ephemeral_runners == 1
                ),
                "counts",
            )
        ).status
        assert (
            status.starting_ephemeral_runners,
            status.idle_ephemeral_runners,
            status.busy_ephemeral_runners,
            status.terminal_ephemeral_runners,
            status.deleting_ephemeral_runners,
        ) == (1, 1, 1, 0, 0)
        assert (status.pending_ephemeral_runners, status.running_ephemeral_runners) == (2, 1)
        assert status.current_replicas == 3
        assert status.phase == "Running"
        labels = {"name": SET, "namespace": world.namespace, "organization": "acme"}
        labels |= {"repository": "", "enterprise": ""}

        def gauges() -> tuple[float, ...]:
            states = [
                controller.counted("scaleset_runner_set_runners", **labels, state=state)
                for state in ("starting", "idle", "busy")
            ]
            arc = controller.counted("gha_controller_running_ephemeral_runners", **labels)
            return (*states, arc)

        await world.until(lambda: gauges() == (1.0, 1.0, 1.0, 1.0), "gauges")
        ers = await world.runner_set()
        assert ers is not None
        assert keys.EPHEMERAL_RUNNER_SET_FINALIZER in ers.metadata.finalizers
        # a new patch with the same count creates nothing (and is not acknowledged in status)
        await world.patch_replicas(3, 2)
        await world.caught_up(controller, "patch 2 seen")
        ers = await world.runner_set()
        assert ers is not None
        assert ers.status.last_patch_id == 1
        assert len(await world.runners()) == 3
        # a bigger count creates the difference, annotated with the new patch
        await world.patch_replicas(5, 3)
        await world.count_is(5)
        patches = sorted(r.annotations[keys.PATCH_ID_ANNOTATION] for r in await world.runners())
        assert patches == ["1", "1", "1", "3", "3"]


async def test_L3_a_positive_patch_never_scales_down(world: World) -> None:
    await world.create_set(replicas=2, patch_id=1)
    async with world.controller():
        await world.count_is(2)
        for name in await world.names():
            await world.register(name)
        await world.patch_replicas(0, 2)
        await world.status_where(lambda s: s.status.last_patch_id == 2, "patch 2 accepted")
        assert len(await world.runners()) == 2
