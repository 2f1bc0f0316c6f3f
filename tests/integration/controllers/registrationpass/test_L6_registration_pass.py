"""L6: the registration pass deletes what leaked and nothing else — and nothing at all when
GitHub's answer is incomplete (an error, a partial page, a 5xx between the list and the
confirmations), at most ``max_deletions`` per pass, never a registration of another cluster's
scale set with the same name."""

from __future__ import annotations

import json

from tests.integration.controllers.registrationpass.world import PREFIX, SCALE_SET, World

from scaleset.api import EphemeralRunner, EphemeralRunnerSet
from scaleset.controllers.github_access import GitHubTarget
from scaleset.controllers.registrationpass.actions import InferCompletion, RunnerTarget
from scaleset.controllers.registrationpass.apply import Applier, DeletionOutcome
from scaleset.controllers.registrationpass.settings import Settings
from scaleset.embedded.actions.faults import Surface
from scaleset.kube.resources import EPHEMERAL_RUNNER


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


async def test_L6_missing_registration_with_a_job_is_kept_and_gets_an_inferred_completion(
    world: World,
) -> None:
    """The runner is never deleted by the pass; its lost JobCompleted is written in its place
    from its own job fields, so the EphemeralRunner controller's L4 path ends it."""
    await world.create_set()
    name = f"{PREFIX}busy1"
    gone = await world.create_runner(
        name,
        status={"phase": "Running", "jobRequestId": 7, "jobId": "j7", "workflowRunId": 70},
    )
    world.fake.control.delete_runner(gone)
    started = world.clock.time()
    report = await world.run_pass(world.registration_pass())
    assert report.done == ("JobCompletionInferred",)
    obj = await world.client.get(EPHEMERAL_RUNNER, world.key(name))
    assert not obj.is_deleting
    runner = EphemeralRunner.model_validate(obj.raw)
    completion = runner.status.job_completion
    assert completion is not None
    assert (completion.result, completion.runner_id, completion.runner_name) == ("", gone, name)
    assert (completion.job_id, completion.workflow_run_id) == ("j7", 70)
    assert completion.finish_time is not None
    assert abs(completion.finish_time.timestamp() - started) < 2.0
    assert runner.status.phase == "Running"  # nothing else of the status changed
    assert "JobCompletionInferred" in await world.event_reasons()
    # the next pass sees the completion: nothing more to do (the controller's L4 path acts)
    assert (await world.run_pass(world.registration_pass())).done == ()


async def test_L6_inferred_completion_rereads_on_conflict_and_yields_to_a_real_one(
    world: World,
) -> None:
    """The write carries the resourceVersion the pass read: a runner changed since is read
    again and decided again — written when still due, skipped when the listener's real
    JobCompleted landed meanwhile (that one is kept)."""
    await world.create_set()
    status = {"phase": "Running", "jobRequestId": 8, "jobId": "j8", "workflowRunId": 80}
    changed = f"{PREFIX}changed"
    completed = f"{PREFIX}completed"
    targets = {}
    for name in (changed, completed):
        runner_id = await world.create_runner(name, status=status)
        obj = await world.client.get(EPHEMERAL_RUNNER, world.key(name))
        targets[name] = RunnerTarget(name, obj.uid, obj.resource_version, runner_id)
    await world.client.patch_merge(
        EPHEMERAL_RUNNER, world.key(changed), {"metadata": {"labels": {"touched": "yes"}}}
    )
    real = {"result": "succeeded", "runnerId": targets[completed].runner_id}
    real |= {"runnerName": completed, "jobId": "j8", "workflowRunId": 80}
    await world.client.patch_merge(
        EPHEMERAL_RUNNER, world.key(completed), {"status": {"jobCompletion": real}}, status=True
    )
    applier = Applier(world.client, world.namespace)
    assert world.runner_set is not None
    model = EphemeralRunnerSet.model_validate(world.runner_set.raw)
    github = await world.github.client_for(GitHubTarget.of_runner_set(model))
    at = world.clock.time()
    outcomes = {
        name: await applier.apply(InferCompletion(target, "j8", 80, at), github)
        for name, target in targets.items()
    }
    assert outcomes[changed].done
    assert outcomes[completed] == DeletionOutcome(False, "its job completion arrived meanwhile")
    for name, result in ((changed, ""), (completed, "succeeded")):
        obj = await world.client.get(EPHEMERAL_RUNNER, world.key(name))
        completion = EphemeralRunner.model_validate(obj.raw).status.job_completion
        assert completion is not None
        assert (completion.result, completion.runner_name, completion.job_id) == (
            result,
            name,
            "j8",
        )


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
