"""A scale set's life under the AutoscalingRunnerSet controller (kubernetes.md §9.1, adapted
where scaleset differs on purpose): registration on GitHub, one runner set and one listener
updated in place, status mirrored from the runner set."""

from __future__ import annotations

from tests.integration.controllers.autoscalingrunnerset.conftest import (
    LISTENER_IMAGE,
    World,
)

from scaleset.api import keys
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET


async def test_a_new_scale_set_is_registered_and_gets_one_runner_set_a_listener_and_status(
    world: World,
) -> None:
    await world.create_scale_set(
        "arc", runnerScaleSetLabels=["linux", "gpu"], minRunners=1, maxRunners=5
    )
    async with world.controller():
        ars = await world.ready("arc")
    meta = ars.metadata
    assert keys.AUTOSCALING_RUNNER_SET_FINALIZER in meta.finalizers
    scale_set_id = int(meta.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])
    assert meta.annotations[keys.RUNNER_SCALE_SET_NAME_ANNOTATION] == "arc"
    assert meta.annotations[keys.RUNNER_GROUP_NAME_ANNOTATION] == "Default"
    assert meta.labels[keys.ORGANIZATION_LABEL] == "acme"
    assert world.github_scale_sets()[scale_set_id] == ("arc", ("arc", "linux", "gpu"), 1)
    on_github = await world.github_scale_set(scale_set_id)
    assert on_github is not None
    assert on_github.runner_setting.disable_update
    runner_sets = await world.runner_sets()
    assert [rs.name for rs in runner_sets] == ["arc"]
    ers = runner_sets[0]
    owner = ers.controller_owner
    assert owner is not None
    assert owner.uid == meta.uid
    assert ers.spec["ephemeralRunnerSpec"]["runnerScaleSetId"] == scale_set_id
    listener = await world.listener("arc")
    assert listener is not None
    assert listener.spec["ephemeralRunnerSetName"] == "arc"
    assert listener.spec["runnerScaleSetId"] == scale_set_id
    assert (listener.spec["minRunners"], listener.spec["maxRunners"]) == (1, 5)
    assert listener.spec["image"] == LISTENER_IMAGE
    assert ars.status.phase == "Running"
    assert [c.type for c in ars.status.conditions if c.status == "True"] == [
        "Valid",
        "ScaleSetRegistered",
    ]
    assert await world.get(EPHEMERAL_RUNNER_SET, "arc") is not None
    reasons = [reason for reason, _ in await world.events("arc")]
    assert "ScaleSetRegistered" in reasons
