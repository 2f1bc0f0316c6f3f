"""L8: bad input gets a clear answer, never a crash loop. An invalid scale set, a missing or
malformed GitHub Secret, an unknown runner group and GitHub's 401/403/404 each end in a
condition and an Event naming the problem, the scale set is retried with back-off (and recovers
once fixed), and the other scale sets are served meanwhile."""

from __future__ import annotations

from tests.integration.controllers.autoscalingrunnerset.world import PAT, World
from tests.plugins.secret_guard import register_secret

from scaleset.api import AutoscalingRunnerSet, keys

OTHER_PAT = "ghp_autoscalingRunnerSetOtherScope0123456"
UNKNOWN_PAT = "ghp_autoscalingRunnerSetUnknownPat01234567"


def condition(scale_set: AutoscalingRunnerSet, kind: str) -> tuple[str, str, str] | None:
    for found in scale_set.status.conditions:
        if found.type == kind:
            return (found.status, found.reason, found.message)
    return None


async def reported(world: World, name: str, kind: str, reason: str) -> AutoscalingRunnerSet:
    def holds(current: AutoscalingRunnerSet) -> bool:
        cond = condition(current, kind)
        return cond is not None and cond[1] == reason

    return await world.scale_set_where(name, holds, f"{kind} {reason} on {name}")


async def test_L8_an_invalid_scale_set_is_reported_and_the_others_are_served(
    world: World,
) -> None:
    await world.create_scale_set("bad-minmax", minRunners=5, maxRunners=2)
    await world.create_scale_set("x" * 46)
    await world.create_scale_set("bad-url", githubConfigUrl="https://github.com/a/b/c/d")
    await world.create_scale_set("good")
    async with world.controller():
        await world.ready("good")
        minmax = await reported(world, "bad-minmax", "Valid", "InvalidSpec")
        long_name = await reported(world, "x" * 46, "Valid", "InvalidSpec")
        bad_url = await reported(world, "bad-url", "Valid", "InvalidSpec")
    for scale_set, field in (
        (minmax, "spec.minRunners"),
        (long_name, "metadata.name"),
        (bad_url, "spec.githubConfigUrl"),
    ):
        cond = condition(scale_set, "Valid")
        assert cond is not None
        assert cond[0] == "False"
        assert field in cond[2]
        assert keys.RUNNER_SCALE_SET_ID_ANNOTATION not in scale_set.metadata.annotations
        events = await world.events(scale_set.metadata.name)
        assert [reason for reason, _ in events] == ["InvalidSpec"]
        assert field in events[0][1]
    assert [s[0] for s in world.github_scale_sets().values()] == ["good"]
    assert [rs.name for rs in await world.runner_sets()] == ["good"]


async def test_L8_a_missing_secret_is_reported_and_picked_up_once_it_exists(
    world: World,
) -> None:
    await world.create_scale_set("arc", githubConfigSecret="later")
    await world.create_scale_set("good")
    async with world.controller():
        await world.ready("good")
        ars = await reported(world, "arc", "ScaleSetRegistered", "GitHubSecretMissing")
        cond = condition(ars, "ScaleSetRegistered")
        assert cond is not None
        assert "spec.githubConfigSecret" in cond[2]
        assert "later" in cond[2]
        await world.put_secret("later", {"github_token": PAT})
        await world.ready("arc")
    reasons = [reason for reason, _ in await world.events("arc")]
    assert reasons.count("GitHubSecretMissing") == 1
    assert "Registered" in reasons, "the recovery is an Event too"


async def test_L8_a_malformed_secret_names_what_is_missing(world: World) -> None:
    await world.put_secret("half-app", {"github_app_id": "12"})
    await world.create_scale_set("arc", githubConfigSecret="half-app")
    async with world.controller():
        ars = await reported(world, "arc", "ScaleSetRegistered", "InvalidGitHubSecret")
    cond = condition(ars, "ScaleSetRegistered")
    assert cond is not None
    assert "github_app_installation_id" in cond[2]
    assert "github_app_private_key" in cond[2]


async def test_L8_an_unknown_runner_group_is_reported_until_it_exists(world: World) -> None:
    await world.create_scale_set("arc", runnerGroup="builders")
    async with world.controller():
        ars = await reported(world, "arc", "ScaleSetRegistered", "RunnerGroupNotFound")
        cond = condition(ars, "ScaleSetRegistered")
        assert cond is not None
        assert "spec.runnerGroup" in cond[2]
        assert "builders" in cond[2]
        group_id = world.fake.control.add_runner_group(world.url, "builders")
        ars = await world.ready("arc", runner_group="builders")
    scale_set_id = int(ars.metadata.annotations[keys.RUNNER_SCALE_SET_ID_ANNOTATION])
    assert world.github_scale_sets()[scale_set_id][2] == group_id


async def test_L8_github_401_is_reported_without_the_token(world: World) -> None:
    await world.put_secret("wrong", {"github_token": register_secret(UNKNOWN_PAT)})
    await world.create_scale_set("arc", githubConfigSecret="wrong")
    await world.create_scale_set("good")
    async with world.controller():
        await world.ready("good")
        ars = await reported(world, "arc", "ScaleSetRegistered", "GitHubUnauthorized")
    cond = condition(ars, "ScaleSetRegistered")
    assert cond is not None
    assert "wrong" in cond[2]
    assert UNKNOWN_PAT not in cond[2]
    events = await world.events("arc")
    assert [reason for reason, _ in events] == ["GitHubUnauthorized"]


async def test_L8_github_403_is_reported(world: World) -> None:
    world.fake.add_pat(register_secret(OTHER_PAT), scopes=["other-org"])
    await world.put_secret("scoped", {"github_token": OTHER_PAT})
    await world.create_scale_set("arc", githubConfigSecret="scoped")
    async with world.controller():
        ars = await reported(world, "arc", "ScaleSetRegistered", "GitHubForbidden")
    cond = condition(ars, "ScaleSetRegistered")
    assert cond is not None
    assert "403" in cond[2]


async def test_L8_github_404_is_reported_and_the_scale_set_recovers_after_it(
    world: World,
) -> None:
    rule = world.fake.control.faults.fail_next(
        None, 404, path_contains="registration-token", method="POST"
    )
    await world.create_scale_set("arc")
    async with world.controller():
        ars = await reported(world, "arc", "ScaleSetRegistered", "GitHubNotFound")
        cond = condition(ars, "ScaleSetRegistered")
        assert cond is not None
        assert "spec.githubConfigUrl" in cond[2]
        world.fake.control.faults.remove(rule)
        await world.ready("arc")
