"""L6: the registration pass deletes what leaked and nothing else — and nothing at all when
GitHub's answer is incomplete (an error, a partial page, a 5xx between the list and the
confirmations), at most ``max_deletions`` per pass, never a registration of another cluster's
scale set with the same name."""

from __future__ import annotations

import json

from tests.integration.controllers.hygiene.world import PREFIX, SCALE_SET, World

from scaleset.controllers.hygiene.observed import Settings
from scaleset.embedded.actions.faults import Surface


async def test_L6_er_whose_registration_is_gone_is_deleted(world: World) -> None:
    await world.create_set()
    gone = await world.create_runner(f"{PREFIX}gone1")
    kept = await world.create_runner(f"{PREFIX}kept1")
    world.fake.control.delete_runner(gone)
    report = await world.run_pass(world.registration_pass())
    assert report.done == ("RegistrationMissing",)
    assert not await world.runner_exists(f"{PREFIX}gone1")
    assert await world.runner_exists(f"{PREFIX}kept1")
    assert world.registered(kept)
    assert "RegistrationMissing" in await world.event_reasons()


async def test_L6_missing_registration_with_a_live_job_is_kept(world: World) -> None:
    await world.create_set()
    gone = await world.create_runner(
        f"{PREFIX}busy1", status={"phase": "Running", "jobRequestId": 7, "jobId": "j7"}
    )
    world.fake.control.delete_runner(gone)
    report = await world.run_pass(world.registration_pass())
    assert report.done == ()
    assert await world.runner_exists(f"{PREFIX}busy1")


async def test_L6_runner_without_our_prefix_is_not_judged(world: World) -> None:
    await world.create_set()
    gone = await world.create_runner("handmade-runner")
    world.fake.control.delete_runner(gone)
    report = await world.run_pass(world.registration_pass())
    assert report.done == ()
    assert await world.runner_exists("handmade-runner")


async def test_L6_orphan_registration_of_our_scale_set_is_removed(world: World) -> None:
    await world.create_set()
    ours = await world.create_runner(f"{PREFIX}ours1")
    orphan = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}orphan").id
    report = await world.run_pass(world.registration_pass())
    assert report.done == ("OrphanRegistration",)
    assert not world.registered(orphan)
    assert world.registered(ours)


async def test_L6_other_clusters_same_named_scale_set_registration_survives(
    world: World,
) -> None:
    """Another cluster's scale set with our name (another runner group, so another id) has
    runners with our name prefix in the same org; the pass must not remove them."""
    await world.create_set()
    group = world.fake.control.add_runner_group(world.fake.config_url("acme"), "other-cluster")
    other = world.fake.control.create_scale_set(
        world.fake.config_url("acme"), SCALE_SET, runner_group_id=group
    )
    assert other != world.scale_set_id
    theirs = world.fake.control.generate_jit_config(other, f"{PREFIX}theirs").id
    report = await world.run_pass(world.registration_pass())
    assert report.done == ()
    assert world.registered(theirs)


async def test_L6_github_5xx_mid_pass_deletes_nothing(world: World) -> None:
    """The REST list succeeds; the confirmation by id answers 500 every time: neither the ER
    whose registration is gone nor the orphan registration is touched."""
    await world.create_set()
    gone = await world.create_runner(f"{PREFIX}gone2")
    world.fake.control.delete_runner(gone)
    orphan = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}orphan2").id
    world.fake.control.faults.fail_next(
        None, 500, surface=Surface.ACTIONS, method="GET", path_contains="/agents/"
    )
    report = await world.run_pass(world.registration_pass())
    assert report.failed
    assert report.done == ()
    assert await world.runner_exists(f"{PREFIX}gone2")
    assert world.registered(orphan)
    assert "RegistrationPassFailed" in await world.event_reasons()


async def test_L6_list_error_deletes_nothing(world: World) -> None:
    await world.create_set()
    gone = await world.create_runner(f"{PREFIX}gone3")
    world.fake.control.delete_runner(gone)
    orphan = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}orphan3").id
    world.fake.control.faults.fail_next(None, 503, surface=Surface.GITHUB, method="GET")
    report = await world.run_pass(world.registration_pass())
    assert report.failed
    assert report.done == ()
    assert await world.runner_exists(f"{PREFIX}gone3")
    assert world.registered(orphan)


async def test_L6_partial_page_deletes_nothing(world: World) -> None:
    """A page that announces more runners than the pages hold: the client refuses the list."""
    await world.create_set()
    gone = await world.create_runner(f"{PREFIX}gone4")
    world.fake.control.delete_runner(gone)
    orphan = world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}orphan4").id
    body = json.dumps({"total_count": 5, "runners": []})
    world.fake.control.faults.fail_next(
        None,
        200,
        body=body,
        content_type="application/json",
        surface=Surface.GITHUB,
        method="GET",
        path_contains="/actions/runners",
    )
    report = await world.run_pass(world.registration_pass())
    assert report.failed
    assert report.done == ()
    assert await world.runner_exists(f"{PREFIX}gone4")
    assert world.registered(orphan)


async def test_L6_auth_failure_deletes_nothing(world: World) -> None:
    await world.create_set()
    gone = await world.create_runner(f"{PREFIX}gone5")
    world.fake.control.delete_runner(gone)
    world.fake.control.faults.fail_next(None, 401, surface=Surface.GITHUB, method="GET")
    report = await world.run_pass(world.registration_pass())
    assert report.failed
    assert report.done == ()
    assert await world.runner_exists(f"{PREFIX}gone5")


async def test_L6_the_cap_holds_and_the_next_pass_continues(world: World) -> None:
    await world.create_set()
    orphans = [
        world.fake.control.generate_jit_config(world.scale_set_id, f"{PREFIX}orph{i}").id
        for i in range(5)
    ]
    registration_pass = world.registration_pass(Settings(max_deletions=2))
    first = await world.run_pass(registration_pass)
    assert first.done == ("OrphanRegistration",) * 2
    assert sum(world.registered(o) for o in orphans) == 3
    assert "DeletionCapReached" in await world.event_reasons()
    await world.run_pass(registration_pass)
    await world.run_pass(registration_pass)
    assert not any(world.registered(o) for o in orphans)
