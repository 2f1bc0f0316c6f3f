"""A scale set's life under the AutoscalingRunnerSet controller (ARC's behaviour,
where scaleset does not differ on purpose): registration on GitHub, one runner set and one listener
updated in place, status mirrored from the runner set."""

from __future__ import annotations

from tests.integration.controllers.autoscalingrunnerset.world import (
    LISTENER_IMAGE,
    PAT,
    World,
    runner_template,
)

from scaleset.api import keys
from scaleset.controllers.autoscalingrunnerset.plan import RETIRED_COUNTS
from scaleset.kube.resources import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER_SET


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


async def test_no_churn_once_the_listener_names_the_runner_set(world: World) -> None:
    settings = world.settings(image_pull_secrets=("regcred",))
    await world.create_scale_set("arc")
    async with world.controller(settings=settings) as controller:
        await world.ready("arc")
        listener = await world.listener("arc")
        ers = await world.runner_set("arc")
        assert listener is not None
        assert ers is not None
        assert listener.spec["imagePullSecrets"] == [{"name": "regcred"}]
        verified = controller.decisions("ScaleSetVerified")
        # wake it up twice: an unrelated annotation, and the periodic check with GitHub
        await world.client.patch_merge(
            AUTOSCALING_RUNNER_SET,
            world.key("arc"),
            {"metadata": {"annotations": {"example.com/touched": "1"}}},
        )
        world.clock.advance(settings.verify_interval)
        await world.until(
            lambda: controller.decisions("ScaleSetVerified") > verified, "verified again"
        )
        after_listener = await world.listener("arc")
        after_ers = await world.runner_set("arc")
    assert after_listener is not None
    assert after_ers is not None
    assert (after_listener.uid, after_listener.resource_version) == (
        listener.uid,
        listener.resource_version,
    )
    assert (after_ers.uid, after_ers.resource_version) == (ers.uid, ers.resource_version)


async def test_L10_a_runner_image_change_updates_the_runner_set_in_place_not_the_listener(
    world: World,
) -> None:
    await world.create_scale_set("arc", minRunners=1)
    async with world.controller():
        await world.ready("arc")
        ers = await world.runner_set("arc")
        listener = await world.listener("arc")
        assert ers is not None
        assert listener is not None
        # idle and busy runners exist: the change must neither wait for them nor stop the listener
        await world.set_runner_set_status(
            "arc",
            {
                "currentReplicas": 2,
                "runningEphemeralRunners": 1,
                "pendingEphemeralRunners": 1,
                "idleEphemeralRunners": 1,
                "busyEphemeralRunners": 1,
            },
        )
        await world.patch_spec("arc", {"template": runner_template("runner:next")})

        async def updated() -> bool:
            current = await world.runner_set("arc")
            assert current is not None
            spec = current.spec["ephemeralRunnerSpec"]["spec"]
            return bool(spec["containers"][0]["image"] == "runner:next")

        await world.until(updated, "runner set updated")
        after = await world.runner_set("arc")
        after_listener = await world.listener("arc")
    assert after is not None
    assert after.uid == ers.uid
    assert (
        after.annotations[keys.SPEC_HASH_ANNOTATION] != ers.annotations[keys.SPEC_HASH_ANNOTATION]
    )
    assert after_listener is not None
    assert (after_listener.uid, after_listener.resource_version) == (
        listener.uid,
        listener.resource_version,
    )
    assert "RunnerSetUpdated" in [reason for reason, _ in await world.events("arc")]


async def test_a_max_runners_change_updates_only_the_listener_in_place(world: World) -> None:
    await world.create_scale_set("arc", maxRunners=10)
    async with world.controller():
        await world.ready("arc")
        ers = await world.runner_set("arc")
        listener = await world.listener("arc")
        assert ers is not None
        assert listener is not None
        await world.patch_spec("arc", {"maxRunners": 3})

        async def updated() -> bool:
            current = await world.listener("arc")
            return current is not None and current.spec["maxRunners"] == 3

        await world.until(updated, "listener maxRunners 3")
        after = await world.runner_set("arc")
        after_listener = await world.listener("arc")
    assert after_listener is not None
    assert after_listener.uid == listener.uid
    assert after is not None
    assert (after.uid, after.resource_version) == (ers.uid, ers.resource_version)


async def test_labels_and_runner_set_metadata_reach_the_runner_set(world: World) -> None:
    await world.create_scale_set(
        "arc", ephemeralRunnerSetMetadata={"annotations": {"kept": "1", "changed": "a"}}
    )
    async with world.controller():
        await world.ready("arc")
        ers = await world.runner_set("arc")
        assert ers is not None
        await world.client.patch_merge(
            AUTOSCALING_RUNNER_SET,
            world.key("arc"),
            {
                "metadata": {"labels": {"team": "platform"}},
                "spec": {
                    "template": runner_template("runner:labels"),
                    "ephemeralRunnerSetMetadata": {
                        "annotations": {"kept": "1", "changed": "b", "added": "c"}
                    },
                    "ephemeralRunnerMetadata": {"labels": {"role": "ci"}},
                },
            },
        )

        async def propagated() -> bool:
            current = await world.runner_set("arc")
            assert current is not None
            return current.labels.get("team") == "platform" and current.spec.get(
                "ephemeralRunnerMetadata"
            ) == {"labels": {"role": "ci"}}

        await world.until(propagated, "labels and metadata on the runner set")
        after = await world.runner_set("arc")
    assert after is not None
    assert after.uid == ers.uid
    assert (after.annotations["kept"], after.annotations["changed"]) == ("1", "b")
    assert after.annotations["added"] == "c"
    image = after.spec["ephemeralRunnerSpec"]["spec"]["containers"][0]["image"]
    assert image == "runner:labels"


async def test_a_secret_name_change_updates_runner_set_and_listener_in_place(
    world: World,
) -> None:
    await world.put_secret("other-config", {"github_token": PAT})
    await world.create_scale_set("arc")
    async with world.controller():
        await world.ready("arc")
        ers = await world.runner_set("arc")
        listener = await world.listener("arc")
        assert ers is not None
        assert listener is not None
        await world.patch_spec("arc", {"githubConfigSecret": "other-config"})

        async def moved() -> bool:
            current = await world.listener("arc")
            current_ers = await world.runner_set("arc")
            assert current is not None
            assert current_ers is not None
            runner_spec = current_ers.spec["ephemeralRunnerSpec"]
            return bool(
                current.spec["githubConfigSecret"] == "other-config"
                and runner_spec["githubConfigSecret"] == "other-config"
            )

        await world.until(moved, "secret name in runner set and listener")
        after = await world.runner_set("arc")
        after_listener = await world.listener("arc")
    assert after is not None
    assert after_listener is not None
    assert (after.uid, after_listener.uid) == (ers.uid, listener.uid)


async def test_a_runner_group_change_moves_the_scale_set_and_a_removed_annotation_returns(
    world: World,
) -> None:
    group_id = world.fake.control.add_runner_group(world.url, "Builders")
    await world.create_scale_set("arc")
    async with world.controller():
        ars = await world.ready("arc")
        scale_set_id = int(ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])
        old_listener = world.listener_name("arc")
        await world.patch_spec("arc", {"runnerGroup": "builders"})
        await world.scale_set_where(
            "arc",
            lambda s: s.metadata.annotations.get(keys.RUNNER_GROUP_NAME_ANNOTATION) == "Builders",
            "runner group annotation",
        )
        assert world.github_scale_sets()[scale_set_id][2] == group_id

        async def new_listener_only() -> bool:
            names = [item.name for item in await world.listeners()]
            return names == [world.listener_name("arc", "builders")]

        await world.until(new_listener_only, "listener under the new name, old one deleted")
        assert old_listener != world.listener_name("arc", "builders")
        await world.client.patch_merge(
            AUTOSCALING_RUNNER_SET,
            world.key("arc"),
            {"metadata": {"annotations": {keys.RUNNER_GROUP_NAME_ANNOTATION: None}}},
        )
        await world.scale_set_where(
            "arc",
            lambda s: s.metadata.annotations.get(keys.RUNNER_GROUP_NAME_ANNOTATION) == "Builders",
            "runner group annotation back",
        )


async def test_runner_scale_set_name_is_the_name_on_github_and_in_the_annotation(
    world: World,
) -> None:
    await world.create_scale_set("arc", runnerScaleSetName="linux-x64")
    async with world.controller():
        ars = await world.ready("arc")
        assert ars.metadata.annotations[keys.RUNNER_SCALE_SET_NAME_ANNOTATION] == "linux-x64"
        scale_set_id = int(ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])
        assert world.github_scale_sets()[scale_set_id][:2] == ("linux-x64", ("linux-x64",))
        await world.patch_spec(
            "arc", {"runnerScaleSetName": "linux-arm", "runnerScaleSetLabels": ["arm"]}
        )
        await world.scale_set_where(
            "arc",
            lambda s: (
                s.metadata.annotations.get(keys.RUNNER_SCALE_SET_NAME_ANNOTATION) == "linux-arm"
            ),
            "renamed",
        )
    assert world.github_scale_sets()[scale_set_id][:2] == ("linux-arm", ("linux-arm", "arm"))


async def test_an_existing_scale_set_of_that_name_is_adopted_not_created(world: World) -> None:
    existing = world.fake.control.create_scale_set(world.url, "arc")
    await world.create_scale_set("arc")
    async with world.controller():
        ars = await world.ready("arc")
    assert ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION] == str(existing)
    assert list(world.github_scale_sets()) == [existing]
    assert "ScaleSetAdopted" in [reason for reason, _ in await world.events("arc")]


SCALE_SET_COUNTS = RETIRED_COUNTS


async def test_runner_counts_stay_on_the_runner_set_and_arcs_copies_are_removed(
    world: World,
) -> None:
    """The counts are the EphemeralRunnerSet's (L0); the scale set's status does not copy them
    (two writes per job) and removes those ARC 0.14 left there, so its columns never show a
    number nobody updates."""
    await world.create_scale_set("arc")
    await world.client.patch_merge(
        AUTOSCALING_RUNNER_SET,
        world.key("arc"),
        {"status": {key: 2 for key in SCALE_SET_COUNTS}},
        status=True,
    )
    async with world.controller():
        await world.ready("arc")
        counts = {
            "currentReplicas": 3,
            "pendingEphemeralRunners": 2,
            "runningEphemeralRunners": 1,
            "startingEphemeralRunners": 1,
            "idleEphemeralRunners": 1,
            "busyEphemeralRunners": 1,
        }
        await world.set_runner_set_status("arc", counts)
        # a change the scale set does show comes after the counts: its write would carry them
        await world.set_runner_set_status("arc", {**counts, "phase": "Outdated"})
        await world.scale_set_where("arc", lambda s: s.status.phase == "Outdated", "Outdated")
        ars = await world.get(AUTOSCALING_RUNNER_SET, "arc")
    assert ars is not None
    assert not set(ars.raw["status"]) & set(SCALE_SET_COUNTS), ars.raw["status"]


async def test_an_outdated_runner_set_makes_the_scale_set_outdated_and_nothing_is_deleted(
    world: World,
) -> None:
    await world.create_scale_set("arc")
    async with world.controller():
        await world.ready("arc")
        ers = await world.runner_set("arc")
        listener = await world.listener("arc")
        await world.set_runner_set_status("arc", {"phase": "Outdated"})
        await world.scale_set_where("arc", lambda s: s.status.phase == "Outdated", "Outdated")
        after = await world.runner_set("arc")
        after_listener = await world.listener("arc")
    assert ers is not None
    assert after is not None
    assert listener is not None
    assert after_listener is not None
    assert (after.uid, after_listener.uid) == (ers.uid, listener.uid)
    assert "RunnerOutdated" in [reason for reason, _ in await world.events("arc")]


async def test_arcs_version_label_gate_never_deletes_a_scale_set(world: World) -> None:
    await world.create_scale_set("arc", labels={keys.VERSION_LABEL: "0.2.0"})
    async with world.controller():
        ars = await world.ready("arc")
    assert ars.metadata.deletion_timestamp is None
