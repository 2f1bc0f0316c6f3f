"""Admin endpoints against the fake: scale sets, runner groups, JIT, runners, REST runner list."""

from __future__ import annotations

import httpx2
import pytest
from pydantic import SecretStr
from tests.integration.github.harness import Harness
from tests.plugins.secret_guard import SecretRegistry

from scaleset.embedded.actions import decode_jit_config
from scaleset.github import (
    ActionsClient,
    GitHubApp,
    InvalidRequest,
    JobStillRunning,
    Label,
    RunnerExists,
    RunnerGroupNotFound,
    RunnerNotFound,
    RunnerScaleSet,
    RunnerSetting,
    ScaleSetNotFound,
)


async def new_scale_set(client: ActionsClient, name: str = "arc") -> RunnerScaleSet:
    return await client.create_runner_scale_set(
        RunnerScaleSet(
            name=name, runner_group_id=1, runner_setting=RunnerSetting(disable_update=True)
        )
    )


async def test_scale_set_lifecycle(harness: Harness) -> None:
    client = harness.client()
    created = await new_scale_set(client)
    assert created.id > 0
    assert created.name == "arc"
    assert created.labels == (Label(name="arc", type="System"),)
    assert created.runner_setting.disable_update

    assert await client.get_runner_scale_set(1, "arc") == created
    assert await client.get_runner_scale_set(1, "other") is None
    assert await client.get_runner_scale_set(2, "arc") is None
    by_id = await client.get_runner_scale_set_by_id(created.id)
    assert by_id is not None
    assert by_id.id == created.id
    assert by_id.statistics is not None

    renamed = await client.update_runner_scale_set(created.id, RunnerScaleSet(name="arc-2"))
    assert (renamed.id, renamed.name) == (created.id, "arc-2")
    patch = harness.fake.control.requests_to(f"runnerscalesets/{created.id}", "PATCH")[0]
    assert dict(patch.query) == {"api-version": "6.0-preview"}

    await client.delete_runner_scale_set(created.id)
    assert harness.requests(f"runnerscalesets/{created.id}", "DELETE") == [204]
    with pytest.raises(ScaleSetNotFound) as caught:
        await client.get_runner_scale_set_by_id(created.id)
    assert caught.value.status == 404
    assert caught.value.activity_id


async def test_caller_labels_are_kept_and_typed(harness: Harness) -> None:
    client = harness.client()
    created = await client.create_runner_scale_set(
        RunnerScaleSet(name="gpu", labels=(Label(name="gpu"), Label(name="linux", type="User")))
    )
    assert created.labels == (Label(name="gpu", type="System"), Label(name="linux", type="User"))


async def test_scale_set_without_name_or_labels_is_refused_before_sending(
    harness: Harness,
) -> None:
    client = harness.client()
    with pytest.raises(InvalidRequest, match="name or at least one label"):
        await client.create_runner_scale_set(RunnerScaleSet())
    assert harness.fake.control.requests == []


async def test_runner_groups(harness: Harness) -> None:
    client = harness.client()
    group_id = harness.fake.control.add_runner_group(harness.org_url, "gpu-group")
    group = await client.get_runner_group_by_name("gpu-group")
    assert (group.id, group.name) == (group_id, "gpu-group")
    lookup = harness.fake.control.requests_to("runnergroups")[0]
    assert lookup.path.endswith("/_apis/runtime/runnergroups/")
    assert dict(lookup.query)["groupName"] == "gpu-group"
    with pytest.raises(RunnerGroupNotFound, match="no runner group found with name 'nope'"):
        await client.get_runner_group_by_name("nope")


async def test_jit_config_runner_lookup_and_removal(
    harness: Harness, secret_guard: SecretRegistry
) -> None:
    client = harness.client()
    scale_set = await new_scale_set(client)
    jit = await client.generate_jit_runner_config(scale_set.id, "arc-runner-1", "/work")
    assert (jit.runner.name, jit.runner.runner_scale_set_id) == ("arc-runner-1", scale_set.id)
    decoded = decode_jit_config(jit.encoded_jit_config.get_secret_value())
    assert decoded.runner_id == jit.runner.id
    secret_guard.assert_clean(jit, jit.model_dump())

    with pytest.raises(RunnerExists) as exists:
        await client.generate_jit_runner_config(scale_set.id, "arc-runner-1")
    assert exists.value.status == 409
    assert exists.value.type_name is not None

    assert await client.get_runner(jit.runner.id) == jit.runner
    assert await client.get_runner_by_name("arc-runner-1") == jit.runner
    assert await client.get_runner_by_name("nobody") is None

    await client.remove_runner(jit.runner.id)
    with pytest.raises(RunnerNotFound) as missing:
        await client.get_runner(jit.runner.id)
    assert missing.value.status == 404
    with pytest.raises(RunnerNotFound):
        await client.remove_runner(jit.runner.id)


async def test_removing_a_busy_runner_is_job_still_running(harness: Harness) -> None:
    client = harness.client()
    scale_set = await new_scale_set(client)
    jit = await client.generate_jit_runner_config(scale_set.id, "arc-busy")
    harness.fake.control.queue_job(["arc"])
    runner_config = decode_jit_config(jit.encoded_jit_config.get_secret_value())
    # Act as the runner process: open its broker session and take the job.
    async with httpx2.AsyncClient(
        base_url=runner_config.broker_url,
        headers={"Authorization": f"Bearer {runner_config.credential}"},
    ) as runner:
        session = (await runner.post("session")).json()["sessionId"]
        taken = await runner.get("message", params={"sessionId": session})
        assert taken.status_code == 200
    with pytest.raises(JobStillRunning) as caught:
        await client.remove_runner(jit.runner.id)
    assert caught.value.status == 400
    truth = harness.fake.control.snapshot().runner(jit.runner.id)
    assert truth.registered
    assert truth.busy


async def test_rest_runner_list_pages_through_everything(harness: Harness) -> None:
    client = harness.client()
    scale_set = await new_scale_set(client)
    names = [f"arc-runner-{i}" for i in range(5)]
    for name in names:
        await client.generate_jit_runner_config(scale_set.id, name)
    runners = await client.list_runners(page_size=2)
    assert sorted(r.name for r in runners) == names
    assert all(any(label.name == "arc" for label in r.labels) for r in runners)
    pages = harness.fake.control.requests_to("/api/v3/orgs/acme/actions/runners", "GET")
    assert [dict(p.query)["page"] for p in pages] == ["1", "2", "3"]
    assert {dict(p.query)["per_page"] for p in pages} == {"2"}


async def test_rest_runner_list_is_empty_for_a_fresh_org(harness: Harness) -> None:
    assert await harness.client().list_runners() == ()


async def test_rest_runner_list_with_app_credentials_and_repo_scope(harness: Harness) -> None:
    app = harness.fake.add_github_app(app_id=9, installation_id=10)
    repo_url = harness.fake.config_url("acme", "app")
    client = harness.client(
        repo_url,
        credentials=GitHubApp(
            app_id="9", installation_id=10, private_key=SecretStr(app.private_key_pem)
        ),
    )
    scale_set = await new_scale_set(client, "repo-set")
    await client.generate_jit_runner_config(scale_set.id, "repo-runner")
    runners = await client.list_runners()
    assert [r.name for r in runners] == ["repo-runner"]
    assert harness.requests("/api/v3/repos/acme/app/actions/runners", "GET") == [200]
